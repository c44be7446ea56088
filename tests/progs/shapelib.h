// shapelib.cc's interface (a C++ library without DWARF).
#pragma once

namespace geo {
class Shape {
 public:
  explicit Shape(double side);
  double scaled(double f, int n) const;
  long area(int w, unsigned char h);
  static int count(const char* tag);

 private:
  double side_;
};
int perimeter(int sides, double length);
}  // namespace geo
