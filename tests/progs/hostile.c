/* Programs that are hard on a tracer, one per subcommand. Each runs traced
 * functions (hx_*) and states what it did (tracee.h): "calls", "unwound",
 * "follow calls" and "proc_calls" lines, and
 *   heap size=S allocs=N frees=M    N malloc(S) calls, M of those blocks freed
 *   signals SIG=N ...               the signals delivered to the launched process, by
 *                                   number (ignored ones too: a traced process has
 *                                   them delivered, then discarded)
 *
 *   abort-threads            abort() from nested traced frames while another thread
 *                            is blocked inside a traced function (SIGABRT, 134)
 *   stackoverflow FILE       unbounded recursion of a traced function on the main
 *                            stack until SIGSEGV, no handler (139)
 *   stackoverflow-handled FILE
 *                            the same with a SIGSEGV handler on an alternate signal
 *                            stack that checks the fault and _exits (3)
 *   stackoverflow-thread FILE
 *                            the same in a thread with a small stack while the main
 *                            thread waits in a traced function (139)
 *      The depth reached depends on where the stack starts, so the counts go to FILE,
 *      rewritten at every level: "calls hx_recurse=N ..." and "probe=ADDR", the one
 *      address the overflow faults at (each level reads far enough below its stack
 *      pointer that nothing else can fault first).
 *   fault-longjmp            SIGSEGV and SIGFPE in traced frames, a traced handler
 *                            siglongjmps out of them; the program carries on (0)
 *   fault-longjmp-altstack   the same with the handler on an alternate signal stack (0)
 *   blocksig                 every signal blocked, SIGUSR1 and SIGTERM raised and left
 *                            pending; a thread born with that mask; SIGUSR1 taken with
 *                            sigtimedwait; unblocking delivers SIGTERM (143)
 *   ignoresig                SIGINT, SIGTERM and SIGUSR1 ignored and sent to itself
 *                            (raise, kill, a thread's tgkill) from traced frames (0)
 *   groupsig                 handles SIGUSR1, SIGUSR2, SIGTERM, SIGALRM and SIGRTMIN and
 *                            sends each to its whole process group (kill(0, sig)) from
 *                            a traced function; each handler must run exactly once,
 *                            the signals' meaning for functracer notwithstanding (0)
 *   exec-thread              a thread execs the program again while the main thread and
 *                            two others are inside traced functions; the new image
 *                            (exec-thread-after) carries on (0)
 *   exec-thread-noleader     the same, but the main thread has left with pthread_exit
 *                            (from a traced function) before the exec (0)
 *   vfork-calls              two vfork children call traced functions on the parent's
 *                            memory; one _exits, the other execs (vfork-exec-child) (0)
 *   clone-nostack            clone(2) without a new stack (fork-like, once with SIGCHLD
 *                            and once with no exit signal) from nested traced frames;
 *                            the children return through them and call more (0)
 *
 * Kernel behaviour a tracer using int3 cannot hide: every breakpoint trap unblocks
 * SIGTRAP in the thread (force_sig), so blocksig leaves SIGTRAP out of its check.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tracee.h"

static char self_exe[PATH_MAX];
static volatile long sink;

static void say(const char* s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(1, s, n);
    if (w <= 0) _exit(1);
    s += w;
    n -= (size_t)w;
  }
}

/* ---------------------------------------------------------------- abort-threads */

static unsigned long c_park, c_level1, c_abort;
static volatile int parked;
static int park_pipe[2];

TRACED long hx_park(int fd) {
  BUMP(c_park);
  parked = 1;
  char b;
  long r = read(fd, &b, 1); /* nothing is ever written */
  return r;
}

static void* park_thread(void* arg) {
  (void)arg;
  hx_park(park_pipe[0]);
  return NULL;
}

TRACED void hx_abort_now(int x) {
  BUMP(c_abort);
  sink = x;
  abort();
}

TRACED int hx_level1(int x) {
  BUMP(c_level1);
  hx_abort_now(x + 1);
  return x;
}

