// Known heap leaks from every form of C++ operator new, among many allocations
// that are released again through every form of operator delete
// (tests/integration/test_memtrace.py; the C allocators are in leaks.c).
//
// Every leak comes from its own function, at one call site, so that the
// innermost frame of each leaked block's backtrace (the return address in the
// function that called the allocator) names that function:
//
//   function                         blocks  bytes each  entry point
//   leak_new                            4        24      operator new(size_t)                _Znwm
//   leak_new_array                      2       333      operator new[](size_t)              _Znam
//   leak_new_nothrow                    3        40      operator new(size_t, nothrow_t)     _ZnwmRKSt9nothrow_t
//   leak_new_array_nothrow              2        77      operator new[](size_t, nothrow_t)   _ZnamRKSt9nothrow_t
//   leak_new_aligned                    2       192      operator new(size_t, align_val_t)   _ZnwmSt11align_val_t (64)
//   leak_new_array_aligned              1       768      operator new[](size_t, align_val_t) _ZnamSt11align_val_t (128)
//   leak_new_aligned_nothrow            2       160      ... (size_t, align_val_t, nothrow_t) _ZnwmSt11align_val_tRKSt9nothrow_t (32)
//   leak_new_array_aligned_nothrow      1       480      ... [](size_t, align_val_t, nothrow_t) _ZnamSt11align_val_tRKSt9nothrow_t (32)
//   leak_malloc_cxx                     1       111      malloc
//
// The types are trivially destructible, so new[] asks for exactly
// count x sizeof (no array cookie).
//
// Before main, libstdc++ allocates its emergency exception pool (malloc, kept
// until __gnu_cxx::__freeres, which only valgrind calls). main releases it
// first thing with __gnu_cxx::__freeres(), so that everything live at exit is
// what this program leaked: the block must be seen allocated (before main) and
// released (in main), and leave nothing behind. Nothing else is allocated
// behind the program's back: no iostreams, stdout has a static buffer.
//
// Output, on stdout (the same traced and untraced), as leaks.c:
//   leak FUNCTION blocks=N bytes=S entry=ENTRY [align=A]
//   leak_total blocks=N bytes=S
//   alloc_failed ENTRY=N ...   operator new that threw std::bad_alloc, nothrow
//                              new that returned nullptr, malloc that returned NULL
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <map>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "tracee.h"

namespace __gnu_cxx {
void __freeres() noexcept;  // libstdc++: releases the emergency exception pool
}

namespace {

volatile size_t huge = SIZE_MAX / 2;
void* volatile sink;
char stdout_buf[1 << 16];

// A loop count the compiler cannot see: one call site per leaking function.
int count(int n) {
  volatile int v = n;
  return v;
}

struct Node24 {
  long a, b, c;
};
struct Node40 {
  long v[5];
};
struct alignas(64) A64 {
  unsigned char b[192];
};
struct alignas(128) A128 {
  unsigned char b[256];
};
struct alignas(32) A32 {
  unsigned char b[160];
};
struct alignas(32) A32b {
  unsigned char b[96];
};
static_assert(sizeof(Node24) == 24 && sizeof(Node40) == 40 && sizeof(A64) == 192 &&
              sizeof(A128) == 256 && sizeof(A32) == 160 && sizeof(A32b) == 96);

constexpr int kKeptMax = 64;
void* kept[kKeptMax];
int n_kept;

void keep(void* p, size_t align) {
  CHECK(p != nullptr);
  CHECK(align == 0 || (reinterpret_cast<uintptr_t>(p) & (align - 1)) == 0);
  CHECK(n_kept < kKeptMax);
  kept[n_kept++] = p;
}

struct Leak {
  const char* fn;
  const char* entry;
  int blocks;
  size_t bytes;
  size_t align;
};
Leak leaks[32];
int n_leaks;

void note_leak(const char* fn, const char* entry, int blocks, size_t bytes, size_t align) {
  CHECK(n_leaks < 32);
  leaks[n_leaks++] = Leak{fn, entry, blocks, bytes, align};
}

}  // namespace

// ---- the leaks -------------------------------------------------------------

TRACED void leak_new() {
  for (int i = 0, n = count(4); i < n; ++i) {
    Node24* p = new Node24{i, i, i};
    keep(p, 0);
  }
  note_leak("leak_new", "_Znwm", 4, sizeof(Node24), 0);
}

TRACED void leak_new_array() {
  for (int i = 0, n = count(2); i < n; ++i) {
    char* p = new char[333];
    p[332] = 'x';
    keep(p, 0);
  }
  note_leak("leak_new_array", "_Znam", 2, 333, 0);
}

