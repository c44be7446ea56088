/* The tracee of tests/integration/test_call_log.py, which builds it itself (with -pg
 * for uftrace too): known calls of its own functions, of libcalllog.so and of libc,
 * calls that last long (cl_sleep) and short ones, a function that fails (returns -1)
 * a known number of times, and a string argument of known length.
 *
 * Own functions, per run: main -> cl_outer x2 -> cl_middle x3 each -> cl_leaf x2 each;
 * main -> cl_sleep x2 (100 ms each) -> cl_leaf x1 each; cl_fail x5 (3 of them -1);
 * cl_str x1. libcalllog.so: cl_lib_a x4, cl_lib_b x2 (cl_lib_b calls cl_lib_a once
 * more each time, from inside the library). libc from the program: strlen x8 (one in cl_str),
 * getenv x3, atoi x1, dup x1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cl_lib_a(int x);
int cl_lib_b(int x);

__attribute__((noinline)) int cl_leaf(int x) { return x + 1; }

__attribute__((noinline)) int cl_middle(int x) { return cl_leaf(x) + cl_leaf(x + 1); }

__attribute__((noinline)) int cl_outer(int x) {
  int s = 0;
  for (int i = 0; i < 3; ++i) s += cl_middle(x + i);
  return s;
}

__attribute__((noinline)) int cl_sleep(int ms) {
  usleep((useconds_t)ms * 1000);
  return cl_leaf(ms);
}

__attribute__((noinline)) int cl_fail(int i) { return i % 2 == 0 ? -1 : i; }

__attribute__((noinline)) size_t cl_str(const char *s) { return strlen(s); }

int main(int argc, char **argv) {
  (void)argc;
  long total = 0;
  for (int i = 0; i < 2; ++i) total += cl_outer(i);
  for (int i = 0; i < 2; ++i) total += cl_sleep(100);
  int failures = 0;
  for (int i = 0; i < 5; ++i)
    if (cl_fail(i) < 0) failures++;
  total += (long)cl_str("abcdefghijklmnopqrstuvwxyz");
  for (int i = 0; i < 4; ++i) total += cl_lib_a(i);
  for (int i = 0; i < 2; ++i) total += cl_lib_b(i);
  size_t n = 0;
  for (int i = 0; i < 7; ++i) n += strlen(argv[0]);
  for (int i = 0; i < 3; ++i)
    if (getenv("CALLLOG_NO_SUCH_VARIABLE")) n++;
  total += atoi("12");
  int fd = dup(-1);
  printf("calllog: total %ld failures %d fd %d strlen-sum %zu\n", total, failures, fd, n);
  return failures == 3 && fd == -1 ? 0 : 1;
}
