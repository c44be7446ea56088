// Process and Thread: the tracer's model of a traced thread group.
//
// A Process owns its address space (AddressSpace: modules, breakpoints, out-of-line
// areas), the remote memory handle and its trace file. It owns its threads; each
// Thread owns its shadow call stack. The ProcessTable owns the processes.
#pragma once

#include <signal.h>

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "arch/registers.h"
#include "core/address_space.h"
#include "core/call_stack.h"
#include "core/remote_memory.h"
#include "core/trace_writer.h"

namespace ft {

class Process;

struct Thread {
  pid_t tid = 0;
  Process* process = nullptr;
  CallStack stack;
  bool awaiting_initial_stop = false;  // new thread: its first stop is ours, not the program's
  int held_signal = 0;                 // a signal to deliver at the next resume
  // Attaching and detaching: the thread is in a ptrace-stop functracer has not resumed
  // yet (stopped), possibly a group-stop (the program was stopped by SIGSTOP & co.).
  bool stopped = false;
  bool group_stop = false;
  // Detaching: the ptrace event of the stop it is held at (PTRACE_EVENT_STOP: an
  // interrupt; 0: a signal's delivery; -1: another or unknown). Only a thread at an
  // interrupt or a signal's delivery runs an injected system call: one at a clone,
  // fork or exec event is inside that system call, whose return would overwrite it.
  int held_event = -1;
  // At this stop: the entry breakpoint the thread was pointed back at when functracer
  // took the stop in (survival::take_in); its registers say so, the stop does not.
  RemoteAddr rewound;
  // The registers take_in read (as the kernel reported them), good for one
  // survival::stop_regs while none were written since (ptrace::regs_writes).
  Registers taken_regs;
  uint64_t taken_writes = UINT64_MAX;
  long syscall_nr = -1;  // the system call between its entry and exit stops
  // The time of the thread's latest call or return event: the next is never earlier.
  // Times taken at stops (the clock) and times recorded in the process (the time
  // stamp counter, converted) come from two clocks whose conversion is off by tens of
  // nanoseconds; a callee's return must not come after its caller's.
  uint64_t last_event_ns = 0;
  uint64_t event_ns(uint64_t ns) {
    if (ns < last_event_ns) ns = last_event_ns;
    return last_event_ns = ns;
  }
  // Where _Unwind_Backtrace returns to (ip, sp after the return), or the landing pad
  // the unwinder jumps to (ip, null sp: any): rearm there.
  RemoteAddr rearm_ip, rearm_sp;
  // Returns handled in the process (fast_return.h): the thread's block, -1 if none,
  // and the records functracer wrote there (slot, real return address), outermost
  // first, as it last knew them: the fast frames of `stack`, in order.
  int fast_slot = -1;
  // Its ring in the recorder's region (recorder_space.h), -1 if none.
  int rec_ring = -1;
  std::vector<std::pair<RemoteAddr, RemoteAddr>> fast_records;
  // The word at sp_word_at (the thread's sp at this stop), read with the records.
  bool sp_word_valid = false;
  RemoteAddr sp_word_at;
  uint64_t sp_word = 0;
  // Signals that came while the thread ran the recorder's code (FastPath::hold_signal),
  // held until the recorder returns: the return address replaced by the signal trap
  // (where, and what it was) and the signals, oldest first.
  RemoteAddr held_at, held_return;
  std::vector<siginfo_t> held_signals;
  // FT_UNWIND_VERIFY: the call stack the recorder walked at the entry this thread then
  // took the stop path of (an FT_REC_WALK record: the entry's slot, the return
  // addresses, whether it reached the outermost frame), checked at that stop.
  RemoteAddr walk_slot;
  std::vector<uint64_t> walk_frames;
  bool walk_complete = false;
  // Its exit stop was seen (PTRACE_EVENT_EXIT), with the registers it ended with
  // (memory_snapshot.h).
  bool exit_seen = false;
  Registers exit_regs{};
};

class Process {
 public:
  explicit Process(pid_t pid) : pid_(pid), mem_(pid) {}

  pid_t pid() const { return pid_; }
  RemoteMemory& mem() { return mem_; }

  std::string exe;
  std::string cmdline;
  // Modules, breakpoints, out-of-line areas, return hooks: what exec replaces and
  // fork copies.
  AddressSpace space;
  std::unique_ptr<TraceWriter> trace;
  bool silent = false;        // a child kept under control only until it execs (not reported)
  pid_t reports_to = 0;       // silent vfork child: its calls are reported as this process's
  bool started = false;       // the first exec of a launched program has been seen
  bool release_pending = false;  // an unfollowed fork child: clean up and detach at its first stop
  int fatal_signal = 0;       // the last fatal signal delivered, with its faulting address
  uint64_t fault_addr = 0;
  bool fault_addr_valid = false;
  int exit_code = -1;         // set once it exited
  bool attached = false;      // running before functracer came (-p): it is detached, not killed
  // Its threads, by tid; added and removed through the ProcessTable only.
  using ThreadMap = std::map<pid_t, std::unique_ptr<Thread>>;
  const ThreadMap& threads() const { return threads_; }
  Thread* thread(pid_t tid) const {
    auto it = threads_.find(tid);
    return it == threads_.end() ? nullptr : it->second.get();
  }
  Thread* leader() const { return thread(pid_); }

 private:
  friend class ProcessTable;
  pid_t pid_;
  RemoteMemory mem_;
  ThreadMap threads_;
};

}  // namespace ft
