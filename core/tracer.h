// Tracer: the ptrace control loop. It launches the program (fork, PTRACE_SEIZE, exec),
// waits for every stop of every traced thread (waitpid(-1, __WALL)), and turns stops
// into events: entry breakpoints, trampoline hits (returns), new threads and
// processes, exec, signals, exits. See doc/internals.md for the life of a stop.
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
#include <string>
#include <unordered_map>
#include <vector>

#include "core/options.h"
#include "core/plugin_host.h"
#include "core/process.h"
#include "common/clock.h"
#include "common/result.h"
#include "core/wait_status.h"

namespace ft {

struct TracerStats {
  uint64_t stops = 0;         // every ptrace stop reported by waitpid
  uint64_t calls = 0;         // traced entries reported
  uint64_t returns = 0;       // traced returns reported
  uint64_t unwound = 0;       // frames left without returning
  uint64_t lifecycle = 0;     // thread/process/signal events
  uint64_t syscalls = 0;      // system call entries and exits reported
  uint64_t breakpoints = 0;   // planted
  uint64_t refused = 0;       // functions that could not be traced safely
  uint64_t fast_frames = 0;   // returns hooked with a thread's stub (fast_return.h)
  uint64_t fast_returns = 0;  // of those, returns handled in the process without a stop
  uint64_t events() const { return calls + returns + unwound + lifecycle + syscalls; }
};

class Tracer {
 public:
  Tracer(const Options& opts, PluginHost& host);
  ~Tracer();

  // Runs the program to completion; returns functracer's exit status.
  Result<int> run_launch();
  // Attaches to running processes (-p), traces them until they exit or functracer is
  // asked to stop, then detaches; returns 0 (see tracer_attach.cc).
  Result<int> run_attach(const std::vector<pid_t>& pids);

  const TracerStats& stats() const { return stats_; }
  uint64_t elapsed_ns() const;

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
  pid_t wait_any(int* status);
  // Queues every stop already pending (in deferred_), so that each is handled once
  // before any thread is served again.
  void collect_pending();
  // Writes out the trace buffers holding records older than TraceWriter::kMaxAgeNs;
  // returns when the next one is due (0: nothing is buffered).
  uint64_t flush_aged_traces(uint64_t now);
  void handle_status(pid_t tid, int status);
  void handle_new_task(Thread& parent, int event);
  void handle_exec(Thread& t);
  // exec: the other threads and the old image's modules, breakpoints and areas are gone.
  void forget_image(Thread& t);
  void handle_sigtrap(Thread& t);
  void on_syscall(Thread& t);
  void handle_signal(Thread& t, int sig);
  void on_entry(Thread& t, Registers& regs, Breakpoint& bp);
  void on_return(Thread& t, Registers& regs);
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
  void plant(Process& p, Thread& t, Registers& regs, Module& m, uint64_t addr, const ElfSymbol& sym,
             const std::string& demangled, const Interest& in, unsigned hooks);
  // A bare breakpoint at addr (or the one already there); nullptr if refused.
  Breakpoint* plant_raw(Process& p, Thread& t, Registers& regs, uint64_t addr, const std::string& what);
  SsolArea* area_near(Process& p, Thread& t, Registers& regs, RemoteAddr addr);
  Result<uint64_t> inject_syscall(Thread& t, const Registers& saved, RemoteAddr stub, long nr,
                                  std::initializer_list<uint64_t> args);
  Result<Registers> run_to_trap(Thread& t, uint64_t expect_ip);
  // Calls fn(arg) in the stopped thread t, whose registers are saved, and returns what
  // it returned; the thread's registers are put back.
  Result<uint64_t> call_function(Thread& t, const Registers& saved, uint64_t fn, uint64_t arg);
  // IFUNCs (tracer_ifunc.cc): breakpoints on .init functions, from which on the
  // modules are relocated; resolving the pending ones there (or at once, attached).
  void plan_ifunc_resolution(Process& p, Thread& t, Registers& regs);
  void resolve_ifuncs(Process& p, Thread& t, Registers& regs);
  Status settle_after_exec(Process& p, Thread& t, Registers& regs);
  Status apply_relocation(Process& p, const Breakpoint& bp, Registers& regs);
  void rearm(Thread& t, uint64_t sp);
  void disarm(Thread& t);

  // Releasing a child that is not followed.
  void release_child(Process& child);

  // Launch mode: passes the stop signals functracer got on to the program, except one
  // the program got itself from the same sender (kill(2) of the process group: once
  // is what it would have got without functracer). check_delivered: look for that.
  void forward_signals(bool check_delivered);
  bool delivered_directly(int sig, pid_t from, uint64_t at);
  // Remembers who sent a stop signal the program takes (for delivered_directly).
  void note_own_signal(Thread& t, int sig);

