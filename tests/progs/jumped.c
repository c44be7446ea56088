/* Code reached by a jump, not a call. nc_entry is a function symbol, as assembly
 * routines and Go's _rt0_amd64 are, that nc_caller jumps to with a data word at
 * [sp] where a call would have put a return address: the address of nc_data, a
 * readable word that no call instruction precedes. A tracer that took it for a
 * return address and replaced it would hand nc_entry's pop something else, and
 * nc_caller's result would be wrong. nc_entry is reported as called and at once
 * unwound ("jump"): it has no return of its own (its ret is nc_caller's). */
#include <stdio.h>
#include <stdlib.h>

#include "tracee.h"

char nc_data[64];
void* nc_caller(void);

#if defined(__x86_64__)
__asm__(
    ".text\n"
    ".globl nc_caller\n"
    ".type nc_caller, @function\n"
    "nc_caller:\n"
    "  lea nc_data+32(%rip), %rax\n"
    "  push %rax\n"
    "  jmp nc_entry\n"
    ".size nc_caller, .-nc_caller\n"
    ".globl nc_entry\n"
    ".type nc_entry, @function\n"
    "nc_entry:\n"
    "  pop %rax\n"
    "  ret\n"
    ".size nc_entry, .-nc_entry\n");
#define JUMPS 1
#else
void* nc_caller(void) { return nc_data + 32; }
#define JUMPS 0
#endif

int main(void) {
  const int n = 5;
  for (int i = 0; i < n; ++i) CHECK(nc_caller() == nc_data + 32);
  printf("nc_caller returned its data word %d times\n", n);
  if (JUMPS) {
    printf("calls nc_caller=%d nc_entry=%d\n", n, n);
    printf("unwound jump nc_entry=%d\n", n);
  } else {
    printf("calls nc_caller=%d\n", n);
  }
  return 0;
}
