/* fork() from inside traced functions, without -f: the child is not traced,
 * yet it starts with the parent's stack, where the tracer may have replaced
 * return addresses, and with the parent's code, where it planted breakpoints.
 * The child returns through the traced frames, calls traced functions, runs
 * system() (posix_spawn: a CLONE_VM|CLONE_VFORK child) and reports back
 * through its exit status. The "calls" counts are the parent's; "follow
 * calls" are those of all processes, for a run with -f. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tracee.h"

static unsigned long c_l1, c_l2, c_work, c_spawn;
static volatile long sink;

TRACED long fk_work(long x) {
  BUMP(c_work);
  return x * 2 + 1;
}

/* Returns the child's pid in the parent, 0 in the child. */
TRACED pid_t fk_level2(int x) {
  BUMP(c_l2);
  fflush(stdout);
  pid_t pid = fork();
  CHECK(pid >= 0);
  sink = x;
  return pid;
}

TRACED pid_t fk_level1(int x) {
  BUMP(c_l1);
  pid_t pid = fk_level2(x + 1);
  sink = pid;
  return pid;
}

TRACED int fk_spawn(void) {
  BUMP(c_spawn);
  return system("exit 7");
}

int main(void) {
  long parent_sum = 0;
  for (int round = 0; round < 3; ++round) {
    pid_t pid = fk_level1(round);
    if (pid == 0) {
      /* Child: returned through both traced frames. */
      long s = 0;
      for (int i = 0; i < 50; ++i) s += fk_work(i);
      int st = fk_spawn();
      int ok = s == 2500 && WIFEXITED(st) && WEXITSTATUS(st) == 7;
      _exit(ok ? 40 + round : 1);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 40 + round);
    parent_sum += fk_work(round);
  }
  int st = fk_spawn();
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
  printf("children ok, parent_sum=%ld\n", parent_sum);
  printf("calls fk_level1=%lu fk_level2=%lu fk_work=%lu fk_spawn=%lu\n", c_l1, c_l2, c_work,
         c_spawn);
  /* With -f the children are traced too: each calls fk_work 50 times and
   * fk_spawn once, and returns through fk_level2/fk_level1 it entered before
   * the fork (those calls are the parent's). */
  printf("follow calls fk_level1=%lu fk_level2=%lu fk_work=%lu fk_spawn=%lu\n", c_l1, c_l2,
         c_work + 3 * 50, c_spawn + 3);
  return 0;
}
