/* N malloc/free pairs, a few call levels down a deep stack, and how long they
 * took.
 *
 *   bench_alloc [N]     N defaults to 20000
 *
 * main -> bench_nest (12 levels) -> bench_loop -> bench_outer -> bench_inner,
 * which mallocs and returns the block; bench_outer frees it. So a backtrace
 * from malloc is 16 frames of the program before libc's start-up frames: a
 * depth of 8 cuts it, 16 takes it almost whole.
 *
 * stdout: "blocks=N bytes=B check=C" (the same in every run)
 * stderr: "bench_alloc: n=N loop_ns=T" (time of the allocating loop alone,
 *         CLOCK_MONOTONIC, so tracer start-up and shutdown are not in it)
 *
 * stdout has a static buffer, so that the only heap blocks are the loop's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__GNUC__) && !defined(__clang__)
#define TRACED __attribute__((noinline, noclone, noipa, used))
#else
#define TRACED __attribute__((noinline, used))
#endif

static char stdout_buf[4096];
static unsigned long total_bytes;
static volatile int nest_sink;

TRACED unsigned char* bench_inner(size_t n) {
  unsigned char* p = malloc(n);
  if (!p) abort();
  p[0] = (unsigned char)n;
  p[n - 1] = 1;
  return p;
}

TRACED unsigned long bench_outer(long i) {
  size_t n = 16 + (size_t)(i % 64) * 8;
  unsigned char* p = bench_inner(n);
  unsigned long v = p[0] + p[n - 1];
  free(p);
  total_bytes += n;
  return v;
}

TRACED unsigned long bench_loop(long n) {
  unsigned long check = 0;
  for (long i = 0; i < n; ++i) check += bench_outer(i);
  return check;
}

TRACED unsigned long bench_nest(int level, long n) {
  if (level == 0) return bench_loop(n);
  unsigned long r = bench_nest(level - 1, n);
  nest_sink = level; /* after the call: not a tail call */
  return r;
}

int main(int argc, char** argv) {
  setvbuf(stdout, stdout_buf, _IOFBF, sizeof stdout_buf);
  long n = argc > 1 ? atol(argv[1]) : 20000;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  unsigned long check = bench_nest(12, n);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  long long ns = (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
  printf("blocks=%ld bytes=%lu check=%lu\n", n, total_bytes, check);
  fprintf(stderr, "bench_alloc: n=%ld loop_ns=%lld\n", n, ns);
  return 0;
}
