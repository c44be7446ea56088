/* A load for the tracer: sixteen threads calling traced functions and using the
 * heap for a given wall-clock time.
 *
 *   load [-n ITERATIONS] [-i] [SECONDS]   (default 60)
 *
 *   -n ITERATIONS   each thread stops after ITERATIONS iterations if SECONDS have
 *                   not passed before: a bounded run, whose trace does not grow
 *                   with the tracer's speed
 *   -i              the threads stop as soon as the standard input ends (or
 *                   SECONDS have passed): the caller says when it has seen enough
 *
 * Each thread runs ld_worker, which waits until all sixteen have started (so that
 * the iterations they made by a moment compare) and then loops until SECONDS have
 * passed calling ld_outer -> ld_mid -> ld_leaf (three call depths under ld_worker, arguments and
 * return values checked at every level); ld_mid also allocates: every iteration
 * one malloc, one calloc, one realloc of the malloc'ed block and two frees, the
 * blocks filled and checked. Before it returns, ld_worker calls ld_keep, which
 * leaves three blocks allocated (one from each of malloc, calloc, realloc) that the
 * program never frees: the leak manifest.
 *
 * Everything the heap sees from the worker threads inside ld_worker is done by
 * these calls: no free(NULL), no realloc(NULL, n), no realloc(p, 0), no printing.
 * The main thread only creates, joins and prints (and with -i reads its input).
 *
 * Output (stdout), after the joins:
 *   thread I tid=TID iterations=N ld_worker=1 ld_outer=N ld_mid=N ld_leaf=N ld_keep=1
 *          malloc=N calloc=N realloc=N free=N          one line per thread (one line)
 *   calls ld_worker=16 ld_outer=N ld_mid=N ld_leaf=N ld_keep=16     totals (tracee.h)
 *   leak function=F size=S blocks=1          one line per block left allocated
 *   leaks blocks=N bytes=N                   their total
 *   check ok threads=16                      every result was right
 * Exit status 0; a failed check prints it on stderr and exits 1.
 */

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tracee.h"

#define THREADS 16
#define LEAF_CALLS 3 /* ld_leaf calls per ld_mid */

struct counts {
  long iterations, worker, outer, mid, leaf, keep;
  long mallocs, callocs, reallocs, frees;
  long bad;
  pid_t tid;
  void* kept[3];
};

static struct counts counts[THREADS];
static struct timespec deadline;
static long max_iterations; /* -n; 0: no bound */
static atomic_int input_ended; /* -i: set by the main thread at end of input */
static pthread_barrier_t start_line; /* the threads start their loops together */

static long long ns_to_deadline(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (long long)(deadline.tv_sec - now.tv_sec) * 1000000000LL + (deadline.tv_nsec - now.tv_nsec);
}

static int past_deadline(void) { return ns_to_deadline() <= 0; }

static int should_stop(const struct counts* c) {
  return (max_iterations > 0 && c->iterations >= max_iterations) ||
         atomic_load_explicit(&input_ended, memory_order_relaxed) || past_deadline();
}

/* -i: reads the standard input until it ends or SECONDS have passed. */
static void wait_for_end_of_input(void) {
  char buf[256];
  for (;;) {
    long long left = ns_to_deadline();
    if (left <= 0) break;
    struct pollfd pfd = {.fd = 0, .events = POLLIN};
    int r = poll(&pfd, 1, left > 1000000000LL ? 1000 : (int)(left / 1000000) + 1);
    if (r <= 0) continue; /* a timeout (the deadline is looked at again) or EINTR */
    if (read(0, buf, sizeof buf) <= 0) break;
  }
  atomic_store(&input_ended, 1);
}

TRACED long ld_leaf(long a, long b) { return a * 3 + b; }

/* Calls ld_leaf LEAF_CALLS times and exercises the heap; returns the sum of the
 * leaves plus the number of bytes checked. */
TRACED long ld_mid(struct counts* c, long x) {
  c->mid++;
  long sum = 0;
  for (long i = 0; i < LEAF_CALLS; ++i) {
    long r = ld_leaf(x, i);
    c->leaf++;
    if (r != x * 3 + i) c->bad++;
    sum += r;
  }
  size_t n = 8 + (size_t)(x % 120);
  unsigned char* p = malloc(n);
  c->mallocs++;
  CHECK(p != NULL);
  for (size_t i = 0; i < n; ++i) p[i] = (unsigned char)(x + i);
  size_t m = 1 + (size_t)(x % 7);
  long* q = calloc(m, sizeof *q);
  c->callocs++;
  CHECK(q != NULL);
  for (size_t i = 0; i < m; ++i)
    if (q[i] != 0) c->bad++;
  size_t n2 = n * 2 + 16;
  unsigned char* p2 = realloc(p, n2);
  c->reallocs++;
  CHECK(p2 != NULL);
  for (size_t i = 0; i < n; ++i)
    if (p2[i] != (unsigned char)(x + i)) c->bad++;
  free(q);
  c->frees++;
  free(p2);
  c->frees++;
  return sum + (long)n;
}

