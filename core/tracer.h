// Tracer: the ptrace control loop. It launches the program (fork, PTRACE_SEIZE, exec)
// or attaches to running ones, takes every stop of every traced thread from its
// StopQueue, and turns stops into events: entry breakpoints, trampoline hits
// (returns), new threads and processes, exec, signals, exits. It owns the parts that
// do the rest, each with its own state: the ProcessTable (processes, their threads and
// address spaces), the StopQueue, the Injector, the EventReporter and the ReturnHooks.
// doc/internals.md §1 maps them and follows one breakpoint hit to one trace line.
//
// Cost model: an entry breakpoint costs one ptrace stop (the displaced instruction is
// emulated or run out of line, never single-stepped); a traced return costs one more
// (the trampoline), or none when only its value is wanted (handled in the process,
// fast_return.h). Registers are fetched once per stop and written back at most once.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/attach_session.h"
#include "core/elf_cache.h"
#include "core/event_reporter.h"
#include "core/fast_path.h"
#include "core/injector.h"
#include "core/options.h"
#include "core/plugin_host.h"
#include "core/process.h"
#include "core/process_table.h"
#include "core/return_hooks.h"
#include "core/signature_sources.h"
#include "common/clock.h"
#include "common/result.h"
#include "core/stop_queue.h"
#include "core/wait_status.h"

namespace ft {


class Tracer : private StopQueue::Sleeper, private StopQueue::Watcher, private AttachSession::Engine {
 public:
  Tracer(const Options& opts, PluginHost& host);
  ~Tracer();

  // Runs the program to completion; returns functracer's exit status.
  Result<int> run_launch();
  // Attaches to running processes (-p), traces them until they exit or functracer is
  // asked to stop, then detaches; returns 0 (see attach_session.h).
  Result<int> run_attach(const std::vector<pid_t>& pids);

  TracerStats stats() const {
    TracerStats s = stats_;
    s.stops = stops_.stops();
    return s;
  }
  uint64_t elapsed_ns() const;
  // Where parameter types come from (DWARF, -F files, built-ins, C++ names).
  void set_signature_sources(SignatureSources* s) { signatures_ = s; }
  // Filled as the run goes; complete once the tracer (and its trace files) are gone.
  std::shared_ptr<RunSummary> summary() const { return report_.summary(); }

  // Asynchronous requests from signal handlers (only set flags).
  static void request_toggle();
  // Remember a signal disposition functracer inherited, to give it back to the
  // program it launches.
  static void save_disposition(int sig);
  // Launch mode: functracer's stop signals are for the program, from its start on
  // (see request_stop); called before the signal handlers are installed.
  static void set_launch_mode();
  // sender: the process that sent the signal, 0 when it came from the kernel (a
  // terminal's key).
  static void request_stop(int sig, pid_t sender);
  static bool forward_pending();
  // The launched program has ended: stop signals no longer go anywhere.
  static void program_ended();
  // Whether process `pid` is traced by functracer (TracerPid in /proc/PID/status).
  // A traced program that signals its whole process group (kill(0, sig)) reaches
  // functracer too, which shares the group in launch mode: such a signal was not
  // meant for functracer, and the program has it already. Async-signal-safe.
  static bool is_tracee(pid_t pid);
  static bool take_stop_request();
  static bool stop_requested();
  // A fault in functracer's own code (not a plugin's): one line on stderr, every
  // breakpoint byte and hijacked return address put back, the stopped threads let go
  // of, and exit status 125. Runs in the signal handler: best effort.
  [[noreturn]] static void on_engine_fault(int sig, void* addr);

 private:
  Result<pid_t> spawn();
  void loop();
  // StopQueue::Sleeper: what the loop's waits may be woken for.
  bool wake_requested() override;
  void on_signal(int sig, pid_t sender) override;
  uint64_t idle(uint64_t now) override;
  // StopQueue::Watcher: survival::take_in for SIGTRAP stops of attached processes.
  void reaped(const Stop& s) override;
  // Writes out the trace buffers holding records older than TraceWriter::kMaxAgeNs;
  // returns when the next one is due (0: nothing is buffered).
  uint64_t flush_aged_traces(uint64_t now);
  // Reports what the processes recorded by themselves while functracer waits for a
  // stop; returns when to look again (0: nothing records in the process).
  uint64_t drain_recorders(uint64_t now);
  // Breakpoints whose byte is no longer the trap: another tool's uprobe was put on the
  // function and taken off again (the kernel writes the file's byte back over ours;
  // while it was on, the calls ran past our breakpoint). Each is recorded as a gap
  // (untraced.h) and, with `replant` and the original byte back, planted again.
  // Every kVerifyPeriodNs while functracer waits, and at exit and detach.
  void verify_breakpoints(Process& p, bool replant);
  uint64_t verify_all_breakpoints(uint64_t now);
  uint64_t next_verify_ns_ = 0;
  void handle_status(pid_t tid, int status);
  void handle_new_task(Thread& parent, int event);
  void handle_exec(Thread& t);
  // exec: the other threads and the old image's modules, breakpoints and areas are gone.
  void forget_image(Thread& t);
  void handle_sigtrap(Thread& t);
  // At a trampoline's trap: the thread's ring full, its records copied out and the
  // thread sent back to the entry, running while they are reported. False when not
  // (the trap is handled as usual).
  bool retry_for_room(Thread& t, Registers& regs);
  void on_syscall(Thread& t);
  // The thread reached the signal trap: the signals held while it recorded (FastPath::hold_signal).
  void deliver_held(Thread& t, Registers& regs);
  void handle_signal(Thread& t, int sig);
  void on_entry(Thread& t, Registers& regs, Breakpoint& bp);
  void on_return(Thread& t, Registers& regs);
  // An exit of function fn_id (--returns=ret-sites): its frame returns.
  void leave_function(Thread& t, Registers& regs, uint32_t fn_id);
  // Whether a Go function's entry is the same call starting again on a grown stack.
  bool restarted_go_frame(Thread& t, const CallStack& stack, RemoteAddr slot, uint32_t fn_id, RemoteAddr ret);
  void thread_gone(Thread& t, const WaitStatus& ws);
  void process_gone(Process& p, const WaitStatus& ws);
  void resume(Thread& t, int sig = 0);
  void start_initial_thread(Thread& t);

