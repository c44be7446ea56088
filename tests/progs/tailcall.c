/* Tail calls. At -O2 each of these functions ends in a jmp to the next traced
 * function instead of call+ret, so the callee finds the caller's return
 * address (or the tracer's trampoline) already on the stack:
 *   tc_outer  -> jmp tc_middle -> jmp tc_leaf       (a chain of two)
 *   tc_frame  -> tears down its own frame, then jmp tc_leaf
 *   tc_indirect -> jmp *fn                           (through a pointer)
 *   tc_label  an assembler function whose symbol has no size
 * The integration test checks with objdump that the jmps are really there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracee.h"

static unsigned long leaf_calls, middle_calls, outer_calls, frame_calls,
    indirect_calls, other_calls;

TRACED int tc_leaf(int x) {
  BUMP(leaf_calls);
  return x * 3 + 1;
}

/* Starts with a LOCK-prefixed, RIP-relative instruction at -O2. */
TRACED int tc_other(int x) {
  BUMP_ATOMIC(other_calls);
  return x - 7;
}

TRACED int tc_middle(int x) {
  BUMP(middle_calls);
  return tc_leaf(x + 1);
}

TRACED int tc_outer(int x) {
  BUMP(outer_calls);
  return tc_middle(x ^ 5);
}

/* Has a real stack frame (the array), so the tail call comes after the
 * epilogue restores the stack pointer. */
TRACED int tc_frame(int x) {
  BUMP(frame_calls);
  volatile int buf[32];
  for (int i = 0; i < 32; ++i) buf[i] = x + i;
  int s = 0;
  for (int i = 0; i < 32; ++i) s += buf[i];
  return tc_leaf(s);
}

TRACED int tc_indirect(int (*fn)(int), int x) {
  BUMP(indirect_calls);
  return fn(x);
}

/* An assembler function without a .size: its symbol has size 0, so nothing says
 * where it ends (with --returns=ret-sites its returns are caught at the return
 * address, not at its ret). */
unsigned long label_calls __attribute__((used));
int tc_label(int x);
__asm__(".text\n"
        ".globl tc_label\n"
        ".type tc_label, @function\n"
        "tc_label:\n"
        "  lock incq label_calls(%rip)\n"
        "  leal 2(%rdi), %eax\n"
        "  ret\n");

static int ref_leaf(int x) { return x * 3 + 1; }

int main(void) {
  long total = 0;
  for (int i = 0; i < 50; ++i) {
    int r = tc_outer(i);
    CHECK(r == ref_leaf((i ^ 5) + 1));
    total += r;
  }
  for (int i = 0; i < 20; ++i) {
    int r = tc_frame(i);
    CHECK(r == ref_leaf(32 * i + 31 * 32 / 2));
    total += r;
  }
  for (int i = 0; i < 30; ++i) {
    int (*fn)(int) = (i % 3 == 0) ? tc_other : (i % 3 == 1) ? tc_leaf : tc_middle;
    int r = tc_indirect(fn, i);
    int want = (i % 3 == 0) ? i - 7 : (i % 3 == 1) ? ref_leaf(i) : ref_leaf(i + 1);
    CHECK(r == want);
    total += r;
  }
  for (int i = 0; i < 25; ++i) {
    int r = tc_label(i);
    CHECK(r == i + 2);
    total += tc_leaf(r);
  }
  CHECK(outer_calls == 50);
  CHECK(middle_calls == 50 + 10);
  CHECK(leaf_calls == 50 + 20 + 10 + 10 + 25);
  CHECK(label_calls == 25);
  CHECK(frame_calls == 20);
  CHECK(indirect_calls == 30);
  CHECK(other_calls == 10);
  printf("total=%ld\n", total);
  printf("calls tc_outer=%lu tc_middle=%lu tc_leaf=%lu tc_frame=%lu tc_indirect=%lu tc_other=%lu tc_label=%lu\n",
         outer_calls, middle_calls, leaf_calls, frame_calls, indirect_calls, other_calls, label_calls);
  return 0;
}
