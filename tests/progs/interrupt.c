/* A busy target for interrupting functracer (tests/integration/test_interrupt.py).
 *
 *   interrupt handler SECONDS  Four threads loop calling ir_level1 -> ir_level2 ->
 *                              ir_work (ir_level2 allocates, fills and checks a
 *                              buffer), every result checked. SIGINT and SIGTERM
 *                              have a handler that counts them. Prints "ready"
 *                              once the handlers are installed and the threads
 *                              run. When a signal has come, the threads are
 *                              stopped and joined, further copies of it are
 *                              awaited for 300 ms, and the program prints
 *                              "caught SIG... count=N" and exits 64+signal
 *                              number. Without a signal within SECONDS it
 *                              prints "done" and exits 0.
 *   interrupt plain SECONDS    The same work with the default dispositions: a
 *                              SIGINT or SIGTERM kills it. "done" after SECONDS.
 *   interrupt family SECONDS   Forks two children, each of which forks a
 *                              grandchild; all five processes do the work of
 *                              "plain" with one thread. The parent prints
 *                              "pids P C1 C2 G1 G2" once all are running, then
 *                              "ready"; each process ends after SECONDS, the
 *                              parent after reaping its children, which must
 *                              all exit 0.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tracee.h"

#define THREADS 4

static volatile sig_atomic_t got_signal;
static volatile sig_atomic_t signal_count;
static volatile int stop_work;
static volatile long sink;
static double deadline;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

TRACED long ir_work(long x) { return x * 5 + 3; }

TRACED long ir_level2(long x) {
  long r = ir_work(x);
  size_t n = 16 + (size_t)(x % 200);
  unsigned char* buf = malloc(n);
  CHECK(buf != NULL);
  for (size_t i = 0; i < n; ++i) buf[i] = (unsigned char)(x + i);
  unsigned long sum = 0;
  for (size_t i = 0; i < n; ++i) sum += buf[i];
  unsigned long want = 0;
  for (size_t i = 0; i < n; ++i) want += (unsigned char)(x + i);
  CHECK(sum == want);
  free(buf);
  sink = r;
  return r + 1;
}

TRACED long ir_level1(long x) {
  long r = ir_level2(x + 1);
  sink = r;
  return r + 1;
}

static void* loop(void* arg) {
  long base = (long)arg;
  for (long i = 0; !stop_work; ++i) {
    long x = base + i % 100000;
    CHECK(ir_level1(x) == (x + 1) * 5 + 3 + 2);
    if ((i & 63) == 0 && now() > deadline) break;
  }
  return NULL;
}

static void on_signal(int sig) {
  got_signal = sig;
  signal_count = signal_count + 1;
}

static void install(int sig) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  CHECK(sigaction(sig, &sa, NULL) == 0);
}

static int threads_mode(int handler) {
  if (handler) {
    install(SIGINT);
    install(SIGTERM);
  }
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; ++i) CHECK(pthread_create(&t[i], NULL, loop, (void*)(i * 1000000L)) == 0);
  printf("ready\n");
  fflush(stdout);
  while (!got_signal && now() < deadline) {
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  stop_work = 1;
  for (int i = 0; i < THREADS; ++i) CHECK(pthread_join(t[i], NULL) == 0);
  if (got_signal) {
    /* A second copy of the signal (sent twice, or by functracer on top of the
     * sender) would arrive now. */
    struct timespec ts = {0, 300 * 1000 * 1000};
    while (nanosleep(&ts, &ts) != 0) {
    }
    int sig = got_signal;
    printf("caught %s count=%d\n", sig == SIGINT ? "SIGINT" : "SIGTERM", (int)signal_count);
    return 64 + sig;
  }
  printf("done\n");
  return 0;
}

static int family_mode(void) {
  int to_parent[2];
  CHECK(pipe(to_parent) == 0);
  pid_t kids[4];
  int n = 0;
  for (int c = 0; c < 2; ++c) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      pid_t g = fork();
      CHECK(g >= 0);
      if (g == 0) {
        CHECK(write(to_parent[1], &(pid_t){getpid()}, sizeof(pid_t)) == sizeof(pid_t));
        loop(NULL);
        _exit(0);
      }
      CHECK(write(to_parent[1], &(pid_t){getpid()}, sizeof(pid_t)) == sizeof(pid_t));
      loop(NULL);
      int st;
      CHECK(waitpid(g, &st, 0) == g);
      _exit(WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1);
    }
    kids[n++] = pid;
  }
  printf("pids %d", (int)getpid());
  for (int i = 0; i < 4; ++i) {
    pid_t p;
    CHECK(read(to_parent[0], &p, sizeof p) == sizeof p);
    printf(" %d", (int)p);
  }
  printf("\nready\n");
  fflush(stdout);
  loop(NULL);
  for (int i = 0; i < n; ++i) {
    int st;
    CHECK(waitpid(kids[i], &st, 0) == kids[i]);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  printf("done\n");
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: interrupt handler|plain|family SECONDS\n");
    return 2;
  }
  deadline = now() + atof(argv[2]);
  if (strcmp(argv[1], "handler") == 0) return threads_mode(1);
  if (strcmp(argv[1], "plain") == 0) return threads_mode(0);
  if (strcmp(argv[1], "family") == 0) return family_mode();
  fprintf(stderr, "interrupt: unknown mode %s\n", argv[1]);
  return 2;
}
