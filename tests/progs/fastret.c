/* Returns that functracer handles inside the traced process (doc/internals.md,
 * "Returns without a stop"): values in rax, rdx and xmm0, frames deeper than a
 * thread's record block, threads returning at once, and return times that must be
 * the time of the return, not of the next stop.
 *
 * usage: fastret [timing|values|deep|threads|all]   (default: all)
 * Prints the calls of each function and checks every result itself. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tracee.h"

static long n_timed, n_float, n_pair, n_deep, n_leaf;

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

TRACED long fr_timed(long ms) {
  BUMP(n_timed);
  sleep_ms(ms);
  return ms + 1000;
}

TRACED double fr_float(double x) {
  BUMP(n_float);
  return x * 1.5;
}

struct pair {
  long a, b;
};

TRACED struct pair fr_pair(long x) {
  BUMP(n_pair);
  struct pair p = {x * 7, x * 11};  /* returned in rax and rdx */
  return p;
}

TRACED long fr_deep(long n);
/* Called through a pointer the compiler cannot see through: a real recursion, not a loop. */
static long (*volatile deep_fn)(long) = fr_deep;

TRACED long fr_deep(long n) {
  BUMP(n_deep);
  if (n == 0) return 0;
  return deep_fn(n - 1) + 1;
}

#define THREADS 4
#define LEAF_CALLS 5000
static long leaf_counts[THREADS];

TRACED long fr_leaf(long x) { return x * 3 + 1; }

static void* worker(void* arg) {
  long id = (long)arg;
  for (long i = 0; i < LEAF_CALLS; ++i) {
    CHECK(fr_leaf(i + id) == (i + id) * 3 + 1);
    BUMP(leaf_counts[id]);
  }
  return NULL;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "all";
  int all = strcmp(mode, "all") == 0;
  if (all || strcmp(mode, "timing") == 0) {
    /* 50 ms in the function, then 400 ms without a traced call. */
    CHECK(fr_timed(50) == 1050);
    sleep_ms(400);
    CHECK(fr_timed(5) == 1005);
  }
  if (all || strcmp(mode, "values") == 0) {
    for (int i = 0; i < 100; ++i) {
      CHECK(fr_float(i + 0.25) == (i + 0.25) * 1.5);
      struct pair p = fr_pair(i);
      CHECK(p.a == i * 7 && p.b == i * 11);
    }
  }
  if (all || strcmp(mode, "deep") == 0) {
    for (int i = 0; i < 10; ++i) CHECK(fr_deep(150) == 150);
  }
  if (all || strcmp(mode, "threads") == 0) {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; ++i) CHECK(pthread_create(&t[i], NULL, worker, (void*)i) == 0);
    for (int i = 0; i < THREADS; ++i) CHECK(pthread_join(t[i], NULL) == 0);
    for (int i = 0; i < THREADS; ++i) n_leaf += leaf_counts[i];
    printf("per_thread fr_leaf=%d tids=%d\n", LEAF_CALLS, THREADS);
  }
  printf("calls fr_timed=%ld fr_float=%ld fr_pair=%ld fr_deep=%ld fr_leaf=%ld\n", n_timed, n_float, n_pair,
         n_deep, n_leaf);
  return 0;
}
