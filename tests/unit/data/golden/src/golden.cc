// The program behind the post-processor's golden traces (README.md next to this
// directory). Its heap and descriptors are fixed by this source:
//
//   leaked at exit (VERSION = first argument, 1 by default):
//     shapes::make_list(3)        3 x operator new(48)      144 bytes
//     shapes::label("golden")     malloc(7), inlined copy     7 bytes
//     shapes::make_array<double>  operator new[](8 * 16 * VERSION)
//     std::fopen in main          the FILE, from libc (its size is libc's)
//   freed: shapes::churn(4)       4 x malloc(256), each freed at once (temporary)
//          shapes::spike()        malloc(100000), freed: the peak
//   descriptors left open: the fopen'd stream and open("/dev/null") in main
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

// Keeps pointers where the compiler cannot see them unused.
void* volatile sink;

namespace shapes {

struct Node {
  Node* next;
  char payload[40];
};

__attribute__((noinline)) Node* make_list(int n) {
  Node* head = nullptr;
  for (int i = 0; i < n; ++i) {
    Node* node = new Node;  // GOLDEN: make_list
    node->next = head;
    std::memset(node->payload, i, sizeof node->payload);
    head = node;
  }
  return head;
}

static inline __attribute__((always_inline)) char* copy_name(const char* s) {
  size_t n = std::strlen(s) + 1;
  char* p = static_cast<char*>(std::malloc(n));  // GOLDEN: copy_name
  std::memcpy(p, s, n);
  return p;
}

__attribute__((noinline)) char* label(const char* s) {
  return copy_name(s);  // GOLDEN: label
}

template <typename T>
__attribute__((noinline)) T* make_array(size_t n) {
  T* a = new T[n];  // GOLDEN: make_array
  for (size_t i = 0; i < n; ++i) a[i] = static_cast<T>(i);
  return a;
}

__attribute__((noinline)) long churn(int rounds) {
  long sum = 0;
  for (int r = 0; r < rounds; ++r) {
    auto* p = static_cast<unsigned char*>(std::malloc(256));  // GOLDEN: churn
    std::memset(p, r, 256);
    sink = p;
    sum += p[r];
    std::free(p);
  }
  return sum;
}

__attribute__((noinline)) long spike() {
  auto* big = static_cast<unsigned char*>(std::malloc(100000));  // GOLDEN: spike
  std::memset(big, 1, 100000);
  sink = big;  // escapes, so the compiler keeps the allocation
  long sum = big[99999];
  std::free(big);
  return sum;
}

}  // namespace shapes

int main(int argc, char** argv) {
  int version = argc > 1 ? std::atoi(argv[1]) : 1;
  sink = shapes::make_list(3);                     // GOLDEN: main make_list
  sink = shapes::label("golden");                  // GOLDEN: main label
  sink = shapes::make_array<double>(16 * version); // GOLDEN: main make_array
  long sum = shapes::churn(4) + shapes::spike();
  std::FILE* f = std::fopen("/proc/self/status", "r");  // GOLDEN: main fopen
  int fd = open("/dev/null", O_RDONLY);                  // GOLDEN: main open
  sink = f;
  return (sum == 1 + 0 + 1 + 2 + 3 && f != nullptr && fd >= 0) ? 0 : 1;
}
