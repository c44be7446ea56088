// SsolArea: a region of the tracee's address space that functracer maps (by injecting
// an mmap syscall into a stopped thread) to hold code the tracee runs on our behalf:
//  - the shared return trampoline: one breakpoint instruction every hijacked return
//    address points to (first area of a process only);
//  - a `syscall; int3` stub used to inject later syscalls;
//  - one slot per entry breakpoint: the displaced instruction, relocated, followed by
//    a jump back;
//  - two slots per thread block of returns handled in the process: its stub
//    (fast_return.h). Slots are written once, before their breakpoint is planted, and hold
//    no per-thread state, so any number of threads can run through them at once.
// The area is mapped r-x; functracer writes to it through /proc/PID/mem. It is placed
// within +-2 GiB of the module it serves so RIP-relative operands can be re-encoded;
// a process has as many areas as it needs. Areas are never unmapped while tracing (a
// thread may be inside a slot at any moment) and are left in place at detach, with a
// mark in their header saying how far their slots are used; the next functracer that
// attaches adopts them (and clears the mark while it uses them) instead of mapping new
// ones, so attaching and detaching many times does not eat address space.
#pragma once

#include <cstdint>

#include "common/remote_addr.h"

namespace ft {

class SsolArea {
 public:
  static constexpr uint64_t kSize = 1ull << 20;
  static constexpr uint64_t kSlotSize = 64;
  static constexpr uint64_t kTrampolineOffset = 0;
  static constexpr uint64_t kCallReturnOffset = 8;  // where functions called by functracer return
  static constexpr uint64_t kSyscallOffset = 16;
  static constexpr uint64_t kMarkOffset = 32;  // kMark, then the next free slot offset
  static constexpr uint64_t kMark = 0x3130414552415446ull;  // "FTAREA01"
  static constexpr uint64_t kFirstSlotOffset = 64;

  explicit SsolArea(RemoteAddr base, uint64_t next = kFirstSlotOffset) : base_(base), next_(next) {}

  RemoteAddr base() const { return base_; }
  RemoteAddr end() const { return base_ + static_cast<int64_t>(kSize); }
  RemoteAddr trampoline() const { return base_ + kTrampolineOffset; }
  RemoteAddr syscall_stub() const { return base_ + kSyscallOffset; }
  RemoteAddr call_return() const { return base_ + kCallReturnOffset; }
  bool contains(RemoteAddr a) const { return a >= base_ && a < end(); }
  // Can code in this area reach `a` (and be reached) with a 32-bit displacement?
  bool near(RemoteAddr a) const;

  bool has_room() const { return next_ + kSlotSize <= kSize; }
  uint64_t next_offset() const { return next_; }
  // Next free slot, or a null address when full.
  RemoteAddr allocate_slot();
  // Consecutive slots for `bytes` of code, or a null address when they do not fit.
  RemoteAddr allocate(uint64_t bytes);

 private:
  RemoteAddr base_;
  uint64_t next_ = kFirstSlotOffset;
};

}  // namespace ft
