/* A program marked for a shadow stack (x86 CET: built with -fcf-protection=full and
 * linked with -z shstk) that checks that nothing wrote its stack's return
 * addresses: each traced function finds its return address inside the program's own
 * code, as a return checked against a shadow stack would. A tracer that replaces
 * return addresses (functracer's --returns=stack) makes it fail; one that catches
 * returns at their sites (what functracer does for a process that runs, or will
 * run, with a shadow stack) leaves it alone (tests/integration/test_shadow_stack.py).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tracee.h"

extern char __executable_start[], etext[];

static long sk_depth_calls, sk_leaf_calls, sk_worker_calls;

/* The caller's code, as a shadow stack would hold it. */
#define CHECK_RETURN_ADDRESS()                                                          \
  do {                                                                                  \
    uintptr_t ra = (uintptr_t)__builtin_extract_return_addr(__builtin_return_address(0)); \
    if (ra < (uintptr_t)__executable_start || ra >= (uintptr_t)etext) {                 \
      fprintf(stderr, "%s: return address %#lx is not in the program's code\n", __func__, \
              (unsigned long)ra);                                                       \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

TRACED long sk_leaf(long x) {
  CHECK_RETURN_ADDRESS();
  BUMP(sk_leaf_calls);
  return x * 3 + 1;
}

TRACED long sk_depth(long n);
/* Called through a pointer the compiler cannot see through: real recursion, not a loop. */
static long (*volatile sk_again)(long) = sk_depth;

TRACED long sk_depth(long n) {
  CHECK_RETURN_ADDRESS();
  BUMP(sk_depth_calls);
  if (n == 0) return sk_leaf(n + 7);
  long r = sk_again(n - 1);
  return r + 1; /* not a tail call */
}

static long worker_result;

/* Started by libc (start_thread): its return address is libc's. */
TRACED void *sk_worker(void *arg) {
  long sum = 0;
  for (long i = 0; i < 50; ++i) sum += sk_depth(i % 8);
  worker_result = sum;
  return arg;
}

int main(void) {
  long sum = 0;
  for (long i = 0; i < 100; ++i) sum += sk_depth(i % 10);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, sk_worker, NULL) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  ++sk_worker_calls; /* the thread's start function, once */
  /* sk_depth(n) = 22 + n */
  long want = 0, want_worker = 0;
  for (long i = 0; i < 100; ++i) want += 22 + i % 10;
  for (long i = 0; i < 50; ++i) want_worker += 22 + i % 8;
  CHECK(sum == want);
  CHECK(worker_result == want_worker);
  printf("sum %ld worker %ld\n", sum, worker_result);
  printf("calls sk_depth=%ld sk_leaf=%ld sk_worker=%ld\n", sk_depth_calls, sk_leaf_calls, sk_worker_calls);
  return 0;
}
