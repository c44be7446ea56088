// The architecture's half of the in-process recorder (core/recorder.h): the code that
// brings a thread from a patched function entry, or from a hooked return, into the
// recorder and back, without a system call.
//
// Entry trampoline, one per recorded function, reached by the jump written over the
// function's first instructions: saves every register a call may carry an argument
// in, reads the time stamp counter and the thread pointer, calls
// ft_recorder_entry(region, site, args, slot, tp, tsc), restores the registers, and
// then either runs the function's displaced instructions (relocated to the
// trampoline: `window`) and jumps back into the function after them, or, when the
// recorder says FT_REC_STOP, traps at slow_trap: functracer handles the entry with a
// stop and resumes the thread at body (the displaced instructions).
//
// Return stub, one per address space: a hooked return comes here. Saves the return
// registers, calls ft_recorder_return(region, sp_after, rets, tp, tsc) and jumps to
// the real return address it gives, with the return registers as the function left
// them; on 0 it traps at slow_trap with the stack as a return to the trampoline
// leaves it (functracer handles it as such).
//
// Neither uses the stack above the stack pointer it was entered with, nor a vector
// register; both keep every register the function's caller may rely on. The
// recorder is called with a correctly aligned stack when the program's was.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "arch/registers.h"

namespace ft::arch {

struct RecorderCode {
  std::vector<uint8_t> code;
  size_t body = 0;        // entry trampoline: where the displaced instructions start
  size_t slow_trap = 0;   // the trap of the stop path
  size_t after_call = 0;  // where the recorder's function returns to
  size_t stop_resume = 0; // entry trampoline: where the stop path resumes the thread (the
                          // copy of a kept first instruction, else body)
};

// The program's SIGTRAP handler while functracer is attached (core/recorder_abi.h,
// surviving functracer's death): its entry at offset 0, the action's restorer at
// `restorer`.
struct SignalCode {
  std::vector<uint8_t> code;
  size_t restorer = 0;
};

// How the stubs read the thread pointer, the key of the thread's ring
// (core/recorder_abi.h): from the register itself where the kernel lets the program
// (x86-64: rdfsbase), else from the first word of the thread control block it points
// at, which the TLS ABI has point to itself (x86-64: mov from fs:0). The second needs
// a thread pointer that points at readable memory: functracer gives a thread that has
// none yet (before the C library set it up) one to a word of zeros (FastPath).
enum class ThreadPointerRead { kRegister, kSelfWord };

struct RecorderStubs {
  // at: the trampoline's address; entry_fn: ft_recorder_entry's address; window: the
  // displaced instructions, relocated to run at at + body (see arch/entry_patch.h);
  // resume: where the function goes on after them; stack_delta and kept: the
  // function's first instruction kept in place (EntryPatch::stack_delta,
  // kept_relocated, placed kept_copy_gap bytes after the window's copy), which ran
  // before the jump: the slow trap undoes its stack effect, the stop path runs its copy.
  RecorderCode (*entry_trampoline)(uint64_t at, uint64_t region, uint64_t site, uint64_t entry_fn,
                                   std::span<const uint8_t> window, uint64_t resume, int64_t stack_delta,
                                   std::span<const uint8_t> kept, ThreadPointerRead tp);
  RecorderCode (*return_stub)(uint64_t region, uint64_t return_fn, ThreadPointerRead tp);
  // Enters trap_fn (ft_recorder_trap) with the region's header added to the kernel's
  // arguments.
  SignalCode (*trap_handler)(uint64_t region, uint64_t trap_fn);
  // What comes first in a resume block (resume_block).
  enum class ResumeAfter { kSyscall, kTrap };
  // A system call functracer makes the thread run (kSyscall), or the trap a function
  // functracer calls in the thread returns onto (kTrap), followed by code that puts
  // every register back as in `saved` and goes on where the thread was (a system call
  // it was stopped in restarted as the kernel would): placed at `at`. functracer stops
  // the thread at the call's exit (at the trap) and puts the registers back itself;
  // should it die before, the thread does it alone (after the trap: sent past it by
  // the program's SIGTRAP handler, survival::note_resume).
  std::vector<uint8_t> (*resume_block)(const Registers& saved, uint64_t at, ResumeAfter first);
  // Registers stopped inside a system call the kernel would restart (no handler runs):
  // changed to run it again from its instruction, as the kernel's restart does. The
  // restart itself happens only on the way out of a signal stop, not of the exit stop
  // of another system call.
  void (*restart_syscall)(Registers& r);
  // Stepping a thread through the stubs (a detach): an instruction that pushes or pops
  // the flags is not stepped but done by hand. Stepped, a push would save the step's
  // trap flag, and the kernel takes a stepped pop as the program's own setting of the
  // trap flag, which it then leaves on after the detach. Returns the instruction's
  // length when `code` starts with one (push: +1 in `dir`, pop: -1), else 0.
  size_t (*flags_transfer)(std::span<const uint8_t> code, int& dir);
  int flags_reg;       // the flags register (Registers::get/set)
  uint64_t trap_flag;  // its single-step bit
  // EntryPatchRequest::kept_copy_gap for this trampoline.
  size_t kept_copy_gap;
};

// x86-64: the thread pointer is the fs base, read with rdfsbase only where the kernel
// allows it (AT_HWCAP2 & HWCAP2_FSGSBASE, Linux 5.9 and later, a CPU or hypervisor
// that has it), else from fs:0.
extern const RecorderStubs kX86_64RecorderStubs;

}  // namespace ft::arch
