// A library built without debug information (tests/progs/meson.build): its
// functions' types are known to functracer only from a prototype file
// (protolib.protos) or not at all.
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

int pl_add3(int a, int b, int c) { return a + b + c; }
size_t pl_strlen(const char *s) {
  size_t n = 0;
  while (s[n]) ++n;
  return n;
}
double pl_scale(double x, int n) { return x * n; }
float pl_halve(float x) { return x / 2; }
char *pl_greet(const char *who) {
  static char buf[64];
  snprintf(buf, sizeof buf, "hello, %s", who);
  return buf;
}
long pl_sum(int n, ...) {
  va_list ap;
  va_start(ap, n);
  long s = 0;
  for (int i = 0; i < n; ++i) s += va_arg(ap, int);
  va_end(ap);
  return s;
}
