/* Coroutines with swapcontext: a traced function on the coroutine's stack is
 * suspended while traced functions run and return on the main stack, then resumes
 * and returns. The tracer cannot know the suspended frame is alive (it looks
 * abandoned, like a longjmp); what must hold is that the program runs exactly as
 * without tracing and every call is accounted for.
 *
 *   coroutine */
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#include "tracee.h"

static ucontext_t main_ctx, co_ctx;
static unsigned long c_leaf, c_in_co, c_in_main;

TRACED int co_leaf(int x) {
  BUMP(c_leaf);
  return x + 1;
}

TRACED int co_in_co(int x) {
  BUMP(c_in_co);
  CHECK(swapcontext(&co_ctx, &main_ctx) == 0);
  return co_leaf(x) * 2;
}

static int co_result;
static void coroutine_body(void) { co_result = co_in_co(20); }

TRACED int co_in_main(int x) {
  BUMP(c_in_main);
  CHECK(swapcontext(&main_ctx, &co_ctx) == 0);
  return co_leaf(x);
}

int main(void) {
  static char stack[1 << 16];
  CHECK(getcontext(&co_ctx) == 0);
  co_ctx.uc_stack.ss_sp = stack;
  co_ctx.uc_stack.ss_size = sizeof stack;
  co_ctx.uc_link = &main_ctx;
  makecontext(&co_ctx, coroutine_body, 0);
  int a = co_in_main(1); /* runs the coroutine up to its swap back */
  int b = co_in_main(2); /* resumes it; it finishes and comes back here */
  CHECK(a == 2 && b == 3 && co_result == 42);
  printf("main %d %d co %d\n", a, b, co_result);
  printf("calls co_leaf=%lu co_in_co=%lu co_in_main=%lu\n", c_leaf, c_in_co, c_in_main);
  return 0;
}