TRACED void leak_new_nothrow() {
  for (int i = 0, n = count(3); i < n; ++i) {
    Node40* p = new (std::nothrow) Node40{};
    keep(p, 0);
  }
  note_leak("leak_new_nothrow", "_ZnwmRKSt9nothrow_t", 3, sizeof(Node40), 0);
}

TRACED void leak_new_array_nothrow() {
  for (int i = 0, n = count(2); i < n; ++i) {
    char* p = new (std::nothrow) char[77];
    keep(p, 0);
  }
  note_leak("leak_new_array_nothrow", "_ZnamRKSt9nothrow_t", 2, 77, 0);
}

TRACED void leak_new_aligned() {
  for (int i = 0, n = count(2); i < n; ++i) {
    A64* p = new A64;
    keep(p, 64);
  }
  note_leak("leak_new_aligned", "_ZnwmSt11align_val_t", 2, sizeof(A64), 64);
}

TRACED void leak_new_array_aligned() {
  A128* p = new A128[3];
  keep(p, 128);
  note_leak("leak_new_array_aligned", "_ZnamSt11align_val_t", 1, 3 * sizeof(A128), 128);
}

TRACED void leak_new_aligned_nothrow() {
  for (int i = 0, n = count(2); i < n; ++i) {
    A32* p = new (std::nothrow) A32;
    keep(p, 32);
  }
  note_leak("leak_new_aligned_nothrow", "_ZnwmSt11align_val_tRKSt9nothrow_t", 2, sizeof(A32), 32);
}

TRACED void leak_new_array_aligned_nothrow() {
  A32b* p = new (std::nothrow) A32b[5];
  keep(p, 32);
  note_leak("leak_new_array_aligned_nothrow", "_ZnamSt11align_val_tRKSt9nothrow_t", 1,
            5 * sizeof(A32b), 32);
}

TRACED void leak_malloc_cxx() {
  void* p = malloc(111);
  keep(p, 0);
  note_leak("leak_malloc_cxx", "malloc", 1, 111, 0);
}

// ---- allocations that are released ------------------------------------------

