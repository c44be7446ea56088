/* Signal handlers that run traced code while the main program is itself in
 * the middle of traced code.
 *
 *  SIGALRM: a one-shot ITIMER_REAL is armed 20 times; the main loop calls
 *    sg_busy until the tick has arrived. The traced handler sg_alarm_handler
 *    calls the traced sg_tick. The tick lands either inside sg_busy or in
 *    sigsuspend, depending on speed; the counts do not depend on which.
 *  SIGUSR1: sg_send_usr1 calls raise(); the traced handler sg_on_usr1 runs on
 *    the normal stack and calls sg_usr_work.
 *  SIGUSR2: same through sg_send_usr2, but the handler sg_on_usr2 runs on an
 *    alternate signal stack (sigaltstack).
 *  A storm: SIGALRM every 211 us while sg_leaf is called back to back, until
 *    STORM_TICKS ticks have come; the handler calls sg_storm, which calls sg_leaf
 *    too. The signals land anywhere in a call or in its tracing (entry, return, in
 *    the tracer's code in the process). How many times sg_leaf runs depends on the
 *    speed, so it is not in the calls line; the program checks its sums. sg_leaf is
 *    not TRACED: without noipa, GCC's interprocedural register allocation (-fipa-ra,
 *    on at -O2) lets the caller keep its loop state in call-clobbered registers
 *    across the call, relying on what it knows sg_leaf touches; the sums check that
 *    nothing else was touched.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "tracee.h"

#define TICKS 20
#define BUSY_PER_ROUND 50
#define USR_ROUNDS 10
#define STORM_TICKS 40

static volatile sig_atomic_t ticks;
static volatile long sink;
static volatile unsigned long c_alarm, c_tick, c_busy, c_send1, c_on1, c_send2, c_on2, c_work, c_leaf, c_storm;
static volatile sig_atomic_t storm_ticks;
static volatile long storm_sink;
static char altstack[64 * 1024] __attribute__((aligned(16)));
static volatile int usr2_on_altstack = 1;

TRACED long sg_tick(int n) {
  BUMP(c_tick);
  sink += n;
  return n;
}

TRACED void sg_alarm_handler(int sig) {
  BUMP(c_alarm);
  if (sig != SIGALRM) abort();
  sg_tick(ticks);
  ticks = ticks + 1;
}

TRACED long sg_busy(int j) {
  BUMP(c_busy);
  long s = 0;
  for (volatile int k = 0; k < 2000; ++k) s += k ^ j;
  return s;
}

TRACED long sg_usr_work(int sig) {
  BUMP(c_work);
  return sig * 2;
}

TRACED void sg_on_usr1(int sig) {
  BUMP(c_on1);
  sink += sg_usr_work(sig);
}

TRACED void sg_on_usr2(int sig) {
  BUMP(c_on2);
  char here;
  uintptr_t p = (uintptr_t)&here;
  if (p < (uintptr_t)altstack || p >= (uintptr_t)altstack + sizeof altstack) usr2_on_altstack = 0;
  sink += sg_usr_work(sig);
}

TRACED int sg_send_usr1(int i) {
  BUMP(c_send1);
  raise(SIGUSR1);
  return i;
}

TRACED int sg_send_usr2(int i) {
  BUMP(c_send2);
  raise(SIGUSR2);
  return i;
}

__attribute__((noinline, noclone)) static long sg_leaf(long j) {
  BUMP_ATOMIC(c_leaf); /* one instruction: the handler's sg_leaf may come between two */
  return j * 3 + 1;
}

TRACED void sg_storm(int tick) {
  BUMP(c_storm);
  storm_sink += sg_leaf(tick);
}

/* Ticks that come after the last one (before the timer is off) call nothing. */
static void storm_handler(int sig) {
  if (sig != SIGALRM) abort();
  if (storm_ticks >= STORM_TICKS) return;
  sg_storm(storm_ticks);
  storm_ticks = storm_ticks + 1;
}