static int do_abort_threads(void) {
  CHECK(pipe(park_pipe) == 0);
  void* block = malloc(4093);
  CHECK(block != NULL);
  memset(block, 1, 4093);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, park_thread, NULL) == 0);
  while (!parked) sched_yield();
  /* parked is set inside hx_park, before read(): the thread is in the traced frame. */
  printf("aborting with a thread parked\n");
  printf("calls hx_park=1 hx_level1=1 hx_abort_now=1\n");
  printf("unwound exit hx_park=1 hx_level1=1 hx_abort_now=1\n");
  printf("heap size=4093 allocs=1 frees=0\n");
  printf("signals %d=1\n", SIGABRT);
  fflush(stdout);
  hx_level1(7);
  return 1;
}

/* ---------------------------------------------------------------- stackoverflow */

#define FRAME_BYTES 1024
#define PROBE_BELOW 4096 /* more than a level's frame and the next level's prologue */

static char* count_map;
static unsigned long c_recurse, c_on_overflow;
static volatile uintptr_t probe_addr;
static char altstack[64 * 1024] __attribute__((aligned(16)));

static void put_hex(char* p, int width, uintptr_t v) {
  for (int i = width - 1; i >= 0; --i) {
    p[i] = "0123456789abcdef"[v & 15];
    v >>= 4;
  }
}

static void put_dec(char* p, int width, unsigned long v) {
  for (int i = width - 1; i >= 0; --i) {
    p[i] = (char)('0' + v % 10);
    v /= 10;
  }
}

/* "calls hx_recurse=NNNNNNNNNN hx_on_overflow=N hx_join=N\nprobe=0xHHHHHHHHHHHHHHHH\n" */
#define CM_RECURSE 17
#define CM_ON 43
#define CM_JOIN 53
#define CM_PROBE 63
static const char count_template[] =
    "calls hx_recurse=0000000000 hx_on_overflow=0 hx_join=0\nprobe=0x0000000000000000\n";

TRACED long hx_recurse(long depth) {
  volatile char frame[FRAME_BYTES];
  BUMP(c_recurse);
  uintptr_t sp;
  __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
  probe_addr = sp - PROBE_BELOW;
  put_dec(count_map + CM_RECURSE, 10, c_recurse);
  put_hex(count_map + CM_PROBE, 16, probe_addr);
  __asm__ volatile("" ::: "memory");
  for (int i = 0; i < FRAME_BYTES; i += 64) frame[i] = (char)depth;
  /* The first touch of memory below this level: where the overflow faults. */
  __asm__ volatile("movb %c0(%%rsp), %%al" ::"i"(-PROBE_BELOW) : "rax", "memory");
  long r = depth < LONG_MAX ? hx_recurse(depth + 1) : 0; /* never 0: keeps gcc quiet */
  return r + frame[(depth * 64) % FRAME_BYTES];
}

TRACED void hx_on_overflow(int sig, siginfo_t* si, void* uc) {
  (void)uc;
  BUMP(c_on_overflow);
  count_map[CM_ON] = (char)('0' + c_on_overflow);
  char here;
  int on_alt = (uintptr_t)&here >= (uintptr_t)altstack &&
               (uintptr_t)&here < (uintptr_t)altstack + sizeof altstack;
  if (sig == SIGSEGV && on_alt && (uintptr_t)si->si_addr == probe_addr &&
      (si->si_code == SEGV_MAPERR || si->si_code == SEGV_ACCERR)) {
    say("overflow caught at the probed address, on the alternate stack\n");
    _exit(3);
  }
  say("overflow handler: unexpected fault\n");
  _exit(4);
}

static unsigned long c_join;

TRACED void hx_join(pthread_t th) {
  BUMP(c_join);
  count_map[CM_JOIN] = (char)('0' + c_join);
  pthread_join(th, NULL); /* never returns: the thread's overflow kills the process */
}

static void* overflow_thread(void* arg) {
  (void)arg;
  sink = hx_recurse(0);
  return NULL;
}

