/* Heap blocks of every leak kind memcheck tells apart, in known numbers
 * (tests/integration/test_leak_kinds.py). Each structure has its own block size,
 * so none can be taken for another:
 *
 *   definitely lost   a 500-byte block whose pointer is dropped; the head (48 bytes)
 *                     of a dropped list; one of a dropped cycle of three 64-byte
 *                     blocks; a 520-byte block whose only pointer was in a block
 *                     released since (a stale pointer in freed memory is none)
 *   indirectly lost   the 4 other nodes (48 bytes) of the list, the 2 other blocks
 *                     of the cycle
 *   possibly lost     a 100-byte block pointed to only 40 bytes in, from a global,
 *                     and the 72-byte block that block points to (by its start)
 *   still reachable   a 200-byte block held by a global and its 80-byte child, a
 *                     300-byte block in the main thread's thread-local storage, a
 *                     400-byte block held by main's stack frame; a 600-byte block
 *                     in the thread-local storage and a 700-byte block on the stack
 *                     of a thread still running at the exit (plus whatever the C
 *                     library itself keeps)
 *
 *   leak_kinds            does all that and calls exit(0) from main
 *   leak_kinds loop N     the same, after N rounds (1 ms each) of allocating and
 *                         freeing, then waits for a line on stdin before exiting:
 *                         for attaching while it leaks (test_attach_leaks)
 *
 * Prints its own expectation first:
 *   expect definite=BYTES/BLOCKS indirect=BYTES/BLOCKS possible=BYTES/BLOCKS
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tracee.h"

struct node {
  struct node* next;
  char pad[40];
};

void* volatile g_reachable;          /* 200 bytes -> 80-byte child */
char* volatile g_interior;           /* 40 bytes into a 100-byte block */
static __thread void* volatile t_main_block; /* 300 bytes */
static __thread void* volatile t_thread_block; /* 600 bytes, the other thread's */
static sem_t ready;
/* Each pointer passes through here once, so that the compiler must make every block;
 * it is cleared again at once. */
void* volatile g_sink;

static void drop(void* p) {
  g_sink = p;
  g_sink = NULL;
}

TRACED void leak_plain(void) {
  void* volatile p = malloc(500);
  memset(p, 1, 500);
}

TRACED void leak_list(void) {
  struct node* head = NULL;
  for (int i = 0; i < 5; ++i) {
    struct node* n = malloc(sizeof *n);
    memset(n, 0, sizeof *n);
    n->next = head;
    head = n;
  }
  drop(head);
}

TRACED void leak_cycle(void) {
  void** a = malloc(64);
  void** b = malloc(64);
  void** c = malloc(64);
  memset(a, 0, 64);
  memset(b, 0, 64);
  memset(c, 0, 64);
  a[0] = b;
  b[0] = c;
  c[0] = a;
  drop(a);
}

TRACED void leak_through_freed(void) {
  void** holder = malloc(256);
  memset(holder, 0, 256);
  holder[3] = malloc(520);
  memset(holder[3], 2, 520);
  drop(holder[3]);
  free(holder);
}

TRACED void possibly_lost(void) {
  void** p = malloc(100);
  memset(p, 0, 100);
  p[0] = malloc(72);
  memset(p[0], 0, 72);
  g_interior = (char*)p + 40;
}

TRACED void still_reachable(void) {
  void** p = malloc(200);
  memset(p, 0, 200);
  p[1] = malloc(80);
  memset(p[1], 0, 80);
  g_reachable = p;
  t_main_block = malloc(300);
  memset(t_main_block, 3, 300);
}

static void* sleeper(void* arg) {
  (void)arg;
  void* volatile on_stack = malloc(700);
  memset(on_stack, 4, 700);
  t_thread_block = malloc(600);
  memset(t_thread_block, 5, 600);
  sem_post(&ready);
  for (;;) pause();
  return on_stack;
}

/* Clears the stack below us, where the functions above left copies of pointers. */
TRACED void scrub_stack(void) {
  volatile char junk[16384];
  memset((char*)junk, 0, sizeof junk);
}

static void churn(int rounds) {
  for (int i = 0; i < rounds; ++i) {
    void* p = malloc(32 + (size_t)(i % 50));
    memset(p, 0, 32);
    free(p);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

int main(int argc, char** argv) {
  int loop = argc > 2 && strcmp(argv[1], "loop") == 0;
  printf("expect definite=%d/%d indirect=%d/%d possible=%d/%d\n", 500 + 48 + 64 + 520, 4, 4 * 48 + 2 * 64, 6,
         100 + 72, 2);
  fflush(stdout);
  if (loop) {
    printf("ready\n");
    fflush(stdout);
    churn(atoi(argv[2]));
  }
  sem_init(&ready, 0, 0);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, sleeper, NULL) == 0);
  sem_wait(&ready);
  leak_plain();
  leak_list();
  leak_cycle();
  leak_through_freed();
  possibly_lost();
  still_reachable();
  scrub_stack();
  void* volatile local = malloc(400);
  memset(local, 6, 400);
  if (loop) {
    printf("leaked\n");
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin)) { /* end of input: exit all the same */
    }
  }
  printf("done\n");
  fflush(stdout);
  exit(0);
}
