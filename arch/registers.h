// Registers: the general-purpose register set of a stopped thread, as returned by
// PTRACE_GETREGS (struct user_regs_struct of the host architecture), with
// arch-neutral accessors. The accessors are implemented in arch/<arch>/registers.cc
// for the host architecture; the conventions that say which register is which
// (arch::Traits in arch/arch.h) name registers by DWARF number, which get() and set()
// take.
#pragma once

#include <sys/user.h>

#include <cstdint>
#include <string>

#include "common/remote_addr.h"

namespace ft {

struct Registers {
  user_regs_struct raw{};

  // The program counter and the stack pointer: tracee addresses.
  RemoteAddr ip() const;
  void set_ip(RemoteAddr v);
  RemoteAddr sp() const;
  void set_sp(RemoteAddr v);
  // The thread pointer (x86-64: the fs base): per thread, what the in-process
  // recorder finds a thread's buffer by (core/recorder_abi.h).
  uint64_t thread_pointer() const;
  void set_thread_pointer(uint64_t v);
  // Integer argument i (0-based) of the platform C calling convention, at function
  // entry (x86-64 SysV: rdi rsi rdx rcx r8 r9; beyond that 0).
  uint64_t arg(unsigned i) const;
  uint64_t ret() const;        // integer return value register
  // The syscall number register and "no syscall to restart" marker (orig_rax = -1).
  void set_no_restart();
  // A register by its DWARF number (or architecture-local number from
  // arch::kFirstPrivateReg on); a register the set does not hold reads as 0 and is
  // not written.
  uint64_t get(int reg) const;
  void set(int reg, uint64_t v);
  std::string dump() const;    // for internal-error messages
};

}  // namespace ft