static int do_stackoverflow(const char* file, int handled, int in_thread) {
  int fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  CHECK(ftruncate(fd, 4096) == 0);
  count_map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  CHECK(count_map != MAP_FAILED);
  memcpy(count_map, count_template, sizeof count_template - 1);
  /* A small stack keeps the recursion short. */
  struct rlimit rl;
  CHECK(getrlimit(RLIMIT_STACK, &rl) == 0);
  rl.rlim_cur = 1024 * 1024;
  CHECK(setrlimit(RLIMIT_STACK, &rl) == 0);
  if (handled) {
    stack_t ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_sp = altstack;
    ss.ss_size = sizeof altstack;
    CHECK(sigaltstack(&ss, NULL) == 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = hx_on_overflow;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGSEGV, &sa, NULL) == 0);
  }
  printf("recursing until the stack runs out%s%s\n", handled ? " (handled)" : "",
         in_thread ? " (in a thread)" : "");
  printf("signals %d=1\n", SIGSEGV);
  fflush(stdout);
  if (in_thread) {
    /* A 256 KiB thread stack with glibc's guard page under it. */
    pthread_attr_t attr;
    CHECK(pthread_attr_init(&attr) == 0);
    CHECK(pthread_attr_setstacksize(&attr, 256 * 1024) == 0);
    pthread_t th;
    CHECK(pthread_create(&th, &attr, overflow_thread, NULL) == 0);
    hx_join(th);
    return 1;
  }
  sink = hx_recurse(0);
  return 1;
}

/* ---------------------------------------------------------------- fault-longjmp */

#define FAULT_ROUNDS 10

static sigjmp_buf fault_env;
static unsigned long c_fault_outer, c_fault_inner, c_on_fault, c_after;
static volatile int divisor;
static long* volatile null_ptr;
static void* blocks[FAULT_ROUNDS];
static int fault_bad;
static int fault_on_alt;

TRACED void hx_on_fault(int sig, siginfo_t* si, void* uc) {
  (void)uc;
  BUMP(c_on_fault);
  if (sig == SIGSEGV && (si->si_code != SEGV_MAPERR || (uintptr_t)si->si_addr != 0x10))
    fault_bad = 1;
  if (sig == SIGFPE && si->si_code != FPE_INTDIV) fault_bad = 1;
  char here;
  int on_alt = (uintptr_t)&here >= (uintptr_t)altstack &&
               (uintptr_t)&here < (uintptr_t)altstack + sizeof altstack;
  if (on_alt != fault_on_alt) fault_bad = 1;
  siglongjmp(fault_env, sig);
}

TRACED long hx_fault_inner(int round) {
  BUMP(c_fault_inner);
  if (round % 2 == 0) return null_ptr[2]; /* reads address 0x10 */
  return 1000 / divisor;
}

TRACED long hx_fault_outer(int round) {
  BUMP(c_fault_outer);
  blocks[round] = malloc(4093);
  CHECK(blocks[round] != NULL);
  long r = hx_fault_inner(round);
  return r + 1;
}

TRACED long hx_after(long x) {
  BUMP(c_after);
  return x * 3;
}

static int do_fault_longjmp(int on_alt) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = hx_on_fault;
  sa.sa_flags = SA_SIGINFO;
  fault_on_alt = on_alt;
  if (on_alt) {
    stack_t ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_sp = altstack;
    ss.ss_size = sizeof altstack;
    CHECK(sigaltstack(&ss, NULL) == 0);
    sa.sa_flags |= SA_ONSTACK;
  }
  sigemptyset(&sa.sa_mask);
  CHECK(sigaction(SIGSEGV, &sa, NULL) == 0);
  CHECK(sigaction(SIGFPE, &sa, NULL) == 0);
  int segv = 0, fpe = 0;
  for (volatile int round = 0; round < FAULT_ROUNDS; ++round) {
    int sig = sigsetjmp(fault_env, 1);
    if (sig == 0) {
      sink = hx_fault_outer(round);
      fprintf(stderr, "round %d: no fault\n", round);
      return 1;
    }
    if (sig == SIGSEGV) ++segv;
    if (sig == SIGFPE) ++fpe;
    free(blocks[round]);
  }
  CHECK(!fault_bad);
  CHECK(segv == FAULT_ROUNDS / 2 && fpe == FAULT_ROUNDS / 2);
  long s = 0;
  for (int i = 0; i < 10; ++i) s += hx_after(i);
  CHECK(s == 135);
  printf("faults segv=%d fpe=%d, carried on: %ld\n", segv, fpe, s);
  printf("calls hx_fault_outer=%lu hx_fault_inner=%lu hx_on_fault=%lu hx_after=%lu\n",
         c_fault_outer, c_fault_inner, c_on_fault, c_after);
  printf("unwound longjmp hx_fault_outer=%lu hx_fault_inner=%lu hx_on_fault=%lu\n",
         c_fault_outer, c_fault_inner, c_on_fault);
  printf("heap size=4093 allocs=%d frees=%d\n", FAULT_ROUNDS, FAULT_ROUNDS);
  printf("signals %d=%d %d=%d\n", SIGSEGV, segv, SIGFPE, fpe);
  return 0;
}

