// RAII guards for the temporary changes functracer makes to a stopped tracee, so that
// every path out of the code that made one — errors included — puts the tracee back
// (design.md §8: "RAII for every change to tracee state").
//
//  - RegisterGuard: a thread's registers, saved before functracer points it at code of
//    its own (an injected system call or function call); written back when the guard
//    goes out of scope.
//  - CodePatch: bytes written over the tracee's code for a moment (a `syscall; int3`
//    stub, a temporary int3 at the entry point after exec); the original bytes are
//    written back when the patch goes out of scope.
//
// Restoring can fail only when the tracee is gone (ESRCH, or its memory with it);
// there is nothing left to repair then, so the destructors ignore the result.
// Long-lived changes (entry breakpoints, hijacked return addresses) are not guards:
// they outlive any scope and are undone by detach (remove_instrumentation).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <vector>

#include "common/result.h"
#include "core/ptrace.h"
#include "arch/registers.h"
#include "core/remote_memory.h"

namespace ft {

class RegisterGuard {
 public:
  RegisterGuard(pid_t tid, const Registers& saved) : tid_(tid), saved_(saved) {}
  ~RegisterGuard() {
    if (armed_) (void)ptrace::set_regs(tid_, saved_);
  }
  RegisterGuard(const RegisterGuard&) = delete;
  RegisterGuard& operator=(const RegisterGuard&) = delete;

  const Registers& saved() const { return saved_; }
  // Writes the saved registers back now, reporting whether that worked.
  Status restore() {
    armed_ = false;
    return ptrace::set_regs(tid_, saved_);
  }

 private:
  pid_t tid_;
  Registers saved_;
  bool armed_ = true;
};

class CodePatch {
 public:
  // Saves the bytes at addr and writes `code` over them. On failure nothing is changed.
  static Result<CodePatch> apply(const RemoteMemory& mem, RemoteAddr addr, std::span<const uint8_t> code) {
    std::vector<uint8_t> saved(code.size());
    if (auto s = mem.read_exact(addr, saved); !s) return s.error();
    if (auto s = mem.write(addr, code); !s) return s.error();
    return CodePatch(mem, addr, std::move(saved));
  }
  // Writes `code` at addr, and `restore` (at least code's size) there afterwards.
  static Result<CodePatch> apply_restoring(const RemoteMemory& mem, RemoteAddr addr, std::span<const uint8_t> code,
                                           std::vector<uint8_t> restore) {
    if (restore.size() < code.size()) return Error::msg("less to put back than to write");
    if (auto s = mem.write(addr, code); !s) return s.error();
    return CodePatch(mem, addr, std::move(restore));
  }
  CodePatch(CodePatch&& o) noexcept : mem_(o.mem_), addr_(o.addr_), saved_(std::move(o.saved_)) { o.mem_ = nullptr; }
  CodePatch& operator=(CodePatch&&) = delete;
  CodePatch(const CodePatch&) = delete;
  ~CodePatch() {
    if (mem_) (void)mem_->write(addr_, saved_);
  }

 private:
  CodePatch(const RemoteMemory& mem, RemoteAddr addr, std::vector<uint8_t> saved)
      : mem_(&mem), addr_(addr), saved_(std::move(saved)) {}
  const RemoteMemory* mem_;
  RemoteAddr addr_;
  std::vector<uint8_t> saved_;
};

}  // namespace ft