TRACED long ld_outer(struct counts* c, long x) {
  c->outer++;
  long r = ld_mid(c, x + 1);
  long y = x + 1;
  long want = (y * 3) * LEAF_CALLS + (LEAF_CALLS * (LEAF_CALLS - 1)) / 2 + 8 + y % 120;
  if (r != want) c->bad++;
  return r + 1;
}

/* The blocks this thread leaves allocated: sizes depend on the thread's index. */
static size_t keep_size(int index, int which) { return (size_t)(100 * (which + 1) + index); }

TRACED int ld_keep(struct counts* c, int index) {
  c->keep++;
  c->kept[0] = malloc(keep_size(index, 0));
  c->mallocs++;
  c->kept[1] = calloc(1, keep_size(index, 1));
  c->callocs++;
  void* r = malloc(16);
  c->mallocs++;
  CHECK(r != NULL);
  c->kept[2] = realloc(r, keep_size(index, 2));
  c->reallocs++;
  for (int i = 0; i < 3; ++i) CHECK(c->kept[i] != NULL);
  memset(c->kept[0], index, keep_size(index, 0));
  memset(c->kept[2], index, keep_size(index, 2));
  return 3;
}

TRACED void* ld_worker(void* arg) {
  int index = (int)(intptr_t)arg;
  struct counts* c = &counts[index];
  c->worker++;
  c->tid = (pid_t)syscall(SYS_gettid);
  long x = (long)index * 1000003L;
  int w = pthread_barrier_wait(&start_line);
  CHECK(w == 0 || w == PTHREAD_BARRIER_SERIAL_THREAD);
  do {
    long r = ld_outer(c, x);
    c->iterations++;
    long y = x + 1;
    long want = (y * 3) * LEAF_CALLS + (LEAF_CALLS * (LEAF_CALLS - 1)) / 2 + 8 + y % 120 + 1;
    if (r != want) c->bad++;
    ++x;
  } while (!should_stop(c));
  if (ld_keep(c, index) != 3) c->bad++;
  return c;
}

int main(int argc, char** argv) {
  int until_eof = 0;
  int opt;
  while ((opt = getopt(argc, argv, "n:i")) != -1) {
    if (opt == 'n') {
      max_iterations = atol(optarg);
      CHECK(max_iterations > 0);
    } else if (opt == 'i') {
      until_eof = 1;
    } else {
      fprintf(stderr, "usage: load [-n ITERATIONS] [-i] [SECONDS]\n");
      return 2;
    }
  }
  int seconds = optind < argc ? atoi(argv[optind]) : 60;
  CHECK(seconds > 0);
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += seconds;
  CHECK(pthread_barrier_init(&start_line, NULL, THREADS) == 0);
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; ++i) CHECK(pthread_create(&t[i], NULL, ld_worker, (void*)(intptr_t)i) == 0);
  if (until_eof) wait_for_end_of_input();
  for (int i = 0; i < THREADS; ++i) {
    void* r;
    CHECK(pthread_join(t[i], &r) == 0);
    CHECK(r == &counts[i]);
  }
  long total[5] = {0};
  long bad = 0;
  for (int i = 0; i < THREADS; ++i) {
    struct counts* c = &counts[i];
    CHECK(c->iterations > 0);
    CHECK(c->worker == 1 && c->keep == 1);
    CHECK(c->outer == c->iterations && c->mid == c->iterations && c->leaf == LEAF_CALLS * c->iterations);
    CHECK(c->mallocs == c->iterations + 2 && c->callocs == c->iterations + 1 && c->reallocs == c->iterations + 1);
    CHECK(c->frees == 2 * c->iterations);
    printf("thread %d tid=%d iterations=%ld ld_worker=%ld ld_outer=%ld ld_mid=%ld ld_leaf=%ld ld_keep=%ld "
           "malloc=%ld calloc=%ld realloc=%ld free=%ld\n",
           i, (int)c->tid, c->iterations, c->worker, c->outer, c->mid, c->leaf, c->keep, c->mallocs, c->callocs,
           c->reallocs, c->frees);
    total[0] += c->worker;
    total[1] += c->outer;
    total[2] += c->mid;
    total[3] += c->leaf;
    total[4] += c->keep;
    bad += c->bad;
  }
  CHECK(bad == 0);
  printf("calls ld_worker=%ld ld_outer=%ld ld_mid=%ld ld_leaf=%ld ld_keep=%ld\n", total[0], total[1], total[2],
         total[3], total[4]);
  static const char* const fn[3] = {"malloc", "calloc", "realloc"};
  long blocks = 0, bytes = 0;
  for (int i = 0; i < THREADS; ++i)
    for (int w = 0; w < 3; ++w) {
      printf("leak function=%s size=%zu blocks=1\n", fn[w], keep_size(i, w));
      ++blocks;
      bytes += (long)keep_size(i, w);
    }
  printf("leaks blocks=%ld bytes=%ld\n", blocks, bytes);
  printf("check ok threads=%d\n", THREADS);
  return 0;
}
