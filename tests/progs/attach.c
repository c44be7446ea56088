/* A target for attach mode (functracer -p PID). Three threads loop calling
 * at_level1 -> at_level2 -> at_work; at_level2 sleeps 2 ms between calling
 * at_work and returning, so whenever the tracer attaches or detaches, traced
 * frames are on every stack (with their return addresses possibly replaced).
 * Prints "ready" when the threads are running, checks every result, prints
 * "done ..." and exits 0. Run time is about ITERATIONS * 2 ms.
 *
 *   attach [ITERATIONS]     default 1500
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tracee.h"

static int iterations = 1500;
static volatile long sink;

TRACED long at_work(long x) { return x * 5 + 3; }

TRACED long at_level2(long x) {
  long r = at_work(x);
  struct timespec ts = {0, 2 * 1000 * 1000};
  nanosleep(&ts, NULL);
  sink = r;
  return r + 1;
}

TRACED long at_level1(long x) {
  long r = at_level2(x + 1);
  sink = r;
  return r + 1;
}

static void* loop(void* arg) {
  long base = (long)arg;
  long bad = 0;
  for (int i = 0; i < iterations; ++i) {
    long x = base + i;
    if (at_level1(x) != (x + 1) * 5 + 3 + 2) ++bad;
  }
  return (void*)bad;
}

int main(int argc, char** argv) {
  if (argc > 1) iterations = atoi(argv[1]);
  pthread_t t1, t2;
  CHECK(pthread_create(&t1, NULL, loop, (void*)1000000L) == 0);
  CHECK(pthread_create(&t2, NULL, loop, (void*)2000000L) == 0);
  printf("ready\n");
  fflush(stdout);
  long bad = (long)loop((void*)0);
  void* r1;
  void* r2;
  CHECK(pthread_join(t1, &r1) == 0);
  CHECK(pthread_join(t2, &r2) == 0);
  bad += (long)r1 + (long)r2;
  CHECK(bad == 0);
  printf("done iterations=%d threads=3\n", iterations);
  return 0;
}
