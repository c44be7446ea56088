/* Non-local exits out of nested traced functions.
 *
 *  lj_catcher(i) does setjmp and calls lj_level1 -> lj_level2 -> lj_level3;
 *  for even i, lj_level3 longjmps back into lj_catcher, so the three levels
 *  never return while lj_catcher itself returns normally.
 *
 *  sj_catcher(i) does the same with sigsetjmp/siglongjmp: for i % 3 == 1
 *  sj_level2 siglongjmps directly, for i % 3 == 2 it raises SIGUSR1 and the
 *  traced handler sj_handler siglongjmps out of the signal frame.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracee.h"

#define LJ_ROUNDS 10
#define SJ_ROUNDS 9

static jmp_buf env;
static sigjmp_buf senv;
static volatile long sink;

static unsigned long c_catcher, c_l1, c_l2, c_l3, c_after;
static unsigned long c_scatcher, c_s1, c_s2, c_handler;

TRACED int lj_level3(int x) {
  BUMP(c_l3);
  if (x % 2 == 0) longjmp(env, x + 1);
  return x * 2;
}

TRACED int lj_level2(int x) {
  BUMP(c_l2);
  int r = lj_level3(x + 1);
  sink = r;
  return r + 1;
}

TRACED int lj_level1(int x) {
  BUMP(c_l1);
  int r = lj_level2(x + 1);
  sink = r;
  return r + 1;
}

TRACED int lj_after(int x) {
  BUMP(c_after);
  return x + 1000;
}

/* Returns the value passed to longjmp, or -(normal result). */
TRACED int lj_catcher(int i) {
  BUMP(c_catcher);
  int v = setjmp(env);
  if (v != 0) return v;
  return -lj_level1(i);
}

TRACED void sj_handler(int sig) {
  BUMP(c_handler);
  siglongjmp(senv, 100 + sig);
}

TRACED int sj_level2(int x) {
  BUMP(c_s2);
  if (x % 3 == 1) siglongjmp(senv, x);
  if (x % 3 == 2) raise(SIGUSR1);
  return x * 5;
}

TRACED int sj_level1(int x) {
  BUMP(c_s1);
  int r = sj_level2(x);
  sink = r;
  return r + 1;
}

TRACED int sj_catcher(int i) {
  BUMP(c_scatcher);
  int v = sigsetjmp(senv, 1);
  if (v != 0) return v;
  return -sj_level1(i);
}

int main(void) {
  long total = 0;
  int jumps = 0;
  for (int i = 0; i < LJ_ROUNDS; ++i) {
    int r = lj_catcher(i);
    /* lj_level3 sees x = i + 2, jumps when it is even. */
    if ((i + 2) % 2 == 0) {
      CHECK(r == i + 3);
      ++jumps;
    } else {
      CHECK(r == -((i + 2) * 2 + 2));
    }
    total += r + lj_after(i);
  }

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = sj_handler;
  sigemptyset(&sa.sa_mask);
  CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);

  int sjumps = 0, hjumps = 0;
  for (int i = 0; i < SJ_ROUNDS; ++i) {
    int r = sj_catcher(i);
    if (i % 3 == 1) {
      CHECK(r == i);
      ++sjumps;
    } else if (i % 3 == 2) {
      CHECK(r == 100 + SIGUSR1);
      ++hjumps;
    } else {
      CHECK(r == -(i * 5 + 1));
    }
    /* The signal mask was restored by siglongjmp: SIGUSR1 is not blocked. */
    sigset_t cur;
    CHECK(sigprocmask(SIG_BLOCK, NULL, &cur) == 0);
    CHECK(!sigismember(&cur, SIGUSR1));
    total += r + lj_after(i);
  }

  CHECK(c_catcher == LJ_ROUNDS && c_l1 == LJ_ROUNDS && c_l2 == LJ_ROUNDS && c_l3 == LJ_ROUNDS);
  CHECK(c_scatcher == SJ_ROUNDS && c_s1 == SJ_ROUNDS && c_s2 == SJ_ROUNDS);
  CHECK(c_handler == (unsigned long)hjumps);
  CHECK(c_after == LJ_ROUNDS + SJ_ROUNDS);
  printf("total=%ld jumps=%d sjumps=%d hjumps=%d\n", total, jumps, sjumps, hjumps);
  printf("calls lj_catcher=%lu lj_level1=%lu lj_level2=%lu lj_level3=%lu lj_after=%lu "
         "sj_catcher=%lu sj_level1=%lu sj_level2=%lu sj_handler=%lu\n",
         c_catcher, c_l1, c_l2, c_l3, c_after, c_scatcher, c_s1, c_s2, c_handler);
  printf("unwound longjmp lj_level1=%d lj_level2=%d lj_level3=%d "
         "sj_level1=%d sj_level2=%d sj_handler=%d\n",
         jumps, jumps, jumps, sjumps + hjumps, sjumps + hjumps, hjumps);
  return 0;
}