namespace {

template <class T>
T* got(T* p) {
  CHECK(p != nullptr);
  sink = p;
  return p;
}

// An allocator for the containers that goes through operator new and the
// sized operator delete.
template <class T>
struct SizedAlloc {
  using value_type = T;
  SizedAlloc() = default;
  template <class U>
  SizedAlloc(const SizedAlloc<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { ::operator delete(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const SizedAlloc<U>&) const { return true; }
};

}  // namespace

TRACED void pairs_new_delete(int n) {
  for (int i = 0; i < n; ++i) {
    Node24* a = got(new Node24{i, 0, 0});
    delete a;  // sized delete: _ZdlPvm
    char* b = got(new char[1 + i % 500]);
    delete[] b;  // _ZdaPv
    void* c = got(::operator new(8 + i % 300));
    ::operator delete(c);  // _ZdlPv
    void* d = got(::operator new(16 + i % 200));
    ::operator delete(d, 16 + i % 200);  // _ZdlPvm
    void* e = got(::operator new[](24 + i % 100));
    ::operator delete[](e, 24 + i % 100);  // _ZdaPvm
  }
}

TRACED void pairs_nothrow(int n) {
  for (int i = 0; i < n; ++i) {
    Node40* a = got(new (std::nothrow) Node40{});
    ::operator delete(a, std::nothrow);  // _ZdlPvRKSt9nothrow_t
    char* b = got(new (std::nothrow) char[5 + i % 90]);
    ::operator delete[](b, std::nothrow);  // _ZdaPvRKSt9nothrow_t
    Node40* c = got(new (std::nothrow) Node40{});
    delete c;
  }
}

TRACED void pairs_aligned(int n) {
  for (int i = 0; i < n; ++i) {
    A64* a = got(new A64);
    delete a;  // sized aligned delete: _ZdlPvmSt11align_val_t
    A128* b = got(new A128[1 + i % 4]);
    delete[] b;  // _ZdaPvSt11align_val_t
    std::align_val_t al{static_cast<size_t>(16) << (i % 6)};
    size_t sz = 1 + i % 700;  // not a multiple of the alignment
    void* c = got(::operator new(sz, al));
    ::operator delete(c, al);  // _ZdlPvSt11align_val_t
    void* d = got(::operator new[](sz, al));
    ::operator delete[](d, sz, al);  // _ZdaPvmSt11align_val_t
    void* e = got(::operator new(sz, al, std::nothrow));
    ::operator delete(e, al, std::nothrow);  // _ZdlPvSt11align_val_tRKSt9nothrow_t
    void* f = got(::operator new[](sz, al, std::nothrow));
    ::operator delete[](f, al, std::nothrow);  // _ZdaPvSt11align_val_tRKSt9nothrow_t
    void* g = got(::operator new(sz, al));
    ::operator delete(g, sz, al);  // _ZdlPvmSt11align_val_t
  }
}

TRACED void pairs_malloc(int n) {
  for (int i = 0; i < n; ++i) {
    void* p = got(malloc(1 + i % 1000));
    free(p);
    void* q = got(realloc(nullptr, 10));
    q = got(realloc(q, 1000 + i));
    free(q);
  }
}

TRACED long pairs_containers(int n) {
  long total = 0;
  for (int round = 0; round < n; ++round) {
    std::vector<int, SizedAlloc<int>> v;
    for (int i = 0; i < 100; ++i) v.push_back(i * round);
    std::basic_string<char, std::char_traits<char>, SizedAlloc<char>> s;
    for (int i = 0; i < 40; ++i) s += "words ";
    std::map<int, int, std::less<int>, SizedAlloc<std::pair<const int, int>>> m;
    for (int i = 0; i < 20; ++i) m[i * 7 % 13] += i;
    total += v.back() + static_cast<long>(s.size()) + static_cast<long>(m.size());
  }
  return total;
}

TRACED int pairs_exceptions(int n) {
  int caught = 0;
  for (int i = 0; i < n; ++i) {
    try {
      if (i % 2) throw i;  // the exception object: malloc, freed after the catch
      throw std::runtime_error("a message long enough to be allocated");
    } catch (int v) {
      caught += v == i;
    } catch (const std::runtime_error& e) {
      caught += e.what()[0] == 'a';
    }
  }
  return caught;
}

namespace {
unsigned long f_new, f_new_array, f_nothrow, f_nothrow_array, f_aligned, f_aligned_nothrow,
    f_malloc;
}

// operator new that throws std::bad_alloc: the exception object is allocated
// inside operator new and released after the catch.
TRACED void fail_allocs() {
  for (int i = 0; i < 3; ++i) {
    try {
      sink = ::operator new(huge);
      CHECK(!"operator new did not throw");
    } catch (const std::bad_alloc&) {
      ++f_new;
    }
  }
  for (int i = 0; i < 2; ++i) {
    try {
      sink = new char[huge];
      CHECK(!"operator new[] did not throw");
    } catch (const std::bad_alloc&) {
      ++f_new_array;
    }
  }
  for (int i = 0; i < 2; ++i) {
    CHECK(::operator new(huge, std::nothrow) == nullptr);
    ++f_nothrow;
  }
  CHECK(new (std::nothrow) char[huge] == nullptr);
  ++f_nothrow_array;
  for (int i = 0; i < 2; ++i) {
    try {
      sink = ::operator new(huge, std::align_val_t{64});
      CHECK(!"aligned operator new did not throw");
    } catch (const std::bad_alloc&) {
      ++f_aligned;
    }
  }
  CHECK(::operator new(huge, std::align_val_t{64}, std::nothrow) == nullptr);
  ++f_aligned_nothrow;
  CHECK(malloc(huge) == nullptr);
  ++f_malloc;
}

int main() {
  __gnu_cxx::__freeres();
  setvbuf(stdout, stdout_buf, _IOFBF, sizeof stdout_buf);

  pairs_new_delete(1000);
  leak_new();
  leak_new_array();
  pairs_nothrow(600);
  leak_new_nothrow();
  leak_new_array_nothrow();
  pairs_aligned(300);
  leak_new_aligned();
  leak_new_array_aligned();
  leak_new_aligned_nothrow();
  leak_new_array_aligned_nothrow();
  pairs_malloc(500);
  leak_malloc_cxx();
  long total = pairs_containers(30);
  int caught = pairs_exceptions(60);
  fail_allocs();

  unsigned long blocks = 0, bytes = 0;
  for (int i = 0; i < n_leaks; ++i) {
    const Leak& l = leaks[i];
    printf("leak %s blocks=%d bytes=%zu entry=%s", l.fn, l.blocks, l.bytes, l.entry);
    if (l.align) printf(" align=%zu", l.align);
    printf("\n");
    blocks += static_cast<unsigned long>(l.blocks);
    bytes += static_cast<unsigned long>(l.blocks) * l.bytes;
  }
  CHECK(blocks == static_cast<unsigned long>(n_kept));
  printf("leak_total blocks=%lu bytes=%lu\n", blocks, bytes);
  printf("alloc_failed _Znwm=%lu _Znam=%lu _ZnwmRKSt9nothrow_t=%lu _ZnamRKSt9nothrow_t=%lu "
         "_ZnwmSt11align_val_t=%lu _ZnwmSt11align_val_tRKSt9nothrow_t=%lu malloc=%lu\n",
         f_new, f_new_array, f_nothrow, f_nothrow_array, f_aligned, f_aligned_nothrow, f_malloc);
  printf("containers %ld exceptions %d\n", total, caught);
  return 0;
}
