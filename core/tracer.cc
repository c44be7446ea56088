// The Tracer's loop: each stop from the StopQueue dispatched by kind, and the life of
// threads and processes (new tasks, exec, exit, signals). The map of the engine is in
// doc/internals.md §1.
#include "core/tracer.h"
#include "arch/arch.h"

#include <sched.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/check.h"
#include "common/hex.h"
#include "common/signal_names.h"
#include "core/instrumentation.h"
#include "core/log.h"
#include "core/memory_budget.h"
#include "core/plant_pass.h"
#include "core/memory_snapshot.h"
#include "functracer/schema.h"
#include "core/procfs.h"
#include "core/ptrace.h"
#include "core/symbol_policy.h"
#include "core/untraced.h"
#include "core/die_at.h"
#include "core/survival.h"

namespace ft {
namespace {

std::atomic<bool> g_toggle{false};
Tracer* g_tracer = nullptr;  // for on_engine_fault

}  // namespace

void Tracer::request_toggle() { g_toggle = true; }

Tracer::Tracer(const Options& opts, PluginHost& host) : opts_(opts), host_(host) {
  g_tracer = this;
  start_ns_ = monotonic_ns();
  if (fast_path_.wanted()) returns_.set_fast_path(&fast_path_);
  enabled_ = !opts.start_disabled;
  stops_.set_watcher(this);
}

void Tracer::reaped(const Stop& s) {
  Thread* t = procs_.thread(s.tid);
  if (!t) return;
  t->rewound = RemoteAddr();
  t->taken_writes = UINT64_MAX;
  if (!WIFSTOPPED(s.status) || WSTOPSIG(s.status) != SIGTRAP || (s.status >> 16) != 0) return;
  if (survival::take_in(*t->process, *t)) die_at::reached(die_at::Moment::Trap);
}

Tracer::~Tracer() { g_tracer = nullptr; }

void Tracer::on_engine_fault(int sig, void* addr) {
  // Only write(2) for the message: the heap may be what is broken.
  char line[160];
  size_t n = 0;
  auto put = [&](const char* s) {
    while (*s && n < sizeof line - 1) line[n++] = *s++;
  };
  put("functracer: internal error (");
  put(SignalName(sig).c_str());
  if (addr) {
    put(" at ");
    put(HexNumber(reinterpret_cast<uintptr_t>(addr)).c_str());
  }
  put("); restoring the traced processes and exiting\n");
  (void)!::write(2, line, n);
  if (Tracer* t = g_tracer) {
    for (auto& [pid, p] : t->procs_) {
      remove_instrumentation(*p);
      for (auto& [tid, th] : p->threads()) {
        if (!th->stopped) continue;  // running: the kernel lets go of it when functracer exits
        if (auto regs = ptrace::get_regs(tid)) {
          RemoteAddr at = arch::host().trap_address(regs->ip());
          bool hook = p->space.is_trampoline(at) || p->space.fast_slow_stop(at) >= 0;
          if (p->space.breakpoints.count(at) || hook) {
            // On the original instruction again; a return through the trampoline
            // goes to the real return address, which is the frame's own.
            if (hook && !th->stack.empty()) regs->set_ip(th->stack.frames().back().real_ret);
            else regs->set_ip(at);
            (void)ptrace::set_regs(tid, *regs);
          }
        }
        (void)ptrace::detach(tid, 0);
      }
    }
  }
  ::_exit(125);
}

uint64_t Tracer::elapsed_ns() const { return monotonic_ns() - start_ns_; }

void Tracer::loop() {
  uint64_t handled = 0;
  while (!procs_.empty()) {
    if ((attach_mode_ && take_stop_request()) || host_.crashed()) {
      session_.detach_all();
      break;
    }
    if (auto why = memory_budget::take_exceeded(monotonic_ns())) {
      log::error("out of memory ({}): detaching from the traced processes, whose traces end here", *why);
      session_.detach_all();
      break;
    }
    if (!attach_mode_ && forward_pending()) forward_signals(true);
    if (g_toggle.exchange(false)) {
      enabled_ = !enabled_;
      log::info("tracing {}", enabled_ ? "enabled" : "disabled");
    }
    auto stop = stops_.next(*this, procs_.thread_count() > 1);
    if (!stop) {
      if (errno == EINTR) continue;
      if (errno == ECHILD) break;
      log::error("waitpid: {}", std::strerror(errno));
      break;
    }
    handle_status(stop->tid, stop->status);
    // A trace whose process makes no records while others keep functracer busy.
    if ((++handled & 1023) == 0) flush_aged_traces(monotonic_ns());
  }
  // Processes we could no longer wait for (should not happen): flush what we have.
  for (auto& [pid, p] : procs_)
    if (p->trace) p->trace->flush();
}

bool Tracer::wake_requested() {
  return g_toggle.load() || (attach_mode_ && stop_requested()) || (!attach_mode_ && forward_pending()) ||
         memory_budget::pending();
}

void Tracer::on_signal(int sig, pid_t sender) {
  if (sender && is_tracee(sender)) return;  // see is_tracee
  if (sig == SIGUSR1) request_toggle();
  else request_stop(sig, sender);
}

uint64_t Tracer::idle(uint64_t now) {
  memory_budget::poll(now);  // the recorder's events come without stops: looked at here too
  uint64_t due = drain_recorders(now);
  uint64_t traces = flush_aged_traces(monotonic_ns());
  if (!due || (traces && traces < due)) due = traces;
  uint64_t verify = verify_all_breakpoints(now);
  if (!due || (verify && verify < due)) due = verify;
  return due;
}

uint64_t Tracer::verify_all_breakpoints(uint64_t now) {
  // A uprobe taken off leaves the function untraced until this finds it.
  constexpr uint64_t kVerifyPeriodNs = 250'000'000;
  if (procs_.empty()) return 0;
  if (now < next_verify_ns_) return next_verify_ns_;
  for (auto& [pid, p] : procs_) verify_breakpoints(*p, true);
  next_verify_ns_ = now + kVerifyPeriodNs;
  return next_verify_ns_;
}

uint64_t Tracer::drain_recorders(uint64_t now) {
  // Often enough that a thread calling all the time does not fill its buffer.
  constexpr uint64_t kDrainPeriodNs = 1'000'000;
  bool any = false;
  for (auto& [pid, p] : procs_) {
    if (!p->space.recorder.ready || p->space.recorder.borrowed) continue;
    any = true;
    returns_.drain(*p);
  }
  return any ? now + kDrainPeriodNs : 0;
}

uint64_t Tracer::flush_aged_traces(uint64_t now) {
  uint64_t due = 0;
  for (auto& [pid, p] : procs_) {
    if (!p->trace || !p->trace->pending_since()) continue;
    uint64_t d = p->trace->pending_since() + TraceWriter::kMaxAgeNs;
    if (d <= now) p->trace->flush(/*wait=*/false);
    else if (!due || d < due) due = d;
  }
  return due;
}

void Tracer::resume(Thread& t, int sig) {
  if (sig == 0 && t.held_signal) {
    sig = t.held_signal;
    t.held_signal = 0;
  }
  // ESRCH: it died meanwhile; its exit status follows.
  if (host_.wants_syscalls()) (void)ptrace::syscall(t.tid, sig);
  else (void)ptrace::cont(t.tid, sig);
}

void Tracer::handle_status(pid_t tid, int status) {
  WaitStatus ws = WaitStatus::classify(status);
  Thread* t = procs_.thread(tid);
  if (!t) {
    // The exit stop of a thread whose process functracer has already let go of (its
    // leader's end was handled first): it only waits to be let through.
    if (WIFSTOPPED(status) && (status >> 8) == (SIGTRAP | (PTRACE_EVENT_EXIT << 8))) {
      (void)ptrace::cont(tid, 0);
      return;
    }
    if (WIFSTOPPED(status)) stops_.hold_early({tid, status});  // its creation event comes next
    return;
  }
  FT_DEBUG("tid {}: {}", tid, ws.describe());
  // Returns the process handled itself come before anything seen at this stop.
  // (a SIGTRAP stop: in handle_sigtrap, with the thread's registers)
  bool sigtrap = ws.kind == WaitStatus::Kind::SignalStop && ws.signal == SIGTRAP && !session_.detaching();
  if (WIFSTOPPED(status) && !sigtrap) returns_.drain(*t->process, nullptr, RemoteAddr(), {}, t);
  if (ws.kind == WaitStatus::Kind::Exited || ws.kind == WaitStatus::Kind::Killed) {
    thread_gone(*t, ws);
    return;
  }
  if (session_.detaching()) {
    collect_for_detach(*t, ws);
    return;
  }
  switch (ws.kind) {
    case WaitStatus::Kind::Exited:
    case WaitStatus::Kind::Killed:
      return;  // handled above
    case WaitStatus::Kind::EventStop:
      switch (ws.event) {
        case PTRACE_EVENT_STOP:
          if (t->awaiting_initial_stop) {
            t->awaiting_initial_stop = false;
            start_initial_thread(*t);
          } else {
            resume(*t);
          }
          return;
        case PTRACE_EVENT_CLONE:
        case PTRACE_EVENT_FORK:
        case PTRACE_EVENT_VFORK:
          handle_new_task(*t, ws.event);
          resume(*t);
          return;
        case PTRACE_EVENT_EXEC:
          handle_exec(*t);
          return;
        case PTRACE_EVENT_EXIT:
          if (t->tid == t->process->pid()) verify_breakpoints(*t->process, false);
          snapshot_at_exit_stop(host_, *t->process, *t, stats_);
          resume(*t);
          return;
        default:
          resume(*t);
          return;
      }
    case WaitStatus::Kind::GroupStop:
      (void)ptrace::listen(tid);
      return;
    case WaitStatus::Kind::SyscallStop:
      on_syscall(*t);
      return;
    case WaitStatus::Kind::SignalStop:
      if (ws.signal == SIGTRAP) handle_sigtrap(*t);
      else handle_signal(*t, ws.signal);
      return;
    case WaitStatus::Kind::Unknown:
      resume(*t);
      return;
  }
}

// ---------------------------------------------------------------------------------
// Threads and processes

void Tracer::start_initial_thread(Thread& t) {
  Process& p = *t.process;
  if (p.release_pending) {
    release_child(p, t);
    return;
  }
  if (p.space.recorder.needs_region)
    if (auto regs = ptrace::get_regs(t.tid)) fast_path_.set_up_child(p, t, *regs);
  if (session_.detaching()) {
    t.stopped = true;  // let go of with the others
    return;
  }
  resume(t);
}

void Tracer::handle_new_task(Thread& parent, int event) {
  auto msg = ptrace::event_msg(parent.tid);
  if (!msg) return;
  pid_t new_tid = static_cast<pid_t>(*msg);
  Process& pp = *parent.process;
  bool is_thread = event == PTRACE_EVENT_CLONE && tgid_of(new_tid) == pp.pid();
  Thread* nt = nullptr;
  if (is_thread) {
    nt = &procs_.add_thread(pp, new_tid);
    TraceRecord r;
    r.type = schema::type::kThread;
    r.add(schema::key::kParent, static_cast<int64_t>(parent.tid));
    report_.lifecycle(pp, nt, FT_EVENT_THREAD_CREATED, parent.tid, 0, nullptr, std::move(r), "+++ thread created +++");
  } else {
    bool shares_mm = event == PTRACE_EVENT_VFORK || same_address_space(parent.tid, new_tid);
    auto child = std::make_unique<Process>(new_tid);
    Process& c = *child;
    c.exe = pp.exe;
    c.cmdline = pp.cmdline;
    c.started = true;
    c.space = pp.space.clone(shares_mm);
    // A service's child is the service's: detached rather than killed, and it outlives
    // functracer as its parent does (survival.h).
    c.attached = pp.attached;
    // The child runs with the forking thread's thread pointer: on the shared memory of
    // a vfork it would record into that thread's ring. It records nothing there; the
    // parent gets a ring again at its next call (after the child is gone).
    if (shares_mm) fast_path_.release(parent);
    nt = &procs_.add_thread(c, new_tid);
    nt->stack = parent.stack;  // the child's stack is a copy of the forking thread's
    nt->stack.mark_inherited();
    // The forking thread's block of return records is the child's.
    if (!shares_mm && parent.fast_slot >= 0 && static_cast<size_t>(parent.fast_slot) < c.space.fast_owner.size()) {
      c.space.fast_owner[parent.fast_slot] = new_tid;
      nt->fast_slot = parent.fast_slot;
      nt->fast_records = parent.fast_records;
    }
    if (auto s = c.mem().open(); !s) log::warn("{}", s.error().message);
    if (!opts_.follow_forks) {
      c.silent = true;
      // A copy of the address space: remove our breakpoints and hijacked return
      // addresses from it and let it go. A shared one (vfork): keep it under control
      // until it execs or exits, silently, so it never meets an int3 on its own.
      c.release_pending = !shares_mm;
      // Until then it runs on its parent's memory (the parent waits): what it does
      // there (allocating, opening files) is the parent's, and is reported as such.
      if (shares_mm) c.reports_to = pp.pid();
    } else {
      if (auto s = report_.open_trace(c); !s) log::error("{}", s.error().message);
      report_.write_modules(c);
      TraceRecord r;
      r.type = schema::type::kProcess;
      r.add(schema::key::kPpid, static_cast<int64_t>(pp.pid()));
      report_.lifecycle(c, nt, FT_EVENT_PROCESS_CREATED, pp.pid(), 0, shares_mm ? "vfork" : "fork", std::move(r),
                fmt::format("+++ process {} created by {} +++", new_tid, pp.pid()));
    }
    procs_.add(std::move(child));
  }
  nt->awaiting_initial_stop = true;
  if (stops_.take_early(new_tid)) {
    nt->awaiting_initial_stop = false;
    start_initial_thread(*nt);
  }
}

std::vector<std::shared_ptr<const ElfImage>> Tracer::read_modules_ahead(pid_t pid) {
  std::vector<std::shared_ptr<const ElfImage>> held;
  auto maps = read_maps(pid);
  if (!maps) return held;  // the set-up says what is wrong
  // The same files load_module reads (a removed one through /proc is read there: the
  // cache does not keep those).
  for (const MappedModule& mm : modules_from_maps(*maps))
    if (!mm.deleted)
      if (auto image = elf_cache_.open(mm.path)) {
        (void)(*image)->demangled_names();
        fast_path_.decode_ahead(*image);
        held.push_back(std::move(*image));
      }
  return held;
}

Status Tracer::set_up_image(Process& p, Thread& worker, Registers& regs, const std::vector<MapsEntry>& maps) {
  PassScope pass(p.space.pass, p.mem());  // every write in one pass (plant_pass.h)
  survival::clean_up_dead(p, maps);
  if (auto s = load_modules(p, worker, regs, maps); !s) return s;
  resolve_ifuncs(p, worker, regs);  // attached: everything is relocated already
  return {};
}

void Tracer::before_detach(Process& p) {
  fast_path_.settle_for_detach(p);
  verify_breakpoints(p, false);
  survival::retire(p);
}

void Tracer::release_child(Process& child, Thread& t) {
  remove_instrumentation(child);
  fast_path_.let_go_child(child, t);
  for (const auto& [tid, t] : child.threads()) (void)ptrace::detach(tid, t->held_signal);
  FT_DEBUG("released child {}", child.pid());
  procs_.remove(child);
}

void Tracer::forget_image(Thread& t) {
  Process& p = *t.process;
  uint64_t now = monotonic_ns();
  // Every other thread of the process is gone (execve(2): "all threads other than the
  // calling thread are destroyed"); the exec'ing thread now has the process id.
  for (const auto& [tid, other] : p.threads())
    if (other.get() != &t && !other->stack.empty()) report_.report_unwound(*other, other->stack.take_all(), "exit", now, 0);
  procs_.remove_threads_except(p, t);
  if (!t.stack.empty()) report_.report_unwound(t, t.stack.take_all(), "exit", now, 0);
  report_.close_goroutines(p, t, "exit", now);
  // The old image's breakpoints and areas went with it.
  p.space.reset();
  t.rec_ring = -1;
  t.fast_slot = -1;
  t.fast_records.clear();
}

void Tracer::handle_exec(Thread& t) {
  Process& p = *t.process;
  forget_image(t);
  if (p.silent) {
    // A vfork child that was not followed: the new image has none of our breakpoints.
    (void)ptrace::detach(t.tid);
    procs_.remove(p);
    return;
  }
  auto regs = ptrace::get_regs(t.tid);
  if (!regs) {
    resume(t);
    return;
  }
  bool first = !p.started;
  p.started = true;
  p.exe = exe_of(p.pid());
  p.cmdline = read_cmdline(p.pid());
  if (first) {
    if (auto s = report_.open_trace(p); !s) log::error("{}", s.error().message);
    TraceRecord r;
    r.type = schema::type::kProcess;
    r.add(schema::key::kPpid, static_cast<int64_t>(::getpid()));
    report_.lifecycle(p, &t, FT_EVENT_PROCESS_CREATED, 0, 0, "launch", std::move(r), "");
  } else {
    TraceRecord r;
    r.type = schema::type::kExec;
    r.add(schema::key::kExe, p.exe);
    report_.lifecycle(p, &t, FT_EVENT_EXEC, 0, 0, p.exe.c_str(), std::move(r), "+++ exec " + p.exe + " +++");
    report_.exec_done(p);
  }
  if (auto s = setup_address_space(p, t, *regs); !s)
    log::warn("cannot trace inside process {}: {}", p.pid(), s.error().message);
  (void)ptrace::set_regs(t.tid, *regs);
  resume(t);
}

void Tracer::thread_gone(Thread& t, const WaitStatus& ws) {
  Process& p = *t.process;
  if (t.tid != p.pid()) returns_.drain(p, nullptr, RemoteAddr(), {}, &t);  // the process's memory is still there
  returns_.release(t);
  uint64_t now = monotonic_ns();
  if (!t.stack.empty()) report_.report_unwound(t, t.stack.take_all(), "exit", now, 0);
  if (t.tid == p.pid()) {
    process_gone(p, ws);
    return;
  }
  if (!p.silent) {
    TraceRecord r;
    r.type = schema::type::kThreadExit;
    int64_t status = ws.kind == WaitStatus::Kind::Exited ? ws.exit_code : 128 + ws.signal;
    r.add(schema::key::kStatus, status);
    report_.lifecycle(p, &t, FT_EVENT_THREAD_EXITED, status, 0, nullptr, std::move(r), "");
  }
  procs_.remove_thread(t);
}

void Tracer::process_gone(Process& p, const WaitStatus& ws) {
  uint64_t now = monotonic_ns();
  for (auto& [tid, t] : p.threads())
    if (!t->stack.empty()) report_.report_unwound(*t, t->stack.take_all(), "exit", now, 0);
  Thread* leader = p.leader();
  if (Thread* any = leader ? leader : (p.threads().empty() ? nullptr : p.threads().begin()->second.get()))
    report_.close_goroutines(p, *any, "exit", now);
  int code;
  if (ws.kind == WaitStatus::Kind::Exited) {
    code = ws.exit_code;
    if (!p.silent) {
      TraceRecord r;
      r.type = schema::type::kExit;
      r.add(schema::key::kStatus, static_cast<int64_t>(code));
      report_.lifecycle(p, leader, FT_EVENT_EXITED, code, 0, nullptr, std::move(r),
                fmt::format("+++ exited (status {}) +++", code));
    }
  } else {
    code = 128 + ws.signal;
    std::string name = signal_name(ws.signal);
    bool fault = is_fault_signal(ws.signal) && p.fatal_signal == ws.signal && p.fault_addr_valid;
    if (!p.silent) {
      TraceRecord r;
      r.type = schema::type::kKilled;
      r.add(schema::key::kSignal, static_cast<int64_t>(ws.signal));
      r.add(schema::key::kName, name);
      if (fault) r.add(schema::key::kAddress, Hex{p.fault_addr});
      report_.lifecycle(p, leader, FT_EVENT_KILLED, ws.signal, fault ? p.fault_addr : 0, name.c_str(), std::move(r),
                fmt::format("+++ killed by {} +++", name));
    }
    if (fault)
      log::info("process {} killed by {} (fault address {:#x})", p.pid(), name, p.fault_addr);
    else if (p.pid() == main_pid_)
      log::info("process {} killed by {}", p.pid(), name);
  }
  if (p.pid() == main_pid_) {
    main_exit_ = code;
    if (!attach_mode_) program_ended();
  }
  if (!p.space.ifuncs.empty()) {
    for (const PendingIfunc& f : p.space.ifuncs)
      record_untraced(p, f.demangled, f.module->runtime(f.sym.value).value(),
                      "the process ended before its IFUNC was resolved");
    log::gap("process {} ended before {} IFUNC function{} could be resolved (first: {}); they were not traced",
             p.pid(), p.space.ifuncs.size(), p.space.ifuncs.size() == 1 ? "" : "s", p.space.ifuncs.front().demangled);
  }
  if (p.trace) p.trace->flush();
  procs_.remove(p);
}

void Tracer::handle_signal(Thread& t, int sig) {
  Process& p = *t.process;
  if (fast_path_.hold_signal(t, sig)) {
    resume(t);  // without it, for now
    return;
  }
  note_own_signal(t, sig);
  if (is_fault_signal(sig)) {
    if (auto si = ptrace::siginfo(t.tid); si && si->si_code > 0) {
      p.fatal_signal = sig;
      p.fault_addr = reinterpret_cast<uint64_t>(si->si_addr);
      p.fault_addr_valid = true;
    }
  }
  if (!p.silent) {
    std::string name = signal_name(sig);
    TraceRecord r;
    r.type = schema::type::kSignal;
    r.add(schema::key::kSignal, static_cast<int64_t>(sig));
    r.add(schema::key::kName, name);
    report_.lifecycle(p, &t, FT_EVENT_SIGNAL, sig, 0, name.c_str(), std::move(r), "--- " + name + " ---");
  }
  resume(t, sig);
}

void Tracer::deliver_held(Thread& t, Registers& regs) {
  // Out of the recorder: the first signal now, with its own information, the others
  // queued behind it.
  std::vector<siginfo_t> held = FastPath::take_held(t, regs);
  if (auto s = ptrace::set_regs(t.tid, regs); !s) return;
  if (held.empty()) {
    resume(t);
    return;
  }
  for (size_t i = 1; i < held.size(); ++i) FastPath::requeue_signal(t.process->pid(), t.tid, held[i]);
  (void)ptrace::set_siginfo(t.tid, held.front());
  handle_signal(t, held.front().si_signo);
}

void Tracer::on_syscall(Thread& t) {
  Process& p = *t.process;
  auto info = ptrace::syscall_info(t.tid);
  if (info && !p.silent && enabled_ &&
      (info->op == PTRACE_SYSCALL_INFO_ENTRY || info->op == PTRACE_SYSCALL_INFO_EXIT)) {
    ft_syscall sc{};
    if (info->op == PTRACE_SYSCALL_INFO_ENTRY) {
      sc.nr = static_cast<long>(info->entry.nr);
      for (int i = 0; i < 6; ++i) sc.args[i] = info->entry.args[i];
      t.syscall_nr = sc.nr;
    } else {
      sc.nr = t.syscall_nr;  // the exit stop does not say which call it ends
      sc.is_exit = 1;
      sc.ret = info->exit.rval;
      t.syscall_nr = -1;
    }
    report_.syscall(p, t, sc);
  }
  resume(t);
}

void Tracer::handle_sigtrap(Thread& t) {
  Process& p = *t.process;
  auto regs = survival::stop_regs(t);
  if (regs && retry_for_room(t, *regs)) return;
  returns_.drain(p, regs ? &t : nullptr, regs ? regs->sp() : RemoteAddr());
  if (!regs) return;  // vanished; its exit status follows
  RemoteAddr at = arch::host().trap_address(regs->ip());
  if (p.space.is_trampoline(at) || p.space.fast_slow_stop(at) >= 0 || FastPath::is_return_trap(p, at)) {
    on_return(t, *regs);
    return;
  }
  if (FastPath::is_signal_trap(p, at) && !t.held_at.null()) {
    deliver_held(t, *regs);
    return;
  }
  auto it = p.space.breakpoints.find(at);
  if (it == p.space.breakpoints.end()) {
    handle_signal(t, SIGTRAP);  // the program's own SIGTRAP
    return;
  }
  on_entry(t, *regs, it->second);
}

bool Tracer::retry_for_room(Thread& t, Registers& regs) {
  // A recorded entry whose thread's ring was full takes its trampoline's trap. Its
  // records are copied out, and the thread goes back to the function's entry (the
  // state at the trap is the entry's: the trampoline's stop path relies on it) to be
  // recorded in the emptied ring, running while functracer reports what it copied,
  // instead of waiting for the report and then taking the stop path.
  Process& p = *t.process;
  RemoteAddr at = arch::host().trap_address(regs.ip());
  auto bp = p.space.breakpoints.find(at);
  if (bp == p.space.breakpoints.end() || bp->second.entry.null() || !enabled_ || !FastPath::short_of_room(p, t))
    return false;
  bool retried = false;
  returns_.drain(p, &t, regs.sp(), [&] {
    // Nothing copied frees room when the oldest record is still being written (a
    // signal handler interrupted the recorder): the stop path then.
    if (FastPath::short_of_room(p, t)) return;
    Registers again = regs;
    again.set_ip(bp->second.entry);
    if (!ptrace::set_regs(t.tid, again)) return;
    ++stats_.room_retries;
    retried = true;
    resume(t);
  });
  return retried;
}

// ---------------------------------------------------------------------------------
// Attaching and detaching (the session is attach_session.h)

Result<int> Tracer::run_attach(const std::vector<pid_t>& pids) {
  attach_mode_ = true;
  for (size_t i = 0; i < pids.size(); ++i) {
    if (auto s = session_.attach(pids[i]); !s) {
      session_.detach_all();  // the processes attached so far run on untouched
      // With nothing traced, the plugins have nothing to say (calltrace would report
      // its patterns as matching nothing, next to the one line of the error).
      if (i > 0) host_.finish();
      return s.error();
    }
    if (main_pid_ == 0) main_pid_ = tgid_of(pids[i]);
  }
  loop();
  host_.finish();
  return host_.crashed() || memory_budget::ran_out() ? 1 : 0;
}

namespace {

// Is a SIGTRAP pending for this very thread?
bool sigtrap_pending(pid_t tid) {
  unsigned long long mask = std::strtoull(status_field(tid, "SigPnd").c_str(), nullptr, 16);
  return mask & (1ull << (SIGTRAP - 1));
}

}  // namespace

void Tracer::collect_for_detach(Thread& thread, const WaitStatus& ws) {
  Thread* t = &thread;
  pid_t tid = t->tid;
  t->held_event = ws.kind == WaitStatus::Kind::EventStop ? ws.event : ws.kind == WaitStatus::Kind::SignalStop ? 0 : -1;
  switch (ws.kind) {
    case WaitStatus::Kind::EventStop:
      if (ws.event == PTRACE_EVENT_STOP && t->awaiting_initial_stop) {
        t->awaiting_initial_stop = false;
        start_initial_thread(*t);  // marks it stopped (or releases an unfollowed child)
        return;
      }
      if (ws.event == PTRACE_EVENT_STOP && sigtrap_pending(tid)) {
        // The thread executed a breakpoint, but the interrupt is reported before the
        // SIGTRAP is dequeued. Detached now, it would get the SIGTRAP: let it report
        // the signal first, which rewinds it.
        (void)ptrace::cont(tid, 0);
        return;
      }
      if (ws.event == PTRACE_EVENT_CLONE || ws.event == PTRACE_EVENT_FORK || ws.event == PTRACE_EVENT_VFORK)
        handle_new_task(*t, ws.event);
      if (ws.event == PTRACE_EVENT_EXEC) forget_image(*t);
      t->stopped = true;
      return;
    case WaitStatus::Kind::GroupStop:
      t->stopped = true;
      t->group_stop = true;
      return;
    case WaitStatus::Kind::SignalStop:
      t->stopped = true;
      if (ws.signal == SIGTRAP) {
        Process& p = *t->process;
        auto regs = survival::stop_regs(*t);
        if (!regs) return;
        RemoteAddr at = arch::host().trap_address(regs->ip());
        if (p.space.is_trampoline(at) || p.space.fast_slow_stop(at) >= 0) {
          if (!returns_.finish_return(*t, *regs))
            log::error("thread {} returned through the trampoline with no matching frame", tid);
          (void)ptrace::set_regs(tid, *regs);
        } else if (auto bp = p.space.breakpoints.find(at); bp != p.space.breakpoints.end()) {
          // Runs the original instruction once it is back; a trampoline's trap (it stays
          // in the trampoline) goes on to the relocated instructions.
          regs->set_ip(bp->second.entry.null() ? at : bp->second.slot);
          (void)ptrace::set_regs(tid, *regs);
        } else if (RemoteAddr real = FastPath::is_return_trap(p, at) ? FastPath::take_recorded_return(*t, regs->sp() - 8)
                                                                       : RemoteAddr();
                   !real.null()) {
          regs->set_ip(real);  // a return the recorder left to the stop path
          (void)ptrace::set_regs(tid, *regs);
        } else if (FastPath::is_signal_trap(p, at) && !t->held_at.null()) {
          for (const siginfo_t& si : FastPath::take_held(*t, *regs)) FastPath::requeue_signal(p.pid(), tid, si);
          (void)ptrace::set_regs(tid, *regs);
        } else {
          t->held_signal = SIGTRAP;
        }
        return;
      }
      t->held_signal = ws.signal;
      return;
    default:
      t->stopped = true;
      return;
  }
}

}  // namespace ft
