// Ptrace: the one place that calls ptrace(2). Every request returns a Result; ESRCH
// ("the thread vanished": it was killed or exited while we looked away) is an
// expected outcome that callers handle, not a crash. With -d every request is logged.
//
// Semantics we rely on (ptrace(2), "Attaching and detaching", "Stopped states"):
//  - PTRACE_SEIZE attaches without stopping and enables PTRACE_EVENT_STOP reporting,
//    so group-stops are distinguishable from signal-delivery-stops and new threads
//    start with a PTRACE_EVENT_STOP instead of a SIGSTOP.
//  - A restart request (CONT, LISTEN, DETACH) is only valid while the thread is in a
//    ptrace-stop; ESRCH otherwise.
#pragma once

#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>
#include <signal.h>

#include <cstdint>

#include "arch/registers.h"
#include "common/result.h"

namespace ft::ptrace {

Status seize(pid_t tid, unsigned long options);
Status set_options(pid_t tid, unsigned long options);
Status cont(pid_t tid, int sig = 0);
// PTRACE_SYSCALL: continue, stopping at the next system call entry or exit.
Status syscall(pid_t tid, int sig = 0);
Status singlestep(pid_t tid);
Status listen(pid_t tid);
Status detach(pid_t tid, int sig = 0);
Status interrupt(pid_t tid);
Result<Registers> get_regs(pid_t tid);
Status set_regs(pid_t tid, const Registers& regs);
// How many times functracer wrote registers of thread tid (set_regs), counted with
// others sharing a bucket: registers read at a stop are still a thread's while this
// has not changed.
uint64_t regs_writes(pid_t tid);
Result<user_fpregs_struct> get_fp_regs(pid_t tid);
Result<unsigned long> event_msg(pid_t tid);
Result<siginfo_t> siginfo(pid_t tid);
// The information of the signal the thread is stopped for (delivered with it when the
// thread is resumed with that signal).
Status set_siginfo(pid_t tid, const siginfo_t& si);
// The shadow stack pointer of a thread running with a shadow stack (x86 CET,
// NT_X86_SHSTK; Linux 6.6): an error for any other thread, and on other machines.
Result<uint64_t> shadow_stack_pointer(pid_t tid);
Status set_shadow_stack_pointer(pid_t tid, uint64_t ssp);
// PTRACE_GET_SYSCALL_INFO (Linux 5.3): what a syscall-stop is (entry or exit).
Result<__ptrace_syscall_info> syscall_info(pid_t tid);

}  // namespace ft::ptrace
