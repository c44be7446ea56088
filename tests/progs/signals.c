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

static volatile sig_atomic_t ticks;
static volatile long sink;
static volatile unsigned long c_alarm, c_tick, c_busy, c_send1, c_on1, c_send2, c_on2, c_work;
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

  long want_busy = 0;
  for (int j = 0; j < BUSY_PER_ROUND; ++j)
    for (int k = 0; k < 2000; ++k) want_busy += k ^ j;
  CHECK(busy_sum == want_busy * TICKS);
  CHECK(c_alarm == TICKS && c_tick == TICKS && c_busy == TICKS * BUSY_PER_ROUND);
  CHECK(c_send1 == USR_ROUNDS && c_on1 == USR_ROUNDS && c_send2 == USR_ROUNDS &&
        c_on2 == USR_ROUNDS && c_work == 2 * USR_ROUNDS);
  printf("ticks=%d busy_sum=%ld usr_sum=%ld\n", (int)ticks, busy_sum, usr_sum);
  printf("calls sg_alarm_handler=%lu sg_tick=%lu sg_busy=%lu sg_send_usr1=%lu sg_on_usr1=%lu "
         "sg_send_usr2=%lu sg_on_usr2=%lu sg_usr_work=%lu\n",
         c_alarm, c_tick, c_busy, c_send1, c_on1, c_send2, c_on2, c_work);
  return 0;
}
