/* A target for attach mode (functracer -p PID).
 *
 *   attach [ITERATIONS]   Four threads loop calling at_level1 -> at_level2 ->
 *                         at_work; at_level2 also allocates, fills and checks a
 *                         buffer, and sleeps 1 ms between calling at_work and
 *                         returning, so whenever the tracer attaches or detaches
 *                         traced frames are on every stack (with their return
 *                         addresses possibly replaced). Every result is checked.
 *                         Prints "ready" once the threads run and "done ..." at
 *                         the end (exit 0). Run time is about ITERATIONS ms.
 *   attach spawn [ROUNDS] Creates threads all the time: each round starts four
 *                         threads that call at_level1 five times and exit, and
 *                         joins them (threads appear and vanish while functracer
 *                         attaches and detaches). "done rounds=N" at the end.
 *                         ROUNDS 0: rounds until stdin ends.
 *   attach until-eof      Four threads loop as above for as long as stdin stays
 *                         open, while the main thread blocks in read(2) on it;
 *                         at end of input they stop and are joined. Prints
 *                         "ready" once the threads run and "done until-eof
 *                         threads=4" at the end (exit 0) once every thread made
 *                         at least one call and every result was right.
 *   attach forker         A server that forks: two threads loop as in until-eof
 *                         while the main thread, every 20 ms, forks a child from
 *                         inside at_spawn (so that the fork happens in a traced
 *                         call, and the child returns from it too); the child
 *                         frees the blocks the server allocated at its start,
 *                         calls at_level1 20 times, checks every result, and exits
 *                         0. The parent waits for each child; a child that dies of
 *                         a signal or fails its checks is printed at once
 *                         ("child PID failed: ...") and after each child
 *                         "children=N". At end of input: "done forker
 *                         children=N failed=F" (exit 0 when F is 0 and the threads'
 *                         checks held).
 *   attach read           Blocks in read(2) on stdin; every line read is passed
 *                         to at_line, whose result is printed. Prints "ready"
 *                         first and "done lines=N" at end of input.
 */
#include <poll.h>
#include <pthread.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tracee.h"

#define THREADS 4

static int iterations = 1500;
static volatile long sink;
static volatile int stop_looping;

TRACED long at_work(long x) { return x * 5 + 3; }

TRACED long at_level2(long x) {
  long r = at_work(x);
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
  struct timespec ts = {0, 1000 * 1000};
  nanosleep(&ts, NULL);
  sink = r;
  return r + 1;
}

TRACED long at_level1(long x) {
  long r = at_level2(x + 1);
  sink = r;
  return r + 1;
}

static void* loop(void* arg) {
  long base = (long)arg;
  long bad = 0;
  for (int i = 0; i < iterations; ++i) {
    long x = base + i;
    if (at_level1(x) != (x + 1) * 5 + 3 + 2) ++bad;
  }
  return (void*)bad;
}

TRACED unsigned long at_line(const char* line, size_t len) {
  unsigned long h = 5381;
  for (size_t i = 0; i < len; ++i) h = h * 33 + (unsigned char)line[i];
  return h;
}

static void* short_lived(void* arg) {
  long base = (long)arg;
  long bad = 0;
  for (int i = 0; i < 5; ++i) {
    long x = base + i;
    if (at_level1(x) != (x + 1) * 5 + 3 + 2) ++bad;
  }
  return (void*)bad;
}

static void* loop_until_stopped(void* arg) {
  long base = (long)arg;
  long bad = 0, done = 0;
  for (long i = 0; !stop_looping; ++i) {
    long x = base + i;
    if (at_level1(x) != (x + 1) * 5 + 3 + 2) ++bad;
    ++done;
  }
  return (void*)(bad == 0 && done > 0 ? 0L : 1L);
}

static int until_eof_mode(void) {
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; ++i) CHECK(pthread_create(&t[i], NULL, loop_until_stopped, (void*)(i * 1000000L)) == 0);
  printf("ready\n");
  fflush(stdout);
  char buf[512];
  ssize_t n;
  while ((n = read(0, buf, sizeof buf)) != 0) CHECK(n > 0);
  stop_looping = 1;
  long bad = 0;
  for (int i = 0; i < THREADS; ++i) {
    void* r;
    CHECK(pthread_join(t[i], &r) == 0);
    bad += (long)r;
  }
  CHECK(bad == 0);
  printf("done until-eof threads=%d\n", THREADS);
  return 0;
}

/* Whether stdin has ended (without waiting). */
static int input_ended(void) {
  struct pollfd pfd = {.fd = 0, .events = POLLIN};
  if (poll(&pfd, 1, 0) <= 0) return 0;
  char buf[512];
  return read(0, buf, sizeof buf) <= 0;
}

