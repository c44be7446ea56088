/* Code that walks its own stack while traced frames are on it.
 *
 *  backtrace(): bt_inner, called from bt_middle <- bt_outer <- main, takes a
 *    glibc backtrace and checks that the return addresses it finds lie in
 *    bt_middle, bt_outer and main, in that order (not in the tracer's
 *    trampoline). All three functions then return normally.
 *  pthread_exit(): a thread leaves from pe_level2 <- pe_level1 <- pe_thread;
 *    glibc unwinds the thread's stack (forced unwinding through .eh_frame),
 *    which must not trip over hijacked return addresses. Those three frames
 *    never return.
 */
#include <execinfo.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracee.h"

static volatile long sink;
static unsigned long c_inner, c_middle, c_outer, c_pe1, c_pe2, c_pethread;

int main(void);
TRACED int bt_inner(int x);
TRACED int bt_middle(int x);
TRACED int bt_outer(int x);

struct known {
  const char* name;
  uintptr_t start;
};

/* Which of the known functions contains addr: the nearest start below it. */
static const char* locate(uintptr_t addr) {
  struct known k[] = {
      {"bt_inner", (uintptr_t)bt_inner},
      {"bt_middle", (uintptr_t)bt_middle},
      {"bt_outer", (uintptr_t)bt_outer},
      {"main", (uintptr_t)main},
  };
  const char* best = "other";
  uintptr_t best_start = 0;
  for (size_t i = 0; i < sizeof k / sizeof k[0]; ++i)
    if (k[i].start <= addr && k[i].start > best_start && addr - k[i].start < 4096) {
      best = k[i].name;
      best_start = k[i].start;
    }
  return best;
}

TRACED int bt_inner(int x) {
  BUMP(c_inner);
  void* frames[32];
  int n = backtrace(frames, 32);
  CHECK(n >= 4);
  /* frames[0] is in bt_inner itself, then the callers. */
  const char* want[] = {"bt_inner", "bt_middle", "bt_outer", "main"};
  for (int i = 0; i < 4; ++i) {
    const char* got = locate((uintptr_t)frames[i]);
    if (strcmp(got, want[i]) != 0) {
      fprintf(stderr, "backtrace frame %d: %p is in %s, want %s\n", i, frames[i], got, want[i]);
      exit(1);
    }
  }
  return x + n;
}

TRACED int bt_middle(int x) {
  BUMP(c_middle);
  int r = bt_inner(x + 1);
  sink = r;
  return r + 1;
}

TRACED int bt_outer(int x) {
  BUMP(c_outer);
  int r = bt_middle(x + 1);
  sink = r;
  return r + 1;
}

TRACED void pe_level2(long x) {
  BUMP(c_pe2);
  if (x >= 0) pthread_exit((void*)(x * 3));
}

TRACED void pe_level1(long x) {
  BUMP(c_pe1);
  pe_level2(x + 1);
  sink = x;
}

TRACED void* pe_thread(void* arg) {
  BUMP(c_pethread);
  pe_level1((long)arg);
  return NULL;
}

int main(void) {
  int first = bt_outer(0);
  for (int i = 1; i < 3; ++i) CHECK(bt_outer(i) == first + i);

  for (long t = 0; t < 4; ++t) {
    pthread_t tid;
    void* ret = NULL;
    CHECK(pthread_create(&tid, NULL, pe_thread, (void*)t) == 0);
    CHECK(pthread_join(tid, &ret) == 0);
    CHECK((long)ret == (t + 1) * 3);
  }
  printf("backtraces ok, threads ok\n");
  printf("calls bt_outer=%lu bt_middle=%lu bt_inner=%lu pe_thread=%lu pe_level1=%lu "
         "pe_level2=%lu\n",
         c_outer, c_middle, c_inner, c_pethread, c_pe1, c_pe2);
  /* pthread_exit unwinds like an exception; a tracer may also see it as the
   * thread's exit. Either reason is right. */
  printf("unwound exit|exception pe_thread=4 pe_level1=4 pe_level2=4\n");
  return 0;
}
