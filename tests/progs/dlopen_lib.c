/* The library dlopen.c loads at run time. */
#include "tracee.h"

static unsigned long calls;

TRACED long dll_inner(long x) {
  BUMP(calls);
  return 2 * x;
}

TRACED long dll_outer(long x) {
  BUMP(calls);
  long r = dll_inner(x);
  return r + 1;
}

TRACED unsigned long dll_calls(void) { return calls; }
