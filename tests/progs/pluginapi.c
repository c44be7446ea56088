/* The program of the plugin API test (tests/integration/test_plugin_api.py).
 *
 *  - Everything it prints on stdout goes out through write(2) on fd 1 (in
 *    pa_writer), one call per line, never through stdio: its stdout is exactly
 *    the bytes of its write calls on fd 1. It also writes one line on fd 2
 *    and tries one write on a closed descriptor (fails with EBADF), which a
 *    count of the writes on fd 1 must leave out.
 *  - pa_leaf is called only through main -> pa_top -> pa_mid -> pa_leaf.
 *
 * Its last two lines:
 *   calls pa_top=N pa_mid=N pa_leaf=N pa_writer=N
 *   writes fd1=N closed_fd=FD
 * where N of "writes" counts every write on fd 1, the one of that line too. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracee.h"

#define CLOSED_FD 99

static unsigned long c_top, c_mid, c_leaf, c_writer;
static volatile long sink;

TRACED long pa_leaf(long x) {
  BUMP(c_leaf);
  return 3 * x + 1;
}

TRACED long pa_mid(long x) {
  BUMP(c_mid);
  long r = pa_leaf(x + 1);
  sink = r; /* no tail call: pa_mid stays on the stack */
  return r + 1;
}

TRACED long pa_top(long x) {
  BUMP(c_top);
  long r = pa_mid(x + 1);
  sink = r;
  return r + 1;
}

TRACED void pa_writer(const char* line) {
  BUMP(c_writer);
  size_t n = strlen(line);
  CHECK(write(1, line, n) == (ssize_t)n);
}

int main(void) {
  char buf[160];
  for (long i = 0; i < 3; ++i) {
    long r = pa_top(i);
    CHECK(r == 3 * (i + 2) + 3);
    snprintf(buf, sizeof buf, "chain %ld: %ld\n", i, r);
    pa_writer(buf);
  }
  for (int i = 1; i <= 5; ++i) {
    /* lines of different lengths */
    snprintf(buf, sizeof buf, "line %d of 5 %.*s\n", i, 8 * i, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
    pa_writer(buf);
  }
  static const char err_line[] = "a line on stderr\n";
  CHECK(write(2, err_line, sizeof err_line - 1) == (ssize_t)(sizeof err_line - 1));
  close(CLOSED_FD);
  CHECK(write(CLOSED_FD, "x", 1) == -1 && errno == EBADF);

  snprintf(buf, sizeof buf, "calls pa_top=%lu pa_mid=%lu pa_leaf=%lu pa_writer=%lu\n", c_top, c_mid, c_leaf,
           c_writer + 2 /* this line and the next */);
  pa_writer(buf);
  snprintf(buf, sizeof buf, "writes fd1=%lu closed_fd=%d\n", c_writer + 1, CLOSED_FD);
  pa_writer(buf);
  return 0;
}
