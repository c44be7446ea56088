/* 200 short-lived threads, created and joined in waves of 20. Thread ids come
 * and go quickly; every thread calls mt_task a few times and returns. Each
 * thread counts in its own slot. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "tracee.h"

#define NTHREADS 200
#define WAVE 20
#define TASKS_PER_THREAD 3

struct slot {
  int id;
  unsigned long body_calls;
  unsigned long task_calls;
};

static struct slot slots[NTHREADS];

TRACED int mt_task(struct slot* s, int step) {
  BUMP(s->task_calls);
  return s->id * TASKS_PER_THREAD + step;
}

TRACED void* mt_body(void* arg) {
  struct slot* s = arg;
  BUMP(s->body_calls);
  long sum = 0;
  for (int k = 0; k < TASKS_PER_THREAD; ++k) sum += mt_task(s, k);
  return (void*)sum;
}

int main(void) {
  long total = 0;
  for (int wave = 0; wave < NTHREADS / WAVE; ++wave) {
    pthread_t tids[WAVE];
    for (int k = 0; k < WAVE; ++k) {
      struct slot* s = &slots[wave * WAVE + k];
      s->id = wave * WAVE + k;
      CHECK(pthread_create(&tids[k], NULL, mt_body, s) == 0);
    }
    for (int k = 0; k < WAVE; ++k) {
      void* ret = NULL;
      CHECK(pthread_join(tids[k], &ret) == 0);
      long id = wave * WAVE + k;
      CHECK((long)ret == id * TASKS_PER_THREAD * 3 + 3);
      total += (long)ret;
    }
  }
  unsigned long body_calls = 0, task_calls = 0;
  for (int i = 0; i < NTHREADS; ++i) {
    CHECK(slots[i].body_calls == 1 && slots[i].task_calls == TASKS_PER_THREAD);
    body_calls += slots[i].body_calls;
    task_calls += slots[i].task_calls;
  }
  printf("total=%ld\n", total);
  printf("calls mt_body=%lu mt_task=%lu\n", body_calls, task_calls);
  printf("per_thread mt_task=%d tids=%d\n", TASKS_PER_THREAD, NTHREADS);
  return 0;
}