/* The loop of the storm, small enough that its state fits the registers sg_leaf
 * leaves alone. Returns the calls made, their sum in *sum. */
__attribute__((noinline)) static long storm_calls(long* sum) {
  long n = 0, s = 0;
  while (storm_ticks < STORM_TICKS) s += sg_leaf(n++);
  *sum = s;
  return n;
}

static void install(int sig, void (*fn)(int), int flags) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fn;
  sa.sa_flags = flags;
  sigemptyset(&sa.sa_mask);
  CHECK(sigaction(sig, &sa, NULL) == 0);
}

int main(void) {
  install(SIGALRM, sg_alarm_handler, SA_RESTART);
  install(SIGUSR1, sg_on_usr1, 0);
  install(SIGUSR2, sg_on_usr2, SA_ONSTACK);
  stack_t ss;
  memset(&ss, 0, sizeof ss);
  ss.ss_sp = altstack;
  ss.ss_size = sizeof altstack;
  CHECK(sigaltstack(&ss, NULL) == 0);

  sigset_t alrm, old;
  sigemptyset(&alrm);
  sigaddset(&alrm, SIGALRM);
  long busy_sum = 0;
  for (int round = 0; round < TICKS; ++round) {
    struct itimerval it;
    memset(&it, 0, sizeof it);
    it.it_value.tv_usec = 500; /* one shot */
    CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
    for (int j = 0; j < BUSY_PER_ROUND; ++j) busy_sum += sg_busy(j);
    CHECK(sigprocmask(SIG_BLOCK, &alrm, &old) == 0);
    while (ticks <= round) sigsuspend(&old);
    CHECK(sigprocmask(SIG_SETMASK, &old, NULL) == 0);
  }
  CHECK(ticks == TICKS);

  long usr_sum = 0;
  for (int i = 0; i < USR_ROUNDS; ++i) {
    usr_sum += sg_send_usr1(i);
    usr_sum += sg_send_usr2(i);
  }
  CHECK(usr2_on_altstack);

  /* The storm. */
  install(SIGALRM, storm_handler, SA_RESTART);
  struct itimerval every;
  memset(&every, 0, sizeof every);
  every.it_value.tv_usec = every.it_interval.tv_usec = 211;
  CHECK(setitimer(ITIMER_REAL, &every, NULL) == 0);
  long leaf_sum = 0;
  long leaf_calls = storm_calls(&leaf_sum);
  memset(&every, 0, sizeof every);
  CHECK(setitimer(ITIMER_REAL, &every, NULL) == 0);
  CHECK(leaf_sum == 3 * (leaf_calls * (leaf_calls - 1) / 2) + leaf_calls);
  CHECK(c_leaf == (unsigned long)leaf_calls + c_storm && c_storm == (unsigned long)storm_ticks);

  long want_busy = 0;
  for (int j = 0; j < BUSY_PER_ROUND; ++j)
    for (int k = 0; k < 2000; ++k) want_busy += k ^ j;
  CHECK(busy_sum == want_busy * TICKS);
  CHECK(c_alarm == TICKS && c_tick == TICKS && c_busy == TICKS * BUSY_PER_ROUND);
  CHECK(c_send1 == USR_ROUNDS && c_on1 == USR_ROUNDS && c_send2 == USR_ROUNDS &&
        c_on2 == USR_ROUNDS && c_work == 2 * USR_ROUNDS);
  printf("ticks=%d busy_sum=%ld usr_sum=%ld\n", (int)ticks, busy_sum, usr_sum);
  printf("calls sg_alarm_handler=%lu sg_tick=%lu sg_busy=%lu sg_send_usr1=%lu sg_on_usr1=%lu "
         "sg_send_usr2=%lu sg_on_usr2=%lu sg_usr_work=%lu sg_storm=%lu\n",
         c_alarm, c_tick, c_busy, c_send1, c_on1, c_send2, c_on2, c_work, c_storm);
  return 0;
}
