// Calls into shapelib (no DWARF) that print their own arguments and results, as
// "CALL name(args) = result", with the object's address: the oracle for the values
// functracer reads from the mangled names' types (test_prototypes.py).
#include <cstdio>

#include "shapelib.h"

int main() {
  geo::Shape s(2.0);
  void* self = static_cast<void*>(&s);
  std::printf("CALL geo::Shape::Shape(this=%p, 2)\n", self);
  double d = s.scaled(1.5, 3);
  std::printf("CALL geo::Shape::scaled(this=%p, 1.5, 3) = %g\n", self, d);
  long a = s.area(-4, 200);
  std::printf("CALL geo::Shape::area(this=%p, -4, 200) = %ld\n", self, a);
  int p = geo::perimeter(4, 2.5);
  std::printf("CALL geo::perimeter(4, 2.5) = %d\n", p);
  return 0;
}
