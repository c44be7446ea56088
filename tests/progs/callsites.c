/* Calls made from known source lines, for the call-site tests
 * (tests/integration/test_callsites.py). Every line that calls a traced function is
 * marked with a comment naming the site; the test finds the line numbers by
 * searching this file for the marks. Each site makes a different number of calls, so
 * that per-site counts tell the sites apart:
 *
 *   main_add3_loop   main -> add3    3 calls
 *   main_twice       main -> twice   1 call
 *   main_add3_once   main -> add3    1 call
 *   main_twice_loop  main -> twice   2 calls
 *   twice_add3       twice -> add3   3 calls (one per call of twice)
 *
 * No call is the last thing its function does, so none becomes a tail jump at -O2
 * (its return address would then be the caller's caller's).
 * One mark per line, at the line's end, and no line holds two calls. */
#include <stdio.h>
#include <stdlib.h>

#include "tracee.h"

static unsigned long add3_calls;
static unsigned long twice_calls;
static volatile int sink;

TRACED int add3(int a, int b, int c) {
  BUMP(add3_calls);
  return a + b + c;
}

TRACED int twice(int x) {
  BUMP(twice_calls);
  int r = add3(x, x, 0); /* CALLSITE:twice_add3 */
  sink = r;
  return r;
}

int main(void) {
  int s = 0;
  for (int i = 0; i < 3; ++i) {
    s += add3(i, 1, 2); /* CALLSITE:main_add3_loop */
    sink = s;
  }
  s += twice(5); /* CALLSITE:main_twice */
  sink = s;
  s += add3(7, 8, 9); /* CALLSITE:main_add3_once */
  sink = s;
  for (int i = 0; i < 2; ++i) {
    s += twice(i); /* CALLSITE:main_twice_loop */
    sink = s;
  }
  /* add3 loop: 3+4+5; twice(5): 10; add3(7,8,9): 24; twice(0)+twice(1): 0+2 */
  CHECK(s == 12 + 10 + 24 + 2);
  CHECK(add3_calls == 3 + 1 + 3);
  CHECK(twice_calls == 3);
  printf("sum %d\n", s);
  printf("calls add3=%lu twice=%lu\n", add3_calls, twice_calls);
  return 0;
}
