// Structures as arguments, for calltrace's --struct-depth (tests/integration/
// test_structs.py): a C struct by pointer and by value, a C++ member function (its
// `this`), std::string by value, by reference and by pointer. Built with -g: the
// members come from DWARF. The program prints, on stdout, each call's members as the
// test expects them ("expect FUNCTION ARGUMENT-TEXT"), from its own values.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tracee.h"

extern "C" {

struct Point {
  int x;
  long y;
  const char* label;
  double weight;
  unsigned char flags;
};

struct Pair {  // 16 bytes of integers: passed in two registers
  int id;
  const char* name;
};

static long sink;

TRACED long st_point_by_pointer(const struct Point* p) {
  sink += p->x;
  return p->x + p->y;
}

TRACED long st_pair_by_value(struct Pair pair, int extra) {
  sink += pair.id;
  return pair.id + extra;
}

TRACED long st_null_pointer(const struct Point* p) { return p == nullptr ? -1 : p->x; }

// Never dereferenced: the tracer must show the pointer, not fail reading it.
TRACED long st_bad_pointer(const struct Point* p) { return reinterpret_cast<uintptr_t>(p) == 16 ? 1 : 0; }
}

class Counter {
 public:
  explicit Counter(int start) : count_(start), step_(3) {}
  TRACED int add(int n);
  int count_;
  short step_;
};

int Counter::add(int n) {
  count_ += n * step_;
  return count_;
}

TRACED size_t st_string_by_value(std::string s) { return s.size(); }
TRACED size_t st_string_by_ref(const std::string& s) { return s.size(); }
TRACED size_t st_string_by_pointer(const std::string* s) { return s->size(); }

int main() {
  char label[] = "origin";
  Point pt{-4, 1234567890123L, label, 2.5, 200};
  long r = st_point_by_pointer(&pt);
  CHECK(r == pt.x + pt.y);
  std::printf("expect st_point_by_pointer &{x=%d, y=%ld, label=\"%s\", weight=%g, flags=%u}\n", pt.x, pt.y,
              pt.label, pt.weight, static_cast<unsigned>(pt.flags));

  Pair pair{42, "answer"};
  r = st_pair_by_value(pair, 7);
  CHECK(r == 49);
  std::printf("expect st_pair_by_value {id=%d, name=\"%s\"}, %d\n", pair.id, pair.name, 7);

  r = st_null_pointer(nullptr);
  CHECK(r == -1);
  std::printf("expect st_null_pointer 0x0\n");
  r = st_bad_pointer(reinterpret_cast<const Point*>(uintptr_t{16}));
  CHECK(r == 1);
  std::printf("expect st_bad_pointer 0x10\n");

  Counter c(10);
  int before = c.count_;
  int got = c.add(5);
  CHECK(got == 25);
  std::printf("expect Counter::add this=&{count_=%d, step_=%d}, 5\n", before, c.step_);

  // Longer than the small-string buffer: the text is on the heap.
  std::string heap_text = "a string long enough to live on the heap";
  std::string short_text = "short";
  CHECK(st_string_by_value(heap_text) == heap_text.size());
  CHECK(st_string_by_ref(short_text) == 5);
  CHECK(st_string_by_pointer(&heap_text) == heap_text.size());
  std::printf("expect st_string_by_value \"%s\"\n", heap_text.c_str());
  std::printf("expect st_string_by_ref &\"%s\"\n", short_text.c_str());
  std::printf("expect st_string_by_pointer &\"%s\"\n", heap_text.c_str());
  std::printf("calls sink=%ld\n", sink);
  return 0;
}
