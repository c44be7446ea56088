/* A coroutine suspended on one thread and resumed on another: the traced function
 * on the coroutine's stack returns on a different thread than it was called on. The
 * tracer finds its frame on the first thread's shadow stack; the program must run
 * exactly as without tracing.
 *
 *   comigrate */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#include "tracee.h"

static ucontext_t co, back_main, back_thread;
static int result;
static unsigned long c_fn;

TRACED int cm_fn(int x) {
  BUMP(c_fn);
  CHECK(swapcontext(&co, &back_main) == 0); /* suspend; resumed by the other thread */
  return x * 2;
}

static void coroutine_body(void) { result = cm_fn(21); }

static void* resume_elsewhere(void* arg) {
  (void)arg;
  CHECK(swapcontext(&back_thread, &co) == 0); /* the coroutine finishes here */
  return NULL;
}

int main(void) {
  static char stack[1 << 16];
  CHECK(getcontext(&co) == 0);
  co.uc_stack.ss_sp = stack;
  co.uc_stack.ss_size = sizeof stack;
  co.uc_link = &back_thread;
  makecontext(&co, coroutine_body, 0);
  CHECK(swapcontext(&back_main, &co) == 0);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, resume_elsewhere, NULL) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  CHECK(result == 42);
  printf("result %d\n", result);
  printf("calls cm_fn=%lu\n", c_fn);
  return 0;
}
