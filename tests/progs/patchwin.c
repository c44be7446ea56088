/* Threads stopped where an entry patch would write, at the moment functracer attaches:
 *
 *  - pw_copy's thread spends its time in a `rep movsb` that starts at byte 3 of the
 *    function, inside the first five bytes a 5-byte jump would replace (a string
 *    instruction is interrupted and resumed where it was, so a stop finds the pc
 *    there);
 *  - pw_read's thread is blocked in read(2), its `syscall` at bytes 3..4: the pc is at
 *    byte 5, and the kernel restarts the call at byte 3 when the thread resumes.
 *
 * A tracer that patched either entry while a thread sat there would send the thread
 * into the middle of its jump.
 *
 * usage: patchwin ROUNDS
 * Prints "ready" once both threads are at work, then waits for a line on stdin (the
 * test attaches meanwhile). Then writes ROUNDS messages into a pipe with a short pause
 * between them (and calls pw_tick once per message), which pw_read's thread reads one
 * call each, while pw_copy's thread
 * copies a large buffer over and over until the last message is read. Every copy and
 * every message is checked; the program prints its counts and exits 0 only when all
 * of them were right. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tracee.h"

/* void *pw_copy(void *dst, const void *src, size_t n): returns dst. */
__asm__(".text\n"
        ".globl pw_copy\n"
        ".type pw_copy, @function\n"
        "pw_copy:\n"
        "  mov %rdx, %rcx\n" /* 3 bytes */
        "  rep movsb\n"      /* bytes 3..4 */
        "  mov %rdi, %rax\n" /* dst + n */
        "  sub %rdx, %rax\n"
        "  ret\n"
        ".size pw_copy, .-pw_copy\n"
        /* ssize_t pw_read(int fd, void *buf, size_t n): read(2) by hand. */
        ".globl pw_read\n"
        ".type pw_read, @function\n"
        "pw_read:\n"
        "  xor %eax, %eax\n" /* 2 bytes: SYS_read */
        "  nop\n"            /* 1 byte */
        "  syscall\n"        /* bytes 3..4 */
        "  ret\n"
        ".size pw_read, .-pw_read\n");
void* pw_copy(void* dst, const void* src, size_t n);
ssize_t pw_read(int fd, void* buf, size_t n);

#define MSG 24

/* An ordinary function the main thread calls once per message: its entry can be
 * patched. */
static long ticks;
TRACED long pw_tick(long i) {
  ticks += i;
  return ticks * 3 + 1;
}
#define COPY_BYTES (32u << 20)

static int fds[2];
static int rounds;
static int received, bad_messages;
static volatile long copies;
static long bad_copies;
static volatile int reading, copying, stop_copying;

static void* reader(void* arg) {
  (void)arg;
  for (int i = 0; i < rounds; ++i) {
    char buf[MSG], want[MSG] = {0};
    snprintf(want, sizeof want, "message %06d", i);
    reading = 1;
    size_t got = 0;
    while (got < MSG) {
      ssize_t n = pw_read(fds[0], buf + got, MSG - got);
      if (n <= 0) {
        ++bad_messages;
        return NULL;
      }
      got += (size_t)n;
    }
    if (memcmp(buf, want, MSG) != 0) ++bad_messages;
    ++received;
  }
  stop_copying = 1;
  return NULL;
}

static void* copier(void* arg) {
  (void)arg;
  unsigned char* src = malloc(COPY_BYTES);
  unsigned char* dst = malloc(COPY_BYTES);
  if (!src || !dst) exit(2);
  for (size_t i = 0; i < COPY_BYTES; ++i) src[i] = (unsigned char)(i * 7 + 1);
  while (!stop_copying) {
    copying = 1;
    src[copies % COPY_BYTES] ^= 0x5a; /* each copy differs from the one before */
    if (pw_copy(dst, src, COPY_BYTES) != dst) ++bad_copies;
    /* A sample of the bytes (the changed one among them), so that the thread spends
     * its time in pw_copy's rep movsb. */
    for (size_t k = copies % 4096; k < COPY_BYTES; k += 4093)
      if (dst[k] != src[k]) ++bad_copies;
    if (dst[copies % COPY_BYTES] != src[copies % COPY_BYTES]) ++bad_copies;
    ++copies;
  }
  free(src);
  free(dst);
  return NULL;
}

int main(int argc, char** argv) {
  rounds = argc > 1 ? atoi(argv[1]) : 50;
  if (pipe(fds) != 0) return 2;
  pthread_t r, c;
  if (pthread_create(&r, NULL, reader, NULL) != 0 || pthread_create(&c, NULL, copier, NULL) != 0) return 2;
  while (!reading || !copying) usleep(1000);
  usleep(50000); /* in pw_read's system call by now */
  printf("ready\n");
  fflush(stdout);
  char line[64];
  if (!fgets(line, sizeof line, stdin)) return 2;
  long copies_at_go = copies;
  for (int i = 0; i < rounds; ++i) {
    char msg[MSG] = {0};
    snprintf(msg, sizeof msg, "message %06d", i);
    if (pw_tick(i) != (ticks * 3 + 1)) return 2;
    if (write(fds[1], msg, MSG) != MSG) return 2;
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
  pthread_join(r, NULL);
  pthread_join(c, NULL);
  printf("received=%d bad_messages=%d copies=%ld copies_at_go=%ld bad_copies=%ld\n", received, bad_messages,
         copies, copies_at_go, bad_copies);
  long want_ticks = (long)rounds * (rounds - 1) / 2;
  printf("calls pw_tick=%d\n", rounds);
  return received == rounds && bad_messages == 0 && bad_copies == 0 && copies > 0 && ticks == want_ticks ? 0 : 1;
}
