// Backtracer: call stacks of a stopped traced thread.
//
// A stack is walked through frame rules (frame_rules.h: the CFA, return address and
// rbp rules of each code address, read from the module's .eh_frame with libdw and
// cached per address), or, as soon as one frame has no such simple rule, wholly by
// libunwind's remote interface (libunwind(3), unw_create_addr_space(3)), so that the
// result is always libunwind's. FT_UNWIND_VERIFY=1 checks every rule walk against
// libunwind (doc/internals.md §13a).
//
// Both read through accessors that are ours rather than libunwind-ptrace's (_UPT_*),
// which read one word per PTRACE_PEEKDATA and reopen a module's ELF file whenever the
// unwinder moves to another module:
//
//  - The stack is read as one window from the stack pointer up, in one system call
//    per backtrace (grown on demand for deep stacks).
//  - Unwind tables and code are read from the module files, which ElfImage keeps
//    mapped: no system call, and never the int3 bytes functracer planted.
//  - Unwind info is looked up in the module's .eh_frame_hdr table (found from the
//    process's module list, no /proc reads), and libunwind caches what it computed
//    per address space (UNW_CACHE_GLOBAL); both caches are flushed when modules go away.
//  - Return addresses functracer replaced with its trampoline are served as the real
//    ones from the thread's shadow stack, so backtraces are never cut at a traced
//    frame.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "arch/registers.h"

namespace ft {

class Process;
struct Thread;

class Backtracer {
 public:
  Backtracer();
  ~Backtracer();
  Backtracer(const Backtracer&) = delete;
  Backtracer& operator=(const Backtracer&) = delete;

  // The call stack of thread t, stopped with registers regs, innermost first, into out.
  // With skip_first, the frame of regs.ip itself is left out (an event at a function's
  // entry reports from its caller on). Returns the number of frames written.
  size_t capture(Process& p, Thread& t, const Registers& regs, bool skip_first, std::span<uint64_t> out);

  // FT_UNWIND_VERIFY=1: every walk through frame rules, functracer's own and the
  // in-process recorder's, is checked against libunwind.
  static bool verify_requested();

  // A call stack the recorder walked in the process at the entry of a call (FT_REC_WALK)
  // whose entry registers are regs, the thread still at that entry: compared with
  // libunwind's walk of the same stack (FT_UNWIND_VERIFY). complete: the walk reached
  // the outermost frame (else it stopped at the depth asked for).
  void check_recorded_walk(Process& p, Thread& t, const Registers& regs, std::span<const uint64_t> walk,
                           bool complete);

  // Modules were unmapped or replaced: forget cached unwind information.
  void flush();

  struct Stats {
    uint64_t backtraces = 0, frames = 0, stack_reads = 0, other_reads = 0;
    uint64_t by_rules = 0;              // walked through frame rules alone, without libunwind
    uint64_t verified = 0, mismatches = 0;  // FT_UNWIND_VERIFY: compared with libunwind, and differing
    uint64_t recorded_verified = 0, recorded_mismatches = 0;  // the same for walks made in the process
  };
  const Stats& stats() const { return stats_; }
  // Of every Backtracer of the session (for --stats).
  static const Stats& totals();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  Stats stats_;
};

}  // namespace ft
