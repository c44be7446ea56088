// A C++ library built without debug information: the types of its functions'
// parameters come only from their mangled names (test_prototypes.py).
#include "shapelib.h"

namespace geo {
Shape::Shape(double side) : side_(side) {}
double Shape::scaled(double f, int n) const { return side_ * f * n; }
long Shape::area(int w, unsigned char h) { return static_cast<long>(w) * h + static_cast<long>(side_); }
int Shape::count(const char* tag) {
  int n = 0;
  while (tag[n]) ++n;
  return n;
}
int perimeter(int sides, double length) { return static_cast<int>(sides * length); }
}  // namespace geo
