// Injector: runs functracer's own code in a stopped thread of the tracee — a system
// call (mmap of an out-of-line area or of the return records), a function (an IFUNC
// resolver), or the rest of execve up to the new image's first instruction — and gives
// the thread back as it was.
//
// The thread is pointed at a `syscall; int3` stub or at the function with a return
// address on an int3 of the out-of-line area, resumed, and waited for alone (other
// threads' stops stay with the kernel) until it reaches that int3. On the way:
//  - an entry breakpoint in the code it runs is stepped over, unreported (functracer's
//    own calls are not the program's);
//  - a fault is functracer's, not the program's: reported as an error, signal dropped;
//  - another signal is held and delivered at the thread's next resume;
//  - an exit (the process was killed meanwhile) is queued for the main loop.
// The registers are restored on every path (RegisterGuard), temporary code bytes too
// (CodePatch).
#pragma once

#include <cstdint>
#include <initializer_list>

#include "common/result.h"
#include "core/process.h"
#include "arch/registers.h"
#include "common/remote_addr.h"
#include "core/stop_queue.h"
#include "core/wait_status.h"

namespace ft {

class Injector {
 public:
  explicit Injector(StopQueue& stops) : stops_(stops) {}

  // System call nr with args through the `syscall; int3` at stub; t's registers are
  // `saved` before and after. Returns the kernel's return value (-errno on failure).
  // An attached thread runs it followed by code that restores its registers should
  // functracer die meanwhile (RecorderStubs::resume_block); a system call it
  // was stopped in is then restarted by hand, and `saved` says so (write it back, not
  // an older copy). `room` (kResumeBytes of executable memory nothing runs, whose
  // bytes the caller puts back) holds that code when the process has no out-of-line
  // area yet.
  Result<uint64_t> syscall(Thread& t, Registers& saved, RemoteAddr stub, long nr,
                           std::initializer_list<uint64_t> args, RemoteAddr room = RemoteAddr());
  // Calls fn(arg) in t (registers `saved`) below its red zone, returning onto the
  // process's call-return int3; returns what fn returned. An attached thread returns
  // instead onto a trap followed by code that restores its registers, which the
  // program's SIGTRAP handler sends it to should functracer die meanwhile.
  Result<uint64_t> call(Thread& t, const Registers& saved, RemoteAddr fn, uint64_t arg);
  // At the PTRACE_EVENT_EXEC stop the thread is still inside execve: registers set now
  // would have rax overwritten by execve's return value on the way out. Lets it return
  // to user mode onto a temporary int3 at its entry point; regs become its registers
  // there, with the pc on the entry point.
  Status settle_after_exec(Thread& t, Registers& regs);

  // Runs one instruction of t; its registers after it. A signal that comes instead is
  // held (t.held_signal) and the step taken again; an exit is left for the main loop.
  Result<Registers> step(Thread& t);

  // Resumes t until it traps with its pc at expect_ip (see the header comment).
  Result<Registers> run_to_trap(Thread& t, RemoteAddr expect_ip);
  // Resumes t (at an injected system call) until the call's exit stop (the pc just
  // after the system call instruction is after_insn).
  Result<Registers> run_to_syscall_exit(Thread& t, RemoteAddr after_insn);
  // Bytes of an area set aside for the resume code of injected system calls and calls.
  static constexpr uint64_t kResumeBytes = 320;

 private:
  // Writes a resume block (RecorderStubs::resume_block) for t, attached, stopped at
  // `saved`, at `room` or else in the process's first area; its address, or null
  // when the process has none (not attached, no room).
  RemoteAddr write_resume_block(Thread& t, const Registers& saved, arch::RecorderStubs::ResumeAfter first,
                                RemoteAddr room = RemoteAddr());
  // The next stop of t; an exit or a death is left for the main loop and is an error
  // (`running`: what the thread ran).
  Result<WaitStatus> next_stop(Thread& t, const char* running);

  StopQueue& stops_;
};

}  // namespace ft
