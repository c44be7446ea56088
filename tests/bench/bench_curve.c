/* The program of cost_curve.py: how the cost of one traced event moves with the
 * number of threads, of breakpoints, and with the depth of the stack.
 *
 *   bench_curve calls N T      T threads (1..64) call curve_hot N/T times each
 *   bench_curve alloc N D      N malloc/free pairs, D calls deep (recursion in
 *                              curve_deep), so a backtrace has D + 3 frames of
 *                              the program above malloc
 *   bench_curve busy S T       T threads call curve_hot for S seconds (a busy
 *                              service to attach to); prints "ready" first
 *   bench_curve busyalloc S T [W]
 *                              the same with a malloc/free pair in place of
 *                              each call of curve_hot, and W rounds of work on
 *                              the block between the two (default 0: a program
 *                              that does nothing but allocate)
 *
 * cost_curve.py compiles this file with a generated bench_curve_fns.h on the
 * include path, holding CURVE_FN(00000, 0) .. CURVE_FN(09999, 9999): the
 * functions curve_fn_00000 .. curve_fn_09999, never called, there to carry
 * breakpoints (functracer -a 'curve_fn_0*' plants 10000 of them, 'curve_fn_00*'
 * 1000, and so on).
 *
 * stdout: "calls=N sum=S" or "blocks=N check=C" (the same in every run)
 * stderr: "bench_curve: n=N loop_ns=T" (the calling or allocating loop alone,
 *         CLOCK_MONOTONIC, from the start of the first thread to the end of the last)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__GNUC__) && !defined(__clang__)
#define TRACED __attribute__((noinline, noclone, noipa, used))
#else
#define TRACED __attribute__((noinline, used))
#endif

/* The idle functions, each distinct, none called. */
#define CURVE_FN(tag, i) TRACED long curve_fn_##tag(long x) { return x * (i + 3) + 1; }
#include "bench_curve_fns.h"

static char stdout_buf[4096];

TRACED long curve_hot(long x) { return x * 3 + 1; }

struct worker {
  pthread_t thread;
  long calls;
  long sum;
  long long deadline_ns; /* busy: run until then */
  long work;             /* busyalloc: rounds of work per block */
};

static long long now_ns(void);

static void* worker_main(void* arg) {
  struct worker* w = arg;
  long sum = 0;
  for (long i = 0; i < w->calls; ++i) sum += curve_hot(i);
  w->sum = sum;
  return NULL;
}

static void* busy_main(void* arg) {
  struct worker* w = arg;
  long sum = 0, i = 0, want = 0;
  while (now_ns() < w->deadline_ns) {
    for (int k = 0; k < 64; ++k, ++i) {
      sum += curve_hot(i);
      want += 3 * i + 1;
    }
  }
  w->calls = i;
  w->sum = sum == want ? sum : -1;
  return NULL;
}

/* What busyalloc computes on a block: `rounds` steps of an FNV-style hash over its
 * bytes, as a program works on what it allocated. */
static unsigned long work_on(const unsigned char* p, size_t n, long rounds) {
  unsigned long h = 1469598103934665603UL;
  for (long r = 0; r < rounds; ++r) h = (h ^ p[(size_t)r % n]) * 1099511628211UL;
  return h;
}

static volatile unsigned long work_sink;

/* busyalloc: the same loop around a malloc/free pair, so that each "call" is two
 * heap events, with w->work rounds of work on the block in between. */
static void* busy_alloc_main(void* arg) {
  struct worker* w = arg;
  long sum = 0, i = 0, want = 0;
  unsigned long mix = 0;
  while (now_ns() < w->deadline_ns) {
    for (int k = 0; k < 64; ++k, ++i) {
      size_t n = (size_t)(16 + (i & 63));
      unsigned char* p = malloc(n);
      if (!p) abort();
      p[0] = (unsigned char)i;
      if (w->work) {
        memset(p + 1, (int)(i >> 8), n - 1);
        mix ^= work_on(p, n, w->work);
      }
      sum += p[0];
      want += (unsigned char)i;
      free(p);
    }
  }
  work_sink = mix;
  w->calls = i;
  w->sum = sum == want ? sum : -1;
  return NULL;
}

