// Returns handled inside the traced process.
//
// A traced return through the shared trampoline costs a ptrace stop. Most plugins
// only want the return value of a return (calltrace, memtrace's allocators), so for
// functions every interested plugin marks FT_TRACE_RETURN_VALUE the return is
// handled without a stop: the hijacked return address points to a small stub of the
// thread's own, which checks that the return is the innermost one functracer
// recorded for that thread, writes the return registers and the time stamp counter
// into that record, pops it and jumps to the real return address. functracer reads
// the records at the next stop of any thread of the process (before handling that
// stop, so that events keep their order across threads) and reports the returns then.
// Anything else — a return out of order (longjmp, coroutines), a thread without a
// record block — takes the stub's slow path: an int3 functracer handles like the
// trampoline.
//
// In the process (one read-write mapping, kDataSize bytes):
//   +0                  kDataMark
//   +kTopsOffset + 8k   tops[k]: how many records block k holds (written by the
//                       stub when it pops; by functracer while the thread is stopped)
//   +kBlocksOffset + kBlockSize*k   block k: kCapacity records of kRecordSize bytes
// A record: slot (stack address of the hijacked return address), real return
// address, then filled in by the stub: rax, rdx, low 8 bytes of xmm0, TSC.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "arch/return_stub.h"

namespace ft::fastret {

constexpr uint64_t kDataMark = 0x3130535445525446ull;  // "FTRETS01"
constexpr uint64_t kMaxSlots = 1024;                   // threads with a block at once
constexpr uint64_t kTopsOffset = 64;
constexpr uint64_t kBlocksOffset = 16384;
constexpr uint64_t kRecordSize = 64;
constexpr uint64_t kCapacity = 64;  // records per block: deeper frames use the trampoline
constexpr uint64_t kBlockSize = kRecordSize * kCapacity;
constexpr uint64_t kDataSize = kBlocksOffset + kMaxSlots * kBlockSize;
static_assert(kTopsOffset + 8 * kMaxSlots <= kBlocksOffset);

struct Record {
  uint64_t slot;
  uint64_t real_ret;
  uint64_t rax;
  uint64_t rdx;
  uint64_t xmm0;
  uint64_t tsc;
  uint64_t unused[2];
};
static_assert(sizeof(Record) == kRecordSize);
// The stub's code (arch/return_stub.h) writes the fields at these offsets.
static_assert(kRecordSize == arch::kReturnRecordSize && offsetof(Record, slot) == arch::kReturnRecordSlot &&
              offsetof(Record, real_ret) == arch::kReturnRecordRealRet && offsetof(Record, rax) == arch::kReturnRecordRet &&
              offsetof(Record, rdx) == arch::kReturnRecordRet2 && offsetof(Record, xmm0) == arch::kReturnRecordFpRet &&
              offsetof(Record, tsc) == arch::kReturnRecordClock);

constexpr uint64_t top_offset(uint64_t k) { return kTopsOffset + 8 * k; }
constexpr uint64_t block_offset(uint64_t k) { return kBlocksOffset + kBlockSize * k; }

// The stub of block k (tops and block at the given addresses); it takes
// kStubSize bytes. The int3 of its slow path is at kSlowTrapOffset. The code is the
// x86-64 one of arch/return_stub.h, which has these dimensions.
constexpr uint64_t kStubSize = 112;
constexpr uint64_t kSlowTrapOffset = 0x6f;
std::array<uint8_t, kStubSize> stub_code(uint64_t top_addr, uint64_t block_addr);

// Converts time stamp counter readings of this machine into CLOCK_MONOTONIC
// nanoseconds, from pairs of readings taken as the session goes.
class TscClock {
 public:
  TscClock();
  // A new reference pair; call before converting readings taken up to now.
  void sample();
  uint64_t to_ns(uint64_t tsc) const;

 private:
  uint64_t tsc0_ = 0, ns0_ = 0;  // the first pair
  uint64_t tsc1_ = 0, ns1_ = 0;  // the latest pair
  double ns_per_tick_ = 0;
};

uint64_t read_tsc();

}  // namespace ft::fastret
