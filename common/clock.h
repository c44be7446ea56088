// The clock of trace time stamps: CLOCK_MONOTONIC in nanoseconds. Async-signal-safe
// (clock_gettime is), so signal handlers may take time stamps too.
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
