/* A function that moves its own return address, as code that drops its caller's
 * arguments does (V8's builtins, callee-pops conventions): mr_drop pops the return
 * address, removes the two argument words its caller pushed, pushes the return
 * address back two words higher and returns from there. Traced, its hijacked return
 * address reaches the trampoline through a slot no frame hijacked.
 *
 * mr_outer calls mr_drop N times (through an assembly caller that pushes the two
 * words) and mr_leaf after each, to see that tracing carries on. x86-64 only
 * elsewhere it prints zero calls. */
#include <stdio.h>
#include <stdlib.h>

#include "tracee.h"

static unsigned long n_outer, n_leaf;
__attribute__((visibility("hidden"), used)) unsigned long n_drop; /* counted by mr_drop */

#if defined(__x86_64__)
/* long mr_drop(long a): returns a + the two argument words (7 + 11); pops them. */
__asm__(".text\n"
        ".globl mr_drop\n"
        ".type mr_drop,@function\n"
        "mr_drop:\n"
        "  incq n_drop(%rip)\n"
        "  movq 8(%rsp), %rax\n"
        "  addq 16(%rsp), %rax\n"
        "  addq %rdi, %rax\n"
        "  popq %rcx\n"
        "  addq $16, %rsp\n"
        "  pushq %rcx\n"
        "  ret\n"
        ".size mr_drop, .-mr_drop\n"
        /* long mr_call_drop(long a): pushes 11 and 7, calls mr_drop. */
        ".globl mr_call_drop\n"
        ".type mr_call_drop,@function\n"
        "mr_call_drop:\n"
        "  pushq %rbp\n"
        "  movq %rsp, %rbp\n"
        "  pushq $11\n"
        "  pushq $7\n"
        "  call mr_drop\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size mr_call_drop, .-mr_call_drop\n");
long mr_call_drop(long a);
#endif

TRACED long mr_leaf(long x) {
  BUMP(n_leaf);
  return x + 1;
}

TRACED long mr_outer(long i) {
  BUMP(n_outer);
#if defined(__x86_64__)
  long v = mr_call_drop(i);
  CHECK(v == i + 18);
#else
  long v = i + 18;
#endif
  return mr_leaf(v);
}

int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 200;
  long sum = 0;
  for (long i = 0; i < n; i++) sum += mr_outer(i);
  printf("sum %ld\n", sum);
  printf("calls mr_outer=%lu mr_leaf=%lu mr_drop=%lu\n", n_outer, n_leaf, n_drop);
  return 0;
}
