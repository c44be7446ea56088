/* A tree of processes that exec this same program again, started from inside
 * traced functions in three ways:
 *   f  fork(), a few traced calls in the child, then execv
 *   v  vfork() and execv (the child only execs or _exits)
 *   s  posix_spawn (a CLONE_VM|CLONE_VFORK child inside libc)
 * A process at depth D > 0 starts an f child at depth D-1 and a v and an s
 * child at depth 0, waits for each and checks its exit status. Every process
 * makes a number of traced calls that depends on its place in the tree, so no
 * two processes have the same counts, and prints them on a "proc_calls" line.
 *
 * Without -f only the launched process is traced: the "calls" line is its own.
 * With -f every process has its own trace file, which must hold exactly the
 * calls of one "proc_calls" line (an f child's calls before its exec included:
 * they come in through the PRE argument); "follow calls" are the totals.
 *
 *   execchain [DEPTH]                              the launched process (DEPTH 0-4, default 3)
 *   execchain child LABEL GEN DEPTH KIND PRE       a process of the tree
 */
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tracee.h"

extern char** environ;

enum { K_TOP, K_FORK, K_VFORK, K_SPAWN, K_COUNT };
static const char kind_letter[K_COUNT] = {'t', 'f', 'v', 's'};

enum { F_RUN, F_WORK, F_SPAWN, F_WAIT, F_PRE, F_LEAF, F_COUNT };
static const char* const fname[F_COUNT] = {"xc_run",  "xc_work", "xc_spawn",
                                           "xc_wait", "xc_pre",  "xc_leaf"};
static unsigned long c[F_COUNT];

static char self_exe[PATH_MAX];
static volatile long sink;

/* How many calls of each function the process at (gen, depth, kind) makes. */
static void plan(int gen, int depth, int kind, unsigned long out[F_COUNT]) {
  out[F_RUN] = 1;
  out[F_WORK] = 4 + 10 * gen + 3 * kind;  /* unique per (gen, kind) */
  out[F_SPAWN] = depth > 0 ? 3 : 0;
  out[F_WAIT] = out[F_SPAWN];
  out[F_PRE] = kind == K_FORK ? gen + 1 : 0;
  out[F_LEAF] = depth == 0 ? gen + 2 : 0;
}

/* Totals over the process at (gen, depth, kind) and all its descendants. */
static void plan_tree(int gen, int depth, int kind, unsigned long out[F_COUNT]) {
  unsigned long own[F_COUNT];
  plan(gen, depth, kind, own);
  for (int i = 0; i < F_COUNT; ++i) out[i] += own[i];
  if (depth > 0) {
    plan_tree(gen + 1, depth - 1, K_FORK, out);
    plan_tree(gen + 1, 0, K_VFORK, out);
    plan_tree(gen + 1, 0, K_SPAWN, out);
  }
}

static int exit_code(int gen, int kind) { return 10 + 4 * gen + kind; }

static void print_counts(const char* prefix, const unsigned long n[F_COUNT]) {
  printf("%s", prefix);
  for (int i = 0; i < F_COUNT; ++i) printf(" %s=%lu", fname[i], n[i]);
  printf("\n");
}

TRACED long xc_work(long x) {
  BUMP(c[F_WORK]);
  return 3 * x + 1;
}

TRACED void xc_pre(int i) {
  BUMP(c[F_PRE]);
  sink = i;
}

TRACED long xc_leaf(long x) {
  BUMP(c[F_LEAF]);
  return x ^ 5;
}

