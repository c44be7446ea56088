// GoStacks: where a Go frame is, in a form that survives the runtime moving its stack.
//
// A goroutine starts on a small stack; when a function's prologue finds too little
// room, runtime.morestack copies the whole stack to a larger one (runtime.copystack,
// and the garbage collector shrinks stacks the same way), adjusting the saved frame
// pointers and return addresses' slots as it goes. The same frame is then at another
// address, but at the same distance below the top of its goroutine's stack
// (g.stack.hi): the copy keeps the used part's layout and puts it at the new top.
//
// So the shadow stack keys a Go frame not by its sp but by (goroutine, hi - sp), packed
// into one address-like value in a region no real stack uses: each goroutine gets its
// own 4 GiB window (far more than kSameStackDistance apart, so CallStack treats two
// goroutines as two stacks), and deeper frames still have lower keys, as on a real
// stack. The goroutine is the g pointer, in a register in Go's internal ABI
// (Traits::go_g); struct g starts with its stack bounds {lo, hi} (runtime/runtime2.go;
// unchanged since Go 1.0).
//
// A g whose bounds do not contain sp (not a goroutine's stack after all: assembly
// called with another ABI) gives the plain sp.
//
// Goroutines move between threads (the scheduler runs any goroutine on any thread,
// and a goroutine blocked or preempted in a traced call may go on elsewhere), so
// their frames are kept per goroutine, not per thread: each goroutine (each g, in
// the order first seen, numbered from 1) has its own CallStack here. The runtime
// reuses the g of a goroutine that ended for a later one, which keeps its number.
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>

#include "arch/registers.h"
#include "common/remote_addr.h"
#include "core/call_stack.h"

namespace ft {

class RemoteMemory;

class GoStacks {
 public:
  struct Place {
    RemoteAddr key;           // the frame's key (sp when not on a goroutine's stack)
    uint32_t goroutine = 0;   // its goroutine's number; 0: not on a goroutine's stack
  };
  // Where the frame whose return address is at sp is, for a thread whose registers
  // are regs.
  Place place(const RemoteMemory& mem, const Registers& regs, RemoteAddr sp);
  RemoteAddr key(const RemoteMemory& mem, const Registers& regs, RemoteAddr sp) { return place(mem, regs, sp).key; }
  // The frames of goroutine n (n >= 1, a number place() gave).
  CallStack& stack(uint32_t n) { return stacks_[n - 1]; }
  uint32_t count() const { return static_cast<uint32_t>(stacks_.size()); }

 private:
  static constexpr uint64_t kBase = uint64_t{1} << 62;
  static constexpr uint64_t kWindow = uint64_t{1} << 32;
  std::unordered_map<uint64_t, uint32_t> index_;  // g -> its number (and window)
  std::deque<CallStack> stacks_;                   // by number - 1 (references stay valid)
};

}  // namespace ft
