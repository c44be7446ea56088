// The processor's cycle counter as the stubs functracer puts into a traced process
// read it (x86-64 `rdtsc`, AArch64 `cntvct_el0`): read on functracer's side of the
// same machine to turn the stubs' time stamps into CLOCK_MONOTONIC (core/fast_return.h,
// TscClock). Host-only: functracer and the programs it traces run on one machine.
#pragma once

#include <cstdint>

namespace ft::arch {

inline uint64_t read_cycle_counter() {
#if defined(__x86_64__)
  uint32_t lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return (static_cast<uint64_t>(hi) << 32) | lo;
#elif defined(__aarch64__)
  uint64_t v;
  __asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
#error "no cycle counter for this architecture"
#endif
}

}  // namespace ft::arch
