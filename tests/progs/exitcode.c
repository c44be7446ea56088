/* Leaves from inside nested traced functions.
 *   exitcode        exit(3) from ec_level2; an atexit handler (traced) runs
 *                   while ec_level1/ec_level2 are still on the stack
 *   exitcode abort  abort() from ec_level2 (SIGABRT, status 134)
 *   exitcode term   raise(SIGTERM) with the default action (status 143)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracee.h"

static volatile long sink;
static unsigned long c_work, c_atexit;

TRACED int ec_work(int x) {
  BUMP(c_work);
  return x * 7;
}

TRACED void ec_at_exit(void) {
  BUMP(c_atexit);
  /* Runs inside exit(): the result goes to stdout, which exit flushes later. */
  if (ec_work(6) != 42 || c_work != 11) _exit(1);
  printf("at_exit ok\n");
}

TRACED int ec_level2(const char* mode) {
  if (strcmp(mode, "abort") == 0) abort();
  if (strcmp(mode, "term") == 0) raise(SIGTERM);
  exit(3);
}

TRACED int ec_level1(const char* mode) {
  int r = ec_level2(mode);
  sink = r;
  return r + 1;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "exit";
  long sum = 0;
  for (int i = 0; i < 10; ++i) sum += ec_work(i);
  CHECK(sum == 7 * 45);
  printf("sum=%ld mode=%s\n", sum, mode);
  if (strcmp(mode, "exit") == 0) {
    CHECK(atexit(ec_at_exit) == 0);
    printf("calls ec_work=11 ec_at_exit=1 ec_level1=1 ec_level2=1\n");
  } else {
    printf("calls ec_work=10 ec_level1=1 ec_level2=1\n");
  }
  printf("unwound exit ec_level1=1 ec_level2=1\n");
  fflush(stdout);
  ec_level1(mode);
  return 1;
}