/* Starts the child LABEL/KINDGEN at (gen, depth); returns its pid. */
TRACED pid_t xc_spawn(const char* label, int gen, int depth, int kind) {
  BUMP(c[F_SPAWN]);
  unsigned long child[F_COUNT];
  plan(gen, depth, kind, child);
  char clabel[256], sgen[16], sdepth[16], skind[16], spre[16];
  snprintf(clabel, sizeof clabel, "%s/%c%d", label, kind_letter[kind], gen);
  snprintf(sgen, sizeof sgen, "%d", gen);
  snprintf(sdepth, sizeof sdepth, "%d", depth);
  snprintf(skind, sizeof skind, "%d", kind);
  snprintf(spre, sizeof spre, "%lu", child[F_PRE]);
  char* argv[] = {self_exe, "child", clabel, sgen, sdepth, skind, spre, NULL};
  fflush(stdout);
  fflush(stderr);
  pid_t pid = -1;
  if (kind == K_FORK) {
    pid = fork();
    if (pid == 0) {
      /* Still inside xc_spawn (and xc_run) of the parent's image. */
      unsigned long before = c[F_PRE];
      for (unsigned long i = 0; i < child[F_PRE]; ++i) xc_pre((int)i);
      snprintf(spre, sizeof spre, "%lu", c[F_PRE] - before);
      execv(self_exe, argv);
      _exit(126);
    }
  } else if (kind == K_VFORK) {
    pid = vfork();
    if (pid == 0) {
      execv(self_exe, argv);
      _exit(127);
    }
  } else {
    int err = posix_spawn(&pid, self_exe, NULL, NULL, argv, environ);
    if (err != 0) {
      fprintf(stderr, "posix_spawn: %s\n", strerror(err));
      exit(1);
    }
  }
  CHECK(pid > 0);
  return pid;
}

TRACED int xc_wait(pid_t pid, int want) {
  BUMP(c[F_WAIT]);
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid, &status, 0);
  } while (r < 0 && errno == EINTR);
  CHECK(r == pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != want) {
    fprintf(stderr, "child %d: status 0x%x, want exit %d\n", (int)pid, status, want);
    exit(1);
  }
  return WEXITSTATUS(status);
}

TRACED long xc_run(const char* label, int gen, int depth, int kind) {
  BUMP(c[F_RUN]);
  unsigned long want[F_COUNT];
  plan(gen, depth, kind, want);
  long s = 0;
  unsigned long i = 0;
  for (; i < want[F_WORK] / 2; ++i) s += xc_work((long)i);
  if (depth > 0) {
    int kinds[3] = {K_FORK, K_VFORK, K_SPAWN};
    for (int k = 0; k < 3; ++k) {
      int cdepth = kinds[k] == K_FORK ? depth - 1 : 0;
      pid_t pid = xc_spawn(label, gen + 1, cdepth, kinds[k]);
      xc_wait(pid, exit_code(gen + 1, kinds[k]));
    }
  } else {
    for (unsigned long j = 0; j < want[F_LEAF]; ++j) s += xc_leaf((long)j);
  }
  for (; i < want[F_WORK]; ++i) s += xc_work((long)i);
  return s;
}

int main(int argc, char** argv) {
  ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
  CHECK(n > 0 && (size_t)n < sizeof self_exe - 1);
  self_exe[n] = '\0';

  const char* label = "top";
  int gen = 0, depth = 3, kind = K_TOP;
  unsigned long pre = 0;
  if (argc == 7 && strcmp(argv[1], "child") == 0) {
    label = argv[2];
    gen = atoi(argv[3]);
    depth = atoi(argv[4]);
    kind = atoi(argv[5]);
    pre = strtoul(argv[6], NULL, 10);
    CHECK(kind > K_TOP && kind < K_COUNT && gen > 0);
  } else if (argc == 2) {
    depth = atoi(argv[1]);
  } else {
    CHECK(argc == 1);
  }
  CHECK(depth >= 0 && depth <= 4);

  unsigned long want[F_COUNT];
  plan(gen, depth, kind, want);
  CHECK(pre == want[F_PRE]);
  /* The calls an f child made before its exec belong to this process. */
  c[F_PRE] = pre;

  long s = xc_run(label, gen, depth, kind);
  long expect = 0;
  for (unsigned long i = 0; i < want[F_WORK]; ++i) expect += 3 * (long)i + 1;
  for (unsigned long j = 0; j < want[F_LEAF]; ++j) expect += (long)(j ^ 5);
  CHECK(s == expect);
  for (int i = 0; i < F_COUNT; ++i) CHECK(c[i] == want[i]);

  char prefix[300];
  snprintf(prefix, sizeof prefix, "proc_calls %s", label);
  print_counts(prefix, c);
  if (kind == K_TOP) {
    unsigned long total[F_COUNT] = {0};
    plan_tree(0, depth, K_TOP, total);
    printf("tree ok, sum=%ld\n", s);
    print_counts("calls", c);
    print_counts("follow calls", total);
    return 0;
  }
  return exit_code(gen, kind);
}
