/* Plain recursion: fib(n) computed the naive way, and one deep chain
 * (rec_deep, 10000 frames on the stack at once).
 * fib is global (exported with -rdynamic in the stripped variant);
 * rec_hidden_helper is static, so a stripped binary has no symbol for it. */
#include <stdio.h>
#include <stdlib.h>

#include "tracee.h"

static unsigned long fib_calls;
static unsigned long helper_calls;
static unsigned long deep_calls;
static volatile long sink;

TRACED long fib(int n) {
  BUMP(fib_calls);
  if (n < 2) return n;
  long r = fib(n - 1) + fib(n - 2);
  sink = r; /* keeps both recursive calls real calls (no accumulator loop) */
  return r;
}

TRACED long rec_deep(int n) {
  BUMP(deep_calls);
  if (n == 0) return 0;
  long r = rec_deep(n - 1);
  sink = r;
  return r + 1;
}

TRACED static long rec_hidden_helper(long x) {
  BUMP(helper_calls);
  return x * 2 + 1;
}

/* Number of calls fib(n) makes, counting itself: c(n) = 1 + c(n-1) + c(n-2). */
static unsigned long expected_fib_calls(int n) {
  unsigned long a = 1, b = 1; /* c(0), c(1) */
  if (n < 2) return 1;
  for (int i = 2; i <= n; ++i) {
    unsigned long c = 1 + a + b;
    a = b;
    b = c;
  }
  return b;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 15;
  CHECK(n >= 0 && n <= 40);

  long f = fib(n);
  long a = 0, b = 1;
  for (int i = 0; i < n; ++i) {
    long t = a + b;
    a = b;
    b = t;
  }
  CHECK(f == a);
  CHECK(fib_calls == expected_fib_calls(n));

  long acc = 0;
  for (int i = 0; i < n; ++i) acc += rec_hidden_helper(i);
  CHECK(acc == (long)n * n); /* sum of 2i+1 for i < n */

  CHECK(rec_deep(10000) == 10000);
  CHECK(deep_calls == 10001);

  printf("fib(%d)=%ld\n", n, f);
  printf("calls fib=%lu rec_hidden_helper=%lu rec_deep=%lu\n", fib_calls, helper_calls,
         deep_calls);
  return 0;
}