/* ---------------------------------------------------------------- blocksig */

static unsigned long c_work, c_thread_work, c_unblock;
static int mask_changed;

TRACED long hx_work(long x) {
  BUMP(c_work);
  return x + 1;
}

TRACED long hx_thread_work(long x) {
  BUMP(c_thread_work);
  return x + 2;
}

/* Every signal but SIGTRAP (see the top) still blocked? */
static int mask_full(void) {
  sigset_t cur;
  CHECK(pthread_sigmask(SIG_SETMASK, NULL, &cur) == 0);
  for (int s = 1; s < NSIG; ++s) {
    if (s == SIGKILL || s == SIGSTOP || s == SIGTRAP || (s > 31 && s < SIGRTMIN)) continue;
    if (!sigismember(&cur, s)) return 0;
  }
  return 1;
}

static void* blocked_thread(void* arg) {
  long s = 0;
  for (int i = 0; i < 50; ++i) s += hx_thread_work(i);
  if (!mask_full()) mask_changed = 1;
  *(long*)arg = s;
  return NULL;
}

TRACED void hx_unblock(void) {
  BUMP(c_unblock);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL); /* the pending SIGTERM kills the program */
  say("still alive after unblocking\n");
  _exit(1);
}

static int do_blocksig(void) {
  sigset_t all;
  sigfillset(&all);
  CHECK(sigprocmask(SIG_SETMASK, &all, NULL) == 0);
  CHECK(raise(SIGUSR1) == 0);
  CHECK(raise(SIGTERM) == 0);
  pthread_t th;
  long ts = 0;
  CHECK(pthread_create(&th, NULL, blocked_thread, &ts) == 0);
  long s = 0;
  for (int i = 0; i < 100; ++i) s += hx_work(i);
  CHECK(pthread_join(th, NULL) == 0);
  CHECK(s == 5050 && ts == 1325);
  if (!mask_full()) mask_changed = 1;
  CHECK(!mask_changed);
  sigset_t pend;
  CHECK(sigpending(&pend) == 0);
  CHECK(sigismember(&pend, SIGUSR1) && sigismember(&pend, SIGTERM));
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  struct timespec zero = {0, 0};
  CHECK(sigtimedwait(&usr1, NULL, &zero) == SIGUSR1);
  CHECK(sigpending(&pend) == 0);
  CHECK(!sigismember(&pend, SIGUSR1) && sigismember(&pend, SIGTERM));
  printf("all blocked: work %ld, thread %ld, SIGUSR1 taken, SIGTERM pending\n", s, ts);
  printf("calls hx_work=%lu hx_thread_work=%lu hx_unblock=1\n", c_work, c_thread_work);
  printf("unwound exit hx_unblock=1\n");
  printf("signals %d=1\n", SIGTERM); /* SIGUSR1 was taken without a delivery */
  fflush(stdout);
  hx_unblock();
  return 1;
}

/* ---------------------------------------------------------------- ignoresig */

static unsigned long c_send, c_ign_thread;
static volatile int ign_thread_ready;
static pthread_t ign_main;

TRACED int hx_send(int sig, int how) {
  BUMP(c_send);
  if (how == 0) return raise(sig);
  if (how == 1) return kill(getpid(), sig);
  return pthread_kill(ign_main, sig);
}

