/* Eight threads run at the same time, each calling th_work a known number of
 * times. A barrier makes them start together so breakpoints are hit
 * concurrently. Each thread counts in its own job record. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "tracee.h"

#define NTHREADS 8
#define CALLS_PER_THREAD 500

static pthread_barrier_t start_barrier;

struct job {
  int index;
  long result;
  unsigned long worker_calls;
  unsigned long work_calls;
};

TRACED long th_work(struct job* job, int i) {
  BUMP(job->work_calls);
  return (long)job->index * 1000 + i;
}

TRACED void* th_worker(void* arg) {
  struct job* job = arg;
  BUMP(job->worker_calls);
  pthread_barrier_wait(&start_barrier);
  long sum = 0;
  for (int i = 0; i < CALLS_PER_THREAD; ++i) sum += th_work(job, i);
  job->result = sum;
  return job;
}

int main(void) {
  pthread_t tids[NTHREADS];
  struct job jobs[NTHREADS];
  CHECK(pthread_barrier_init(&start_barrier, NULL, NTHREADS) == 0);
  for (int t = 0; t < NTHREADS; ++t) {
    jobs[t].index = t;
    jobs[t].result = -1;
    jobs[t].worker_calls = jobs[t].work_calls = 0;
    CHECK(pthread_create(&tids[t], NULL, th_worker, &jobs[t]) == 0);
  }
  long total = 0;
  unsigned long worker_calls = 0, work_calls = 0;
  for (int t = 0; t < NTHREADS; ++t) {
    void* ret = NULL;
    CHECK(pthread_join(tids[t], &ret) == 0);
    CHECK(ret == &jobs[t]);
    long want = (long)t * 1000 * CALLS_PER_THREAD +
                (long)CALLS_PER_THREAD * (CALLS_PER_THREAD - 1) / 2;
    CHECK(jobs[t].result == want);
    CHECK(jobs[t].work_calls == CALLS_PER_THREAD && jobs[t].worker_calls == 1);
    total += jobs[t].result;
    worker_calls += jobs[t].worker_calls;
    work_calls += jobs[t].work_calls;
  }
  pthread_barrier_destroy(&start_barrier);
  printf("total=%ld\n", total);
  printf("calls th_worker=%lu th_work=%lu\n", worker_calls, work_calls);
  printf("per_thread th_work=%d tids=%d\n", CALLS_PER_THREAD, NTHREADS);
  return 0;
}
