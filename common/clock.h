// The clock of every time stamp functracer takes: CLOCK_MONOTONIC in nanoseconds.
// Trace records carry it (doc/trace-format.md: processes traced together share it,
// so their records interleave), the engine's timeouts and statistics measure with it,
// and the returns handled inside the traced process are converted to it from the time
// stamp counter (core/fast_return.h). clock_gettime is async-signal-safe
// (signal-safety(7)), and so is this.
#pragma once

#include <time.h>

#include <cstdint>

namespace ft {

inline uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace ft
