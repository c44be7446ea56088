/* Calls one function N times and reports how long the loop took.
 *
 *   bench_calls [N]     N defaults to 20000
 *
 * stdout: "sum=..." (the same in every run)
 * stderr: "bench_calls: n=N loop_ns=T" (time of the calling loop alone,
 *         CLOCK_MONOTONIC, so tracer start-up and shutdown are not in it)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__GNUC__) && !defined(__clang__)
#define TRACED __attribute__((noinline, noclone, noipa, used))
#else
#define TRACED __attribute__((noinline, used))
#endif

TRACED long bench_fn(long x) { return x * 3 + 1; }

int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 20000;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long sum = 0;
  for (long i = 0; i < n; ++i) sum += bench_fn(i);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  long long ns = (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
  printf("sum=%ld\n", sum);
  fprintf(stderr, "bench_calls: n=%ld loop_ns=%lld\n", n, ns);
  return sum == 3 * (n * (n - 1) / 2) + n ? 0 : 1;
}
