/* A program whose heap holds millions of blocks: what a memory limit on functracer
 * meets first (memtrace's table of live blocks grows with them).
 *
 *   hoard BLOCKS   Allocates BLOCKS blocks of 16..79 bytes and keeps them; then, in
 *                  rounds until stdin ends, frees and allocates each of them again,
 *                  checking that every block still holds what was written into it.
 *                  Prints "ready" once the first round is done and "done rounds=N"
 *                  at the end (exit 0; a block found changed is a failed check).
 *   hoard steps    Reads one command per line from stdin and answers one line on
 *                  stdout: "a" allocates a 64-byte block and prints its address
 *                  ("a 0x..."), "f" frees the last one ("f"). For tests that switch
 *                  tracing off and on between the steps.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracee.h"

static int input_ended(void) {
  struct pollfd pfd = {.fd = 0, .events = POLLIN};
  return poll(&pfd, 1, 0) > 0;
}

static int steps(void) {
  char line[64];
  void* last = NULL;
  while (fgets(line, sizeof line, stdin)) {
    if (line[0] == 'a') {
      last = malloc(64);
      CHECK(last != NULL);
      printf("a %p\n", last);
    } else if (line[0] == 'f') {
      free(last);
      printf("f\n");
    }
    fflush(stdout);
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "steps") == 0) return steps();
  long n = argc > 1 ? atol(argv[1]) : 1000000;
  unsigned char** v = calloc((size_t)n, sizeof *v);
  CHECK(v != NULL);
  long rounds = 0;
  for (;; ++rounds) {
    for (long i = 0; i < n; ++i) {
      size_t len = 16 + (size_t)(i & 63);
      if (v[i]) {
        CHECK(v[i][0] == (unsigned char)i && v[i][len - 1] == (unsigned char)(i >> 8));
        free(v[i]);
      }
      v[i] = malloc(len);
      CHECK(v[i] != NULL);
      v[i][0] = (unsigned char)i;
      v[i][len - 1] = (unsigned char)(i >> 8);
    }
    if (rounds == 0) {
      printf("ready\n");
      fflush(stdout);
    }
    if (input_ended()) break;
  }
  printf("done rounds=%ld\n", rounds + 1);
  return 0;
}
