// The stub of returns handled inside the traced process: the code functracer writes
// into the process for each thread block. core/fast_return.h holds the protocol and
// the block layout; this is the architecture's half: the stub's code and the record
// fields the stub writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ft::arch {

// The stub of one thread block finds its innermost record at record_base + top *
// kReturnRecordSize (top: the 8-byte count at top_addr), checks that the record's slot
// is the stack address the return address was popped from, writes into the record at
// the offsets below, decrements top and jumps to the real return address. Otherwise
// it restores what it touched and traps at slow_trap_offset.
inline constexpr uint64_t kReturnRecordSize = 64;
inline constexpr uint64_t kReturnRecordSlot = 0;      // stack address of the return address
inline constexpr uint64_t kReturnRecordRealRet = 8;   // where the return goes
inline constexpr uint64_t kReturnRecordRet = 16;      // written by the stub: ret
inline constexpr uint64_t kReturnRecordRet2 = 24;     // ret2
inline constexpr uint64_t kReturnRecordFpRet = 32;    // low 8 bytes of the first FP result register
inline constexpr uint64_t kReturnRecordClock = 40;    // the cycle counter at the return
struct ReturnStub {
  size_t size;
  size_t slow_trap_offset;   // the trap of the slow path
  // Writes the stub into out (at least size bytes).
  void (*write)(std::span<uint8_t> out, uint64_t top_addr, uint64_t record_base);
};

// x86-64: saves r10, r11 and the flags, compares, writes rax, rdx, xmm0 and the time
// stamp counter (rdtsc).
extern const ReturnStub kX86_64ReturnStub;

}  // namespace ft::arch
