/* Argument and return values of every class: integers of several sizes and
 * signedness, strings, float and double (floating-point registers), mixed so that
 * register order differs from parameter order. The expected renderings are in
 * tests/integration/test_values.py; they follow from the values below. */
#include <stdio.h>
#include <stdlib.h>

#include "tracee.h"

static unsigned long c_scale, c_half, c_neg;

TRACED double fl_scale(int n, double x, const char* label, float f) {
  BUMP(c_scale);
  return n * x + f + (label[0] == 'a' ? 0 : 100);
}

TRACED float fl_half(float v) {
  BUMP(c_half);
  return v / 2;
}

TRACED long fl_neg(short s, unsigned char c) {
  BUMP(c_neg);
  return -(long)s - c;
}

int main(void) {
  double r = fl_scale(3, 1.5, "abc", 0.25f);
  float h = fl_half(5.0f);
  long n = fl_neg(-7, 200);
  CHECK(r == 4.75 && h == 2.5f && n == -193);
  printf("%g %g %ld\n", r, (double)h, n);
  printf("calls fl_scale=%lu fl_half=%lu fl_neg=%lu\n", c_scale, c_half, c_neg);
  return 0;
}
