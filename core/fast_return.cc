#include "core/fast_return.h"

#include <cstring>

#include "common/clock.h"

namespace ft::fastret {
namespace {

// x86-64; tops[k] and block k are patched in at the marked offsets.
//   push r11; push r10; pushfq
//   movabs r11, &tops[k]; mov r10, [r11]; test r10, r10; jz slow
//   shl r10, 6; movabs r11, &block[k] - 64; add r10, r11   ; the innermost record
//   lea r11, [rsp+16]; cmp r11, [r10]; jne slow            ; is it this return's slot?
//   mov [r10+16], rax; mov [r10+24], rdx; movq [r10+32], xmm0
//   push rax; push rdx; rdtsc; shl rdx, 32; or rax, rdx; mov [r10+40], rax; pop rdx; pop rax
//   mov r11, [r10+8]                                          ; the real return address
//   movabs r10, &tops[k]; dec qword [r10]                     ; popped: visible to functracer
//   popfq; pop r10; xchg [rsp], r11; ret                      ; r11 restored, off to real_ret
// slow:
//   popfq; pop r10; pop r11; int3
constexpr uint8_t kStub[kStubSize] = {
    0x41, 0x53, 0x41, 0x52, 0x9c, 0x49, 0xbb, 0, 0, 0, 0, 0, 0, 0, 0,  // movabs r11 @7
    0x4d, 0x8b, 0x13, 0x4d, 0x85, 0xd2, 0x74, 0x53, 0x49, 0xc1, 0xe2, 0x06,
    0x49, 0xbb, 0, 0, 0, 0, 0, 0, 0, 0,  // movabs r11 @29
    0x4d, 0x01, 0xda, 0x4c, 0x8d, 0x5c, 0x24, 0x10, 0x4d, 0x3b, 0x1a, 0x75, 0x38,
    0x49, 0x89, 0x42, 0x10, 0x49, 0x89, 0x52, 0x18, 0x66, 0x41, 0x0f, 0xd6, 0x42, 0x20,
    0x50, 0x52, 0x0f, 0x31, 0x48, 0xc1, 0xe2, 0x20, 0x48, 0x09, 0xd0, 0x49, 0x89, 0x42, 0x28,
    0x5a, 0x58, 0x4d, 0x8b, 0x5a, 0x08,
    0x49, 0xba, 0, 0, 0, 0, 0, 0, 0, 0,  // movabs r10 @87
    0x49, 0xff, 0x0a, 0x9d, 0x41, 0x5a, 0x4c, 0x87, 0x1c, 0x24, 0xc3,
    0x9d, 0x41, 0x5a, 0x41, 0x5b, 0xcc};
constexpr size_t kTopImm1 = 7, kBlockImm = 29, kTopImm2 = 87;
static_assert(kStub[kSlowTrapOffset] == 0xcc && kStub[kTopImm1 - 2] == 0x49 && kStub[kBlockImm - 2] == 0x49 &&
              kStub[kTopImm2 - 2] == 0x49);

}  // namespace

std::array<uint8_t, kStubSize> stub_code(uint64_t top_addr, uint64_t block_addr) {
  std::array<uint8_t, kStubSize> code;
  std::memcpy(code.data(), kStub, kStubSize);
  uint64_t record_base = block_addr - kRecordSize;  // + top * kRecordSize: the innermost record
  std::memcpy(code.data() + kTopImm1, &top_addr, 8);
  std::memcpy(code.data() + kBlockImm, &record_base, 8);
  std::memcpy(code.data() + kTopImm2, &top_addr, 8);
  return code;
}

uint64_t read_tsc() {
  uint32_t lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

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