  // Address space.
  Status setup_address_space(Process& p, Thread& t, Registers& regs);
  // Reads every module in maps (the executable first) and plants its breakpoints.
  Status load_modules(Process& p, Thread& t, Registers& regs, const std::vector<MapsEntry>& maps);
  void rescan_modules(Process& p, Thread& t, Registers& regs);
  void load_module(Process& p, Thread& t, Registers& regs, const MappedModule& mm, bool is_main);
  // Whether m's code belongs to a runtime that walks native stacks (ElfImage::
  // stack_walker): its returns are caught at its return instructions. Said once per file.
  bool walks_stacks(Module& m);
  // Whether the process runs with a shadow stack (its status says so), or will once
  // started (launched: its executable is marked for one and the kernel offers them);
  // sets p.space.shadow_stack, never clears it. exe: the executable's file.
  void check_shadow_stack(Process& p, const std::string& exe);
  // Whether fn's returns are caught at their sites (--returns, the runtime, the
  // shadow stack).
  bool returns_at_sites(Process& p, Module& m);
  void plant(Process& p, Thread& t, Registers& regs, Module& m, RemoteAddr addr, const ElfSymbol& sym,
             const std::string& demangled, const Interest& in, unsigned hooks);
  // Breakpoints on the exits of the function traced at addr, when its returns are
  // caught there (--returns=ret-sites, Go code); once per function.
  void plant_exits(Process& p, Thread& t, Registers& regs, Module& m, RemoteAddr addr, const ElfSymbol& sym);
  // A bare breakpoint at addr (or the one already there); nullptr if refused.
  Breakpoint* plant_raw(Process& p, Thread& t, Registers& regs, RemoteAddr addr, const std::string& what);
  // plant_raw's work, its writes queued in the open pass (plant_pass.h).
  bool queue_breakpoint(Process& p, Thread& t, Registers& regs, RemoteAddr addr, const std::string& what);
  SsolArea* area_near(Process& p, Thread& t, Registers& regs, RemoteAddr addr);
  // IFUNCs (tracer_ifunc.cc): breakpoints on .init functions, from which on the
  // modules are relocated; resolving the pending ones there (or at once, attached).
  void plan_ifunc_resolution(Process& p, Thread& t, Registers& regs);
  void resolve_ifuncs(Process& p, Thread& t, Registers& regs);

  // Releasing a child that is not followed.
  void release_child(Process& child, Thread& t);  // t: its thread, at its first stop

  // Launch mode: passes the stop signals functracer got on to the program, except one
  // the program got itself from the same sender (kill(2) of the process group: once
  // is what it would have got without functracer). check_delivered: look for that.
  void forward_signals(bool check_delivered);
  bool delivered_directly(int sig, pid_t from, uint64_t at);
  // Remembers who sent a stop signal the program takes (for delivered_directly).
  void note_own_signal(Thread& t, int sig);

  // AttachSession::Engine.
  void on_new_task(Thread& parent, int event) override { handle_new_task(parent, event); }
  Status set_up_image(Process& p, Thread& worker, Registers& regs, const std::vector<MapsEntry>& maps) override;
  std::vector<std::shared_ptr<const ElfImage>> read_modules_ahead(pid_t pid) override;
  void resume_stopped(Thread& t) override { resume(t); }
  void dispatch(pid_t tid, int status) override { handle_status(tid, status); }
  void before_detach(Process& p) override;
  void after_removal(Process& p) override { fast_path_.unmap_for_detach(p); }
  // A stop while detaching: the thread is left stopped, put where it can run on.
  void collect_for_detach(Thread& t, const WaitStatus& ws);

  const Options& opts_;
  PluginHost& host_;
  SignatureSources* signatures_ = nullptr;
  ProcessTable procs_;
  StopQueue stops_;
  Injector injector_{stops_};
  pid_t main_pid_ = 0;
  int main_exit_ = 0;
  bool enabled_ = true;
  bool attach_mode_ = false;  // -p: functracer's SIGINT/SIGTERM detach instead of being passed on
  std::map<int, std::pair<pid_t, uint64_t>> own_signals_;  // signal -> (sender, when)
  uint64_t start_ns_ = 0;
  TracerStats stats_;
  ElfCache elf_cache_;  // the ELF files of the traced processes, read once
  std::set<std::string> walkers_told_;  // modules said to walk stacks (walks_stacks)
  EventReporter report_{opts_, host_, procs_, stats_};
  FastPath fast_path_{injector_, report_, stats_};
  ReturnHooks returns_{injector_, report_, stats_};
  AttachSession session_{procs_, stops_, report_, returns_, host_, stats_, *this};
};

}  // namespace ft
