// C++ names for test_call_log.py's -C check: a namespaced member function and an
// overloaded free function, called a known number of times.
#include <cstdio>

namespace calllog {
struct Counter {
  __attribute__((noinline)) int bump(int by);
  int n = 0;
};
int Counter::bump(int by) { return n += by; }
}  // namespace calllog

__attribute__((noinline)) int cl_over(int x) { return x + 1; }
__attribute__((noinline)) double cl_over(double x) { return x * 2; }

int main() {
  calllog::Counter c;
  for (int i = 0; i < 3; ++i) c.bump(i);
  double d = cl_over(1.5) + cl_over(2);
  std::printf("calllog_cxx: %d %g\n", c.n, d);
  return c.n == 3 ? 0 : 1;
}
