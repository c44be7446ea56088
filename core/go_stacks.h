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
#pragma once

#include <cstdint>
#include <unordered_map>

#include "arch/registers.h"
#include "common/remote_addr.h"

namespace ft {

class RemoteMemory;

class GoStacks {
 public:
  // The key of the frame whose return address is at sp, for a thread whose registers
  // are regs.
  RemoteAddr key(const RemoteMemory& mem, const Registers& regs, RemoteAddr sp);

 private:
  static constexpr uint64_t kBase = uint64_t{1} << 62;
  static constexpr uint64_t kWindow = uint64_t{1} << 32;
  std::unordered_map<uint64_t, uint64_t> index_;  // g -> its window
};

}  // namespace ft