TRACED long hx_ign_thread(long x) {
  BUMP(c_ign_thread);
  int sigs[3] = {SIGINT, SIGTERM, SIGUSR1};
  for (int i = 0; i < 3; ++i) CHECK(hx_send(sigs[i], 2) == 0);
  return x;
}

static void* ign_thread(void* arg) {
  (void)arg;
  sink = hx_ign_thread(5);
  return NULL;
}

static int do_ignoresig(void) {
  int sigs[3] = {SIGINT, SIGTERM, SIGUSR1};
  for (int i = 0; i < 3; ++i) CHECK(signal(sigs[i], SIG_IGN) != SIG_ERR);
  ign_main = pthread_self();
  long s = 0;
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 3; ++i) {
      CHECK(hx_send(sigs[i], 0) == 0);
      s += hx_work(round);
      CHECK(hx_send(sigs[i], 1) == 0);
      s += hx_work(round);
    }
  }
  pthread_t th;
  CHECK(pthread_create(&th, NULL, ign_thread, NULL) == 0);
  CHECK(pthread_join(th, NULL) == 0);
  for (int i = 0; i < 20; ++i) s += hx_work(i);
  for (int i = 0; i < 3; ++i) {
    struct sigaction old;
    CHECK(sigaction(sigs[i], NULL, &old) == 0);
    CHECK(old.sa_handler == SIG_IGN);
  }
  printf("ignored signals sent %lu times, work %ld\n", c_send, s);
  printf("calls hx_send=%lu hx_work=%lu hx_ign_thread=%lu\n", c_send, c_work, c_ign_thread);
  printf("signals %d=11 %d=11 %d=11\n", SIGINT, SIGTERM, SIGUSR1);
  return 0;
}

/* ---------------------------------------------------------------- groupsig */

static unsigned long c_group_send, c_on_group;
static volatile sig_atomic_t group_got[NSIG];

TRACED void hx_on_group(int sig) {
  BUMP(c_on_group);
  group_got[sig]++;
}

TRACED int hx_group_send(int sig) {
  BUMP(c_group_send);
  return kill(0, sig);
}

static int do_groupsig(void) {
  int sigs[5] = {SIGUSR1, SIGUSR2, SIGTERM, SIGALRM, SIGRTMIN};
  for (int i = 0; i < 5; ++i) CHECK(signal(sigs[i], hx_on_group) != SIG_ERR);
  long s = 0;
  for (int i = 0; i < 5; ++i) {
    CHECK(hx_group_send(sigs[i]) == 0);
    for (int j = 0; j < 4; ++j) s += hx_work(j);
  }
  /* Room for a second copy of any of them to arrive. */
  struct timespec ts = {0, 100 * 1000 * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
  for (int i = 0; i < 5; ++i) {
    if (group_got[sigs[i]] != 1) {
      fprintf(stderr, "signal %d handled %d times\n", sigs[i], (int)group_got[sigs[i]]);
      return 1;
    }
  }
  CHECK(s == 5 * 10);
  printf("each group signal handled once\n");
  printf("calls hx_group_send=%lu hx_on_group=%lu hx_work=%lu\n", c_group_send, c_on_group, c_work);
  printf("signals");
  for (int i = 0; i < 5; ++i) printf(" %d=1", sigs[i]);
  printf("\n");
  return 0;
}

/* ---------------------------------------------------------------- exec-thread */

static unsigned long c_spin, c_exec_wait, c_exec_from;
static volatile int spinning;
static volatile int main_waiting;

TRACED long hx_spin(long x) {
  BUMP(c_spin);
  __atomic_fetch_add(&spinning, 1, __ATOMIC_SEQ_CST);
  for (;;) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
    sink = x;
  }
}

static void* spin_thread(void* arg) {
  hx_spin((long)arg);
  return NULL;
}

TRACED void hx_exec_from_thread(void) {
  BUMP(c_exec_from);
  while (__atomic_load_n(&spinning, __ATOMIC_SEQ_CST) < 2 ||
         !__atomic_load_n(&main_waiting, __ATOMIC_SEQ_CST))
    sched_yield();
  fflush(stdout);
  char* argv[] = {self_exe, "exec-thread-after", NULL};
  execv(self_exe, argv);
  _exit(127);
}

