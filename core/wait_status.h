// WaitStatus: what a waitpid(2) status means for a traced thread (ptrace(2), "Stopped
// states"). With PTRACE_SEIZE and PTRACE_O_TRACESYSGOOD every stop is one of:
//   - a ptrace event stop: status>>8 == SIGTRAP | (event << 8)   (clone, fork, exec, ...)
//     PTRACE_EVENT_STOP with a stop signal is a group-stop; with SIGTRAP (or 0) it is
//     the initial stop of a new thread or the answer to PTRACE_INTERRUPT;
//   - a syscall stop: WSTOPSIG == SIGTRAP | 0x80;
//   - a signal-delivery stop: any other WSTOPSIG (SIGTRAP included: a breakpoint, or a
//     SIGTRAP the program got for its own reasons).
#pragma once

#include <string>

#include "common/signal_names.h"  // signal_name(), for the signals a status carries

namespace ft {

struct WaitStatus {
  enum class Kind { Exited, Killed, SignalStop, GroupStop, EventStop, SyscallStop, Unknown };
  Kind kind = Kind::Unknown;
  int exit_code = 0;  // Exited
  int signal = 0;     // Killed: fatal signal; SignalStop/GroupStop: the signal
  int event = 0;      // EventStop: PTRACE_EVENT_*
  bool core_dumped = false;

  static WaitStatus classify(int status);
  std::string describe() const;
};

// SIGSEGV, SIGBUS, SIGILL, SIGFPE: signals an instruction raises.
bool is_fault_signal(int sig);

}  // namespace ft
