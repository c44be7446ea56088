// EventReporter: how what happens in a traced process reaches the plugins and the
// trace files. Every event — a call, a return, a frame left without returning, a
// thread or process event, a system call, a module — becomes an ft_ctx (plugin.h)
// with the process it is reported as (a silent vfork child's are its parent's), the
// thread, the registers at the event and the call depth, and is handed to the
// PluginHost; lifecycle events are also written as records. The reporter writes each
// trace file's header and module map, and counts what it reported (TracerStats).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/trace_record.h"
#include "core/call_stack.h"
#include "core/fast_return.h"
#include "core/options.h"
#include "core/plugin_host.h"
#include "core/process.h"
#include "core/process_table.h"
#include "core/run_summary.h"
#include "arch/registers.h"

namespace ft {

struct TracerStats {
  uint64_t stops = 0;         // every ptrace stop reported by waitpid
  uint64_t calls = 0;         // traced entries reported
  uint64_t returns = 0;       // traced returns reported
  uint64_t unwound = 0;       // frames left without returning
  uint64_t moved_returns = 0; // returns through a slot no frame hijacked (CallStack::recover)
  uint64_t lifecycle = 0;     // thread/process/signal events
  uint64_t syscalls = 0;      // system call entries and exits reported
  uint64_t breakpoints = 0;   // planted
  uint64_t refused = 0;       // functions that could not be traced safely
  uint64_t fast_frames = 0;   // returns hooked with a thread's stub (fast_return.h)
  uint64_t fast_returns = 0;  // of those, returns handled in the process without a stop
  uint64_t patched = 0;       // function entries patched to reach the in-process recorder
  uint64_t patched_entry_kept = 0;  // of those, patched after their first instruction (an
                                    // endbr64 or one kept in place: arch/entry_patch.h)
  uint64_t patch_refused = 0; // entries that kept a breakpoint although their plugins declared
  uint64_t recorded_calls = 0;    // calls recorded in the process (no stop)
  uint64_t recorded_returns = 0;  // returns recorded in the process
  uint64_t recorded_lost = 0;     // events a full buffer in the process could not take
  uint64_t room_retries = 0;      // entries that found their buffer full and were recorded
                                  // once its records were copied out (Tracer::retry_for_room)
  uint64_t attaches = 0;            // processes attached to (-p)
  uint64_t attach_held_max_ns = 0;  // the longest time a process's threads were held at an attach
  uint64_t attach_setup_max_ns = 0; // of that attach, the set-up (modules read, probes planted)
  uint64_t snapshots = 0;     // process memory handed to plugins at an end or a detach
  uint64_t snapshot_ns = 0;   // the plugins' time on them
  uint64_t events() const { return calls + returns + unwound + lifecycle + syscalls; }
};

class EventReporter {
 public:
  EventReporter(const Options& opts, PluginHost& host, const ProcessTable& procs, TracerStats& stats)
      : opts_(opts), host_(host), procs_(procs), stats_(stats) {}

  // During an entry breakpoint's stop: its registers with the pc on the breakpoint
  // (where the program is), for events that arise there without registers of their
  // own (modules found by the linker hook, frames unwound), so backtraces start right.
  class AtStop {
   public:
    AtStop(EventReporter& r, const Registers& regs) : r_(r) { r_.stop_regs_ = &regs; }
    ~AtStop() { r_.stop_regs_ = nullptr; }
    AtStop(const AtStop&) = delete;
    AtStop& operator=(const AtStop&) = delete;

   private:
    EventReporter& r_;
  };

  // While it lives, calls, returns and unwound frames are a goroutine's (go_stacks.h):
  // their frames are on its stack, not the thread's, and their records carry
  // -goroutine as their TID (the thread in a `thread` field: doc/trace-format.md).
  class OfGoroutine {
   public:
    OfGoroutine(EventReporter& r, const CallStack& stack, uint32_t goroutine) : r_(r) {
      r_.stream_stack_ = &stack;
      r_.stream_tid_ = -static_cast<int>(goroutine);
    }
    ~OfGoroutine() {
      r_.stream_stack_ = nullptr;
      r_.stream_tid_ = 0;
    }
    OfGoroutine(const OfGoroutine&) = delete;
    OfGoroutine& operator=(const OfGoroutine&) = delete;

   private:
    EventReporter& r_;
  };
  // Every goroutine's open frames reported unwound (the process ended, exec'd or is
  // detached), on thread t.
  void close_goroutines(Process& p, Thread& t, const char* reason, uint64_t now);

  ft_ctx ctx(Process& p, Thread* t, const Registers* regs, uint64_t now, unsigned depth = 0) const;

  // deferred: recorded in the process, reported later: only the registers in regs
  // are known (ft_capture).
  // caller: the return address the call was made with, when deferred.
  void call(Process& p, Thread& t, const Registers& regs, uint64_t now, unsigned depth, const FunctionInfo& fn,
            RemoteAddr call_pc, bool deferred = false, RemoteAddr caller = RemoteAddr(),
            std::span<const uint64_t> stack = {});
  // deferred: the record of a return handled in the process (its xmm0), or null.
  void report_returns(Thread& t, const Registers& regs, const CallStack::Return& r, uint64_t now,
                      const fastret::Record* deferred = nullptr);
  // frames: innermost first, already popped; base_depth: how many frames are below them.
  void report_unwound(Thread& t, const std::vector<ShadowFrame>& frames, const char* reason, uint64_t now,
                      size_t base_depth);
  void syscall(Process& p, Thread& t, const ft_syscall& sc);
  // A module mapped (loaded) or gone; m has an ELF image.
  void module(Process& p, Thread& t, const Module& m, bool loaded);
  // A `lost` record: count events of thread t that cannot be recorded, and why.
  void record_lost(Process& p, Thread& t, int64_t count, const std::string& reason);
  // A thread or process event: the record r, a line for the stderr stream (if not
  // empty), and the ft_event for plugins.
  void lifecycle(Process& p, Thread* t, ft_event_kind kind, int64_t value, uint64_t address, const char* text,
                 TraceRecord r, const std::string& line);

  // Trace files (with -o): created with the header, published once on disk.
  Status open_trace(Process& p);
  // After an exec: the trace takes the name of the program the process became
  // (doc/trace-format.md, file names).
  void exec_done(Process& p);
  // What the run reported, for the summary at exit; it outlives the tracer.
  const std::shared_ptr<RunSummary>& summary() const { return summary_; }
  void write_modules(Process& p);
  void write_module(Process& p, const Module& m);

 private:
  const Options& opts_;
  PluginHost& host_;
  const ProcessTable& procs_;
  TracerStats& stats_;
  const Registers* stop_regs_ = nullptr;
  const CallStack* stream_stack_ = nullptr;  // OfGoroutine
  int stream_tid_ = 0;
  // The frames the depths of t's events count: its own, or its goroutine's.
  const CallStack& frames_of(const Thread& t) const { return stream_stack_ ? *stream_stack_ : t.stack; }
  std::shared_ptr<RunSummary> summary_ = std::make_shared<RunSummary>();

  std::string trace_path(const Process& p) const;
  void count(const ft_ctx& c) { summary_->event(c.process->pid()); }
};

}  // namespace ft
