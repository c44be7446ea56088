// C++ exceptions through traced frames.
//
//  xt_throw1..5: xt_throw5 throws, nothing catches until the untraced caller;
//                all five traced frames are unwound. xt_throw3 holds an object
//                with a destructor, so its frame runs a cleanup landing pad and
//                resumes unwinding (_Unwind_Resume).
//  xt_mid1..5:   xt_mid5 throws, xt_mid3 catches; xt_mid4/5 are unwound and
//                xt_mid3/2/1 return normally.
//  xt_re1..4:    xt_re4 throws, xt_re2 catches and rethrows (throw;), xt_re1
//                catches; xt_re2/3/4 are unwound, xt_re1 returns.
//  xt_vec_at:    std::vector::at throws std::out_of_range from inside libstdc++.
//  xt_after_catch runs after each catch, to see that tracing carries on.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "tracee.h"

namespace {

struct TestError : std::runtime_error {
  explicit TestError(int c) : std::runtime_error("test error " + std::to_string(c)), code(c) {}
  int code;
};

volatile long sink;
unsigned long guards_destroyed;

struct Guard {
  ~Guard() { ++guards_destroyed; }
};

struct Counts {
  unsigned long t[6], m[6], r[5], vec, after;
} cnt;

}  // namespace

TRACED int xt_throw5(int x) {
  BUMP(cnt.t[5]);
  if (x >= 0) throw TestError(x);
  return x;
}
TRACED int xt_throw4(int x) {
  BUMP(cnt.t[4]);
  int r = xt_throw5(x + 1);
  sink = r;
  return r + 1;
}
TRACED int xt_throw3(int x) {
  BUMP(cnt.t[3]);
  Guard g;
  int r = xt_throw4(x + 1);
  sink = r;
  return r + 1;
}
TRACED int xt_throw2(int x) {
  BUMP(cnt.t[2]);
  int r = xt_throw3(x + 1);
  sink = r;
  return r + 1;
}
TRACED int xt_throw1(int x) {
  BUMP(cnt.t[1]);
  int r = xt_throw2(x + 1);
  sink = r;
  return r + 1;
}

TRACED int xt_mid5(int x) {
  BUMP(cnt.m[5]);
  if (x >= 0) throw TestError(x);
  return x;
}
TRACED int xt_mid4(int x) {
  BUMP(cnt.m[4]);
  int r = xt_mid5(x + 1);
  sink = r;
  return r + 1;
}
TRACED int xt_mid3(int x) {
  BUMP(cnt.m[3]);
  try {
    int r = xt_mid4(x + 1);
    sink = r;
    return r;
  } catch (const TestError& e) {
    return e.code * 10;
  }
}
TRACED int xt_mid2(int x) {
  BUMP(cnt.m[2]);
  int r = xt_mid3(x + 1);
  sink = r;
  return r + 1;
}
TRACED int xt_mid1(int x) {
  BUMP(cnt.m[1]);
  int r = xt_mid2(x + 1);
  sink = r;
  return r + 1;
}

TRACED int xt_re4(int x) {
  BUMP(cnt.r[4]);
  if (x >= 0) throw TestError(x);
  return x;
}
TRACED int xt_re3(int x) {
  BUMP(cnt.r[3]);
  int r = xt_re4(x + 1);
  sink = r;
  return r + 1;
}
TRACED int xt_re2(int x) {
  BUMP(cnt.r[2]);
  try {
    int r = xt_re3(x + 1);
    sink = r;
    return r;
  } catch (TestError& e) {
    e.code += 1000;
    throw;
  }
}
TRACED int xt_re1(int x) {
  BUMP(cnt.r[1]);
  try {
    int r = xt_re2(x + 1);
    sink = r;
    return r;
  } catch (const TestError& e) {
    return e.code;
  }
}

TRACED int xt_vec_at(const std::vector<int>& v, int i) {
  BUMP(cnt.vec);
  int r = v.at(static_cast<size_t>(i));
  sink = r;
  return r;
}

TRACED int xt_after_catch(int x) {
  BUMP(cnt.after);
  return x + 1;
}

int main() {
  const int rounds = 10;
  long total = 0;

  for (int i = 0; i < rounds; ++i) {
    try {
      xt_throw1(i);
      CHECK(!"xt_throw1 returned");
    } catch (const TestError& e) {
      CHECK(e.code == i + 4);
      total += e.code;
    }
    total += xt_after_catch(i);
  }
  CHECK(guards_destroyed == rounds);

  for (int i = 0; i < rounds; ++i) {
    int r = xt_mid1(i);
    CHECK(r == (i + 4) * 10 + 2);
    total += r + xt_after_catch(i);
  }

  for (int i = 0; i < rounds; ++i) {
    int r = xt_re1(i);
    CHECK(r == i + 3 + 1000);
    total += r + xt_after_catch(i);
  }

  std::vector<int> v{10, 20, 30, 40, 50};
  int out_of_range = 0;
  for (int i = 0; i < rounds; ++i) {
    int idx = (i % 2 == 0) ? i / 2 : 100 + i;
    try {
      int r = xt_vec_at(v, idx);
      CHECK(r == v[static_cast<size_t>(idx)]);
      total += r;
    } catch (const std::out_of_range&) {
      ++out_of_range;
    }
    total += xt_after_catch(i);
  }
  CHECK(out_of_range == rounds / 2);

  for (int k = 1; k <= 5; ++k) CHECK(cnt.t[k] == rounds && cnt.m[k] == rounds);
  for (int k = 1; k <= 4; ++k) CHECK(cnt.r[k] == rounds);
  CHECK(cnt.vec == rounds && cnt.after == 4 * rounds);

  std::printf("total=%ld out_of_range=%d\n", total, out_of_range);
  std::printf("calls");
  for (int k = 1; k <= 5; ++k) std::printf(" xt_throw%d=%lu", k, cnt.t[k]);
  for (int k = 1; k <= 5; ++k) std::printf(" xt_mid%d=%lu", k, cnt.m[k]);
  for (int k = 1; k <= 4; ++k) std::printf(" xt_re%d=%lu", k, cnt.r[k]);
  std::printf(" xt_vec_at=%lu xt_after_catch=%lu\n", cnt.vec, cnt.after);
  std::printf("unwound exception");
  for (int k = 1; k <= 5; ++k) std::printf(" xt_throw%d=%d", k, rounds);
  std::printf(" xt_mid4=%d xt_mid5=%d xt_re2=%d xt_re3=%d xt_re4=%d xt_vec_at=%d\n", rounds, rounds,
              rounds, rounds, rounds, out_of_range);
  return 0;
}
