#include "core/wait_status.h"

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include <cstring>

namespace ft {

WaitStatus WaitStatus::classify(int status) {
  WaitStatus w;
  if (WIFEXITED(status)) {
    w.kind = Kind::Exited;
    w.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    w.kind = Kind::Killed;
    w.signal = WTERMSIG(status);
    w.core_dumped = WCOREDUMP(status);
  } else if (WIFSTOPPED(status)) {
    int sig = WSTOPSIG(status);
    int event = (status >> 16) & 0xff;
    if (event == PTRACE_EVENT_STOP) {
      if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
        w.kind = Kind::GroupStop;
        w.signal = sig;
      } else {
        w.kind = Kind::EventStop;
        w.event = event;
      }
    } else if (event != 0) {
      w.kind = Kind::EventStop;
      w.event = event;
    } else if (sig == (SIGTRAP | 0x80)) {
      w.kind = Kind::SyscallStop;
    } else {
      w.kind = Kind::SignalStop;
      w.signal = sig;
    }
  }
  return w;
}

std::string WaitStatus::describe() const {
  switch (kind) {
    case Kind::Exited: return "exited with status " + std::to_string(exit_code);
    case Kind::Killed: return "killed by " + signal_name(signal);
    case Kind::SignalStop: return "signal-delivery stop " + signal_name(signal);
    case Kind::GroupStop: return "group stop " + signal_name(signal);
    case Kind::EventStop: return "event stop " + std::to_string(event);
    case Kind::SyscallStop: return "syscall stop";
    case Kind::Unknown: break;
  }
  return "unknown status";
}

bool is_fault_signal(int sig) { return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE; }

}  // namespace ft
