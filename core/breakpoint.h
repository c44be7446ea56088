// Breakpoint: an entry breakpoint planted in the tracee's code, and what a thread that
// hit it must do to go on as if the displaced instruction had run (arch/relocation.h):
// either run it from its out-of-line slot, or have its effect applied to the
// registers (and at most one word of the stack) here.
#pragma once

#include <cstdint>

#include "arch/relocation.h"
#include "common/result.h"
#include "arch/registers.h"
#include "common/remote_addr.h"
#include "core/remote_memory.h"
#include "core/symbol_policy.h"

namespace ft {

struct Module;

struct Breakpoint {
  RemoteAddr addr;
  // The function's entry when the breakpoint stands for it elsewhere: the trap of its
  // trampoline (fast_path.h), which resumes at the relocated first instructions (slot).
  RemoteAddr entry;
  RemoteAddr function() const { return entry.null() ? addr : entry; }
  uint8_t orig_byte = 0;
  arch::Relocation reloc;
  RemoteAddr slot;
  uint32_t fn = 0;              // FunctionInfo id (valid when traced)
  bool traced = false;
  // kHookFunctionExit: the function (FunctionInfo id) this return or tail jump leaves.
  uint32_t exit_of = 0;
  unsigned hooks = kHookNone;
  const Module* module = nullptr;
  uint64_t last_hit_ns = 0;     // its last stop (a gap found later starts after it)
};

// Moves regs past the displaced instruction of bp: to its slot, or to where the
// emulated instruction leads (a call's return address pushed on the stack). Fails
// when the emulation touches memory the program could not touch either.
Status apply_relocation(const RemoteMemory& mem, const Breakpoint& bp, Registers& regs);

}  // namespace ft