static void* exec_thread(void* arg) {
  (void)arg;
  hx_exec_from_thread();
  return NULL;
}

TRACED void hx_exec_wait(pthread_t th, int leader_exits) {
  BUMP(c_exec_wait);
  __atomic_store_n(&main_waiting, 1, __ATOMIC_SEQ_CST);
  /* Neither returns: the exec ends this image. pthread_exit unwinds this frame and
   * leaves the thread group leader a zombie until the exec takes its place. */
  if (leader_exits) pthread_exit(NULL);
  pthread_join(th, NULL);
}

static int do_exec_thread(int leader_exits) {
  void* block = malloc(4093);
  CHECK(block != NULL);
  pthread_t a, b, e;
  CHECK(pthread_create(&a, NULL, spin_thread, (void*)1L) == 0);
  CHECK(pthread_create(&b, NULL, spin_thread, (void*)2L) == 0);
  printf("exec from a thread\n");
  fflush(stdout);
  CHECK(pthread_create(&e, NULL, exec_thread, NULL) == 0);
  hx_exec_wait(e, leader_exits);
  return 1;
}

static int do_exec_thread_after(void) {
  long s = 0;
  for (int i = 0; i < 7; ++i) s += hx_after(i);
  CHECK(s == 63);
  printf("new image after the exec: %ld\n", s);
  printf("calls hx_spin=2 hx_exec_wait=1 hx_exec_from_thread=1 hx_after=%lu\n", c_after);
  printf("unwound exit hx_spin=2 hx_exec_wait=1 hx_exec_from_thread=1\n");
  printf("heap size=4093 allocs=1 frees=0\n");
  return 0;
}

/* ---------------------------------------------------------------- vfork-calls */

static unsigned long c_vspawn, c_vchild, c_vexec;

TRACED long hx_vchild(long x) {
  BUMP(c_vchild);
  return x * 5;
}

TRACED pid_t hx_vfork_spawn(int n, int do_exec) {
  BUMP(c_vspawn);
  fflush(stdout);
  pid_t pid = vfork();
  if (pid == 0) {
    /* On the parent's memory and stack, below this frame: only calls that return. */
    long s = 0;
    for (int i = 0; i < n; ++i) s += hx_vchild(i);
    if (s != 5L * n * (n - 1) / 2) _exit(1);
    if (do_exec) {
      char* argv[] = {self_exe, "vfork-exec-child", NULL};
      execv(self_exe, argv);
      _exit(127);
    }
    _exit(21);
  }
  return pid;
}

TRACED long hx_vexec(long x) {
  BUMP(c_vexec);
  return x - 1;
}

static int do_vfork_exec_child(void) {
  long s = 0;
  for (int i = 0; i < 5; ++i) s += hx_vexec(i);
  return s == 5 && c_vexec == 5 ? 22 : 1;
}

static int wait_for(pid_t pid, int flags) {
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid, &status, flags);
  } while (r < 0 && errno == EINTR);
  CHECK(r == pid);
  CHECK(WIFEXITED(status));
  return WEXITSTATUS(status);
}

static int do_vfork_calls(void) {
  pid_t a = hx_vfork_spawn(3, 0);
  CHECK(a > 0);
  CHECK(wait_for(a, 0) == 21);
  /* The child counted on this memory. */
  CHECK(c_vchild == 3);
  pid_t b = hx_vfork_spawn(4, 1);
  CHECK(b > 0);
  CHECK(wait_for(b, 0) == 22);
  CHECK(c_vchild == 7);
  long s = hx_work(1) + hx_work(2);
  CHECK(s == 5);
  printf("vfork children ok\n");
  /* Without -f the children's calls before their exec are on the parent's memory and
   * are reported as the parent's; the exec'd image is not traced. */
  printf("calls hx_vfork_spawn=2 hx_vchild=7 hx_work=2 hx_vexec=0\n");
  printf("follow calls hx_vfork_spawn=2 hx_vchild=7 hx_work=2 hx_vexec=5\n");
  printf("proc_calls top hx_vfork_spawn=2 hx_vchild=0 hx_work=2 hx_vexec=0\n");
  printf("proc_calls top/v1 hx_vfork_spawn=0 hx_vchild=3 hx_work=0 hx_vexec=0\n");
  printf("proc_calls top/v2 hx_vfork_spawn=0 hx_vchild=4 hx_work=0 hx_vexec=5\n");
  return 0;
}