static int spawn_mode(int rounds) {
  printf("ready\n");
  fflush(stdout);
  long bad = 0;
  int r = 0;
  for (; rounds > 0 ? r < rounds : !input_ended(); ++r) {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; ++i) CHECK(pthread_create(&t[i], NULL, short_lived, (void*)(r * 100L + i * 10)) == 0);
    for (int i = 0; i < THREADS; ++i) {
      void* res;
      CHECK(pthread_join(t[i], &res) == 0);
      bad += (long)res;
    }
  }
  CHECK(bad == 0);
  printf("done rounds=%d\n", r);
  return 0;
}

/* Blocks the server allocated when it started, before any attach: each child frees
 * its copies of them (a child of an attached server releases blocks whose
 * allocation no trace has seen). */
#define INHERITED 8
static char* inherited[INHERITED];

/* The child's work, in the child; its exit status. */
static int child_work(void) {
  long bad = 0;
  for (int i = 0; i < INHERITED; ++i) {
    if (inherited[i][0] != (char)('a' + i)) ++bad;
    free(inherited[i]);
  }
  for (long i = 0; i < 20; ++i)
    if (at_level1(i) != (i + 1) * 5 + 3 + 2) ++bad;
  return bad == 0 ? 0 : 1;
}

/* Forks; the child does its work and exits from here, after returning from this
 * traced call. The parent gets the child's pid. */
TRACED pid_t at_spawn(long round) {
  pid_t pid = fork();
  sink = round;
  return pid;
}

static int forker_mode(void) {
  for (int i = 0; i < INHERITED; ++i) {
    inherited[i] = malloc(100 + (size_t)i);
    CHECK(inherited[i] != NULL);
    inherited[i][0] = (char)('a' + i);
  }
  pthread_t t[2];
  for (long i = 0; i < 2; ++i) CHECK(pthread_create(&t[i], NULL, loop_until_stopped, (void*)(i * 1000000L)) == 0);
  printf("ready\n");
  fflush(stdout);
  int children = 0, failed = 0;
  for (long round = 0; !input_ended(); ++round) {
    pid_t pid = at_spawn(round);
    if (pid == 0) _exit(child_work());
    CHECK(pid > 0);
    ++children;
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failed;
      if (WIFSIGNALED(status))
        printf("child %d failed: signal %d\n", (int)pid, WTERMSIG(status));
      else
        printf("child %d failed: exit status %d\n", (int)pid, WEXITSTATUS(status));
      fflush(stdout);
    }
    printf("children=%d\n", children);
    fflush(stdout);
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  stop_looping = 1;
  long bad = 0;
  for (int i = 0; i < 2; ++i) {
    void* r;
    CHECK(pthread_join(t[i], &r) == 0);
    bad += (long)r;
  }
  CHECK(bad == 0);
  printf("done forker children=%d failed=%d\n", children, failed);
  return failed == 0 ? 0 : 1;
}

static int read_mode(void) {
  printf("ready\n");
  fflush(stdout);
  char buf[4096];
  size_t have = 0;
  int lines = 0;
  for (;;) {
    ssize_t n = read(0, buf + have, sizeof buf - have);
    CHECK(n >= 0);
    if (n == 0) break;
    have += (size_t)n;
    char* nl;
    while ((nl = memchr(buf, '\n', have)) != NULL) {
      size_t len = (size_t)(nl - buf);
      printf("%.*s %lu\n", (int)len, buf, at_line(buf, len));
      fflush(stdout);
      ++lines;
      memmove(buf, nl + 1, have - len - 1);
      have -= len + 1;
    }
    CHECK(have < sizeof buf);
  }
  printf("done lines=%d\n", lines);
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "read") == 0) return read_mode();
  if (argc > 1 && strcmp(argv[1], "until-eof") == 0) return until_eof_mode();
  if (argc > 1 && strcmp(argv[1], "forker") == 0) return forker_mode();
  if (argc > 1 && strcmp(argv[1], "spawn") == 0) return spawn_mode(argc > 2 ? atoi(argv[2]) : 300);
  if (argc > 1) iterations = atoi(argv[1]);
  pthread_t t[THREADS - 1];
  for (long i = 1; i < THREADS; ++i) CHECK(pthread_create(&t[i - 1], NULL, loop, (void*)(i * 1000000L)) == 0);
  printf("ready\n");
  fflush(stdout);
  long bad = (long)loop((void*)0);
  for (int i = 1; i < THREADS; ++i) {
    void* r;
    CHECK(pthread_join(t[i - 1], &r) == 0);
    bad += (long)r;
  }
  CHECK(bad == 0);
  printf("done iterations=%d threads=%d\n", iterations, THREADS);
  return 0;
}
