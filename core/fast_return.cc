#include "core/fast_return.h"

#include <time.h>

#include <string>

#include "arch/arch.h"
#include "arch/return_stub.h"
#include "arch/cycle_counter.h"
#include "common/check.h"
#include "common/clock.h"

namespace ft::fastret {

std::array<uint8_t, kStubSize> stub_code(uint64_t top_addr, uint64_t block_addr) {
  FT_CHECK(arch::host().return_stub, "no return stub for %s", std::string(arch::host().name).c_str());
  const arch::ReturnStub& stub = *arch::host().return_stub;
  FT_CHECK(stub.size == kStubSize && stub.slow_trap_offset == kSlowTrapOffset,
           "return stub of %zu bytes, slow path at %zu", stub.size, stub.slow_trap_offset);
  std::array<uint8_t, kStubSize> code;
  uint64_t record_base = block_addr - kRecordSize;  // + top * kRecordSize: the innermost record
  stub.write(code, top_addr, record_base);
  return code;
}

uint64_t read_tsc() { return arch::read_cycle_counter(); }

TscClock::TscClock() {
  // A first rate from a short interval; later pairs refine it.
  tsc0_ = read_tsc();
  ns0_ = monotonic_ns();
  uint64_t until = ns0_ + 2000000;
  uint64_t ns;
  do ns = monotonic_ns(); while (ns < until);
  tsc1_ = read_tsc();
  ns1_ = ns;
  ns_per_tick_ = static_cast<double>(ns1_ - ns0_) / static_cast<double>(tsc1_ - tsc0_ ? tsc1_ - tsc0_ : 1);
}

void TscClock::sample() {
  uint64_t t = read_tsc();
  uint64_t ns = monotonic_ns();
  if (t <= tsc1_) return;
  tsc1_ = t;
  ns1_ = ns;
  if (tsc1_ - tsc0_ > 0 && ns1_ - ns0_ >= 100000000)  // from 100 ms on, the whole span
    ns_per_tick_ = static_cast<double>(ns1_ - ns0_) / static_cast<double>(tsc1_ - tsc0_);
}

uint64_t TscClock::to_ns(uint64_t tsc) const {
  if (tsc >= tsc1_) return ns1_;
  double back = static_cast<double>(tsc1_ - tsc) * ns_per_tick_;
  uint64_t b = static_cast<uint64_t>(back);
  return b >= ns1_ ? 0 : ns1_ - b;
}

}  // namespace ft::fastret