/* ---------------------------------------------------------------- clone-nostack */

static unsigned long c_clone1, c_clone2;

TRACED pid_t hx_clone_level2(int exit_signal) {
  BUMP(c_clone2);
  fflush(stdout);
  /* No new stack: the child goes on on a copy of this one, like fork. */
  long pid = syscall(SYS_clone, (unsigned long)exit_signal, 0L, 0L, 0L, 0L);
  CHECK(pid >= 0);
  return (pid_t)pid;
}

TRACED pid_t hx_clone_level1(int exit_signal) {
  BUMP(c_clone1);
  pid_t pid = hx_clone_level2(exit_signal);
  sink = pid;
  return pid;
}

static int do_clone_nostack(void) {
  int sigs[2] = {SIGCHLD, 0};
  for (int k = 0; k < 2; ++k) {
    pid_t pid = hx_clone_level1(sigs[k]);
    if (pid == 0) {
      /* The child returned through both traced frames. */
      long s = 0;
      for (int i = 0; i < 5 + k; ++i) s += hx_work(i);
      _exit(s == (5 + k) * (6 + k) / 2 ? 30 + k : 1);
    }
    CHECK(wait_for(pid, __WALL) == 30 + k);
  }
  sink = hx_work(0);
  printf("clone children ok\n");
  printf("calls hx_clone_level1=2 hx_clone_level2=2 hx_work=1\n");
  printf("follow calls hx_clone_level1=2 hx_clone_level2=2 hx_work=12\n");
  printf("proc_calls top hx_clone_level1=2 hx_clone_level2=2 hx_work=1\n");
  printf("proc_calls top/c1 hx_clone_level1=0 hx_clone_level2=0 hx_work=5\n");
  printf("proc_calls top/c2 hx_clone_level1=0 hx_clone_level2=0 hx_work=6\n");
  return 0;
}

/* ---------------------------------------------------------------- main */

int main(int argc, char** argv) {
  ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
  CHECK(n > 0 && (size_t)n < sizeof self_exe - 1);
  self_exe[n] = '\0';
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "abort-threads") == 0) return do_abort_threads();
  if (strcmp(mode, "stackoverflow") == 0 && argc == 3) return do_stackoverflow(argv[2], 0, 0);
  if (strcmp(mode, "stackoverflow-handled") == 0 && argc == 3)
    return do_stackoverflow(argv[2], 1, 0);
  if (strcmp(mode, "stackoverflow-thread") == 0 && argc == 3)
    return do_stackoverflow(argv[2], 0, 1);
  if (strcmp(mode, "fault-longjmp") == 0) return do_fault_longjmp(0);
  if (strcmp(mode, "fault-longjmp-altstack") == 0) return do_fault_longjmp(1);
  if (strcmp(mode, "blocksig") == 0) return do_blocksig();
  if (strcmp(mode, "ignoresig") == 0) return do_ignoresig();
  if (strcmp(mode, "groupsig") == 0) return do_groupsig();
  if (strcmp(mode, "exec-thread") == 0) return do_exec_thread(0);
  if (strcmp(mode, "exec-thread-noleader") == 0) return do_exec_thread(1);
  if (strcmp(mode, "exec-thread-after") == 0) return do_exec_thread_after();
  if (strcmp(mode, "vfork-calls") == 0) return do_vfork_calls();
  if (strcmp(mode, "vfork-exec-child") == 0) return do_vfork_exec_child();
  if (strcmp(mode, "clone-nostack") == 0) return do_clone_nostack();
  fprintf(stderr, "usage: hostile MODE [FILE]\n");
  return 2;
}
