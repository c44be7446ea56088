// Registers: the general-purpose register set of a stopped thread, as returned by
// PTRACE_GETREGS (struct user_regs_struct of the host architecture), with
// arch-neutral accessors. The accessors are implemented in arch/<arch>/registers.cc.
#pragma once

#include <sys/user.h>

#include <cstdint>
#include <string>

namespace ft {

struct Registers {
  user_regs_struct raw{};

  uint64_t ip() const;
  void set_ip(uint64_t v);
  uint64_t sp() const;
  void set_sp(uint64_t v);
  // Integer argument i (0-based) of the platform C calling convention, at function
  // entry (x86-64 SysV: rdi rsi rdx rcx r8 r9; beyond that 0).
  uint64_t arg(unsigned i) const;
  uint64_t ret() const;        // integer return value register
  // The syscall number register and "no syscall to restart" marker (orig_rax = -1).
  void set_no_restart();
  std::string dump() const;    // for internal-error messages
};

}  // namespace ft