static int run_busy(double seconds, int threads, long work, void* (*body)(void*)) {
  struct worker* w = calloc((size_t)threads, sizeof *w);
  if (!w) return 2;
  long long t0 = now_ns();
  printf("ready\n");
  fflush(stdout);
  for (int i = 0; i < threads; ++i) {
    w[i].deadline_ns = t0 + (long long)(seconds * 1e9);
    w[i].work = work;
    if (pthread_create(&w[i].thread, NULL, body, &w[i]) != 0) return 2;
  }
  long calls = 0;
  int ok = 1;
  for (int i = 0; i < threads; ++i) {
    pthread_join(w[i].thread, NULL);
    calls += w[i].calls;
    if (w[i].sum < 0) ok = 0;
  }
  long long ns = now_ns() - t0;
  printf("busy calls=%ld ok=%d\n", calls, ok);
  fprintf(stderr, "bench_curve: n=%ld loop_ns=%lld\n", calls, ns);
  free(w);
  return ok ? 0 : 1;
}

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int run_calls(long n, int threads) {
  struct worker* w = calloc((size_t)threads, sizeof *w);
  if (!w) return 2;
  long long t0 = now_ns();
  for (int i = 0; i < threads; ++i) {
    w[i].calls = n / threads + (i < n % threads ? 1 : 0);
    if (pthread_create(&w[i].thread, NULL, worker_main, &w[i]) != 0) return 2;
  }
  long sum = 0, want = 0;
  for (int i = 0; i < threads; ++i) {
    pthread_join(w[i].thread, NULL);
    sum += w[i].sum;
    want += 3 * (w[i].calls * (w[i].calls - 1) / 2) + w[i].calls;
  }
  long long ns = now_ns() - t0;
  printf("calls=%ld sum=%ld\n", n, sum);
  fprintf(stderr, "bench_curve: n=%ld loop_ns=%lld\n", n, ns);
  free(w);
  return sum == want ? 0 : 1;
}

static unsigned long alloc_check;

TRACED void curve_leaf(long i) {
  char* p = malloc((size_t)(16 + (i & 63)));
  if (!p) abort();
  p[0] = (char)i;
  alloc_check += (unsigned char)p[0];
  free(p);
}

TRACED void curve_deep(int depth, long i) {
  if (depth > 0) curve_deep(depth - 1, i);
  else curve_leaf(i);
  __asm__ volatile("" ::: "memory"); /* not a tail call: every level keeps its frame */
}

static int run_alloc(long n, int depth) {
  long long t0 = now_ns();
  for (long i = 0; i < n; ++i) curve_deep(depth, i);
  long long ns = now_ns() - t0;
  unsigned long want = 0;
  for (long i = 0; i < n; ++i) want += (unsigned char)(char)i;
  printf("blocks=%ld check=%lu\n", n, alloc_check);
  fprintf(stderr, "bench_curve: n=%ld loop_ns=%lld\n", n, ns);
  return alloc_check == want ? 0 : 1;
}

int main(int argc, char** argv) {
  setvbuf(stdout, stdout_buf, _IOFBF, sizeof stdout_buf);
  if (argc == 4 && strcmp(argv[1], "calls") == 0) {
    int t = atoi(argv[3]);
    if (t < 1 || t > 64) return 2;
    return run_calls(atol(argv[2]), t);
  }
  if (argc == 4 && strcmp(argv[1], "alloc") == 0) return run_alloc(atol(argv[2]), atoi(argv[3]));
  if (argc == 4 && strcmp(argv[1], "busy") == 0) {
    int t = atoi(argv[3]);
    if (t < 1 || t > 64) return 2;
    return run_busy(atof(argv[2]), t, 0, busy_main);
  }
  if ((argc == 4 || argc == 5) && strcmp(argv[1], "busyalloc") == 0) {
    int t = atoi(argv[3]);
    long work = argc == 5 ? atol(argv[4]) : 0;
    if (t < 1 || t > 64 || work < 0) return 2;
    return run_busy(atof(argv[2]), t, work, busy_alloc_main);
  }
  fprintf(stderr, "usage: bench_curve calls N THREADS | alloc N DEPTH | busy SECONDS THREADS"
                  " | busyalloc SECONDS THREADS [WORK]\n");
  return 2;
}