  // Attaching and detaching (tracer_attach.cc).
  Status attach(pid_t pid);
  Status seize_threads(Process& p);
  Status stop_thread(Thread& t);
  Status setup_attached(Process& p);
  void detach_all();
  // A stop while detaching: the thread is left stopped, put where it can run on.
  void collect_for_detach(Thread& t, const WaitStatus& ws);
  // Takes every breakpoint byte and hijacked return address out of the process, and
  // marks its areas for the next functracer.
  void remove_instrumentation(Process& p);
  // Areas an earlier functracer left in the process (attach).
  void adopt_areas(Process& p, const std::vector<MapsEntry>& maps);
  void detach_process(Process& p);
  // The trampoline was reached: pops the frame, reports the return and points regs at
  // the real return address. False when no frame answers for it.
  bool finish_return(Thread& t, Registers& regs);
  // Returns handled in the process (tracer_fast_return.cc). fast_block: the thread's
  // block, set up on first use (-1: none). fast_push: hooks the return at [slot] with
  // the thread's stub and records it; false when it cannot (use the trampoline).
  // drain_fast: reports the returns the process handled since the last stop (call it
  // before handling any stop of the process). sync_fast: writes the thread's records
  // again after its shadow stack changed other than by a push or a drained return.
  int fast_block(Process& p, Thread& t, Registers& regs);
  bool fast_push(Thread& t, Registers& regs, uint64_t slot, uint64_t real_ret);
  // stopped, sp: the thread whose stop this is and its sp; the word there is read
  // along (Thread::sp_word).
  void drain_fast(Process& p, Thread* stopped = nullptr, uint64_t sp = 0);
  void sync_fast(Thread& t);
  void release_fast(Thread& t);
  bool fast_allowed(const Process& p) const {
    return fast_returns_ && !p.silent && !p.reports_to && !p.fast_unavailable;
  }

  // Reporting.
  ft_ctx ctx(Process& p, Thread* t, const Registers* regs, uint64_t now, unsigned depth = 0);
  // A `lost` record: count events of thread t that cannot be recorded, and why.
  void record_lost(Process& p, Thread& t, int64_t count, const std::string& reason);
  void lifecycle(Process& p, Thread* t, ft_event_kind kind, int64_t value, uint64_t address, const char* text,
                 TraceRecord r, const std::string& line);
  // frames: innermost first, already popped; base_depth: how many frames are below them.
  void report_unwound(Thread& t, const std::vector<ShadowFrame>& frames, const char* reason, uint64_t now,
                      size_t base_depth);
  // deferred: the record of a return handled in the process (its xmm0), or null.
  void report_returns(Thread& t, const Registers& regs, const CallStack::Return& r, uint64_t now,
                      const fastret::Record* deferred = nullptr);
  // Reports frames abandoned by a longjmp and un-hijacks any that still hold the
  // trampoline.
  void abandon(Thread& t, const std::vector<ShadowFrame>& frames, uint64_t now, size_t base_depth);
  Status open_trace(Process& p);
  void write_modules(Process& p);
  void write_module(Process& p, const Module& m);

  Thread* thread_of(pid_t tid);

  const Options& opts_;
  PluginHost& host_;
  std::map<pid_t, std::unique_ptr<Process>> processes_;
  std::unordered_map<pid_t, Thread*> threads_;
  std::map<pid_t, int> early_stops_;  // stops of new tasks seen before their creation event
  std::deque<std::pair<pid_t, int>> deferred_;  // statuses collected while waiting for one thread
  pid_t main_pid_ = 0;
  int main_exit_ = 0;
  bool enabled_ = true;
  bool fast_returns_ = true;  // FT_FAST_RETURNS=0 turns returns handled in the process off
  std::optional<fastret::TscClock> tsc_;  // created at the first such return
  bool attach_mode_ = false;  // -p: functracer's SIGINT/SIGTERM detach instead of being passed on
  bool detaching_ = false;    // stopping every thread to let go of them
  std::map<int, std::pair<pid_t, uint64_t>> own_signals_;  // signal -> (sender, when)
  uint64_t start_ns_ = 0;
  static constexpr uint64_t kSpinNs = 100'000;  // polling window of wait_any
  uint64_t spin_ns_ = 0;
  uint64_t last_wait_ns_ = 0;
  TracerStats stats_;
  // During an entry breakpoint's stop: its registers with the pc on the breakpoint
  // (where the program is), for events that arise there without registers of their
  // own (modules found by the linker hook, frames unwound), so backtraces start right.
  const Registers* stop_regs_ = nullptr;
};

}  // namespace ft
