// Tracer, part 2: the loop — waiting for stops, classifying them, and the life of
// threads and processes (new tasks, exec, exit, signals); reporting to plugins.
// Launch, calls/returns and the address space are in tracer_launch.cc,
// tracer_calls.cc and tracer_address_space.cc.
#include "core/tracer.h"

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
#include "core/log.h"
#include "core/procfs.h"
#include "core/ptrace.h"
#include "core/symbol_policy.h"

namespace ft {
namespace {

std::atomic<bool> g_toggle{false};
Tracer* g_tracer = nullptr;  // for on_engine_fault

}  // namespace

void Tracer::request_toggle() { g_toggle = true; }

Tracer::Tracer(const Options& opts, PluginHost& host) : opts_(opts), host_(host) {
  g_tracer = this;
  start_ns_ = monotonic_ns();
  enabled_ = !opts.start_disabled;
  if (const char* v = std::getenv("FT_FAST_RETURNS"); v && std::strcmp(v, "0") == 0) fast_returns_ = false;
  // Polling only makes sense when the traced threads have another CPU to run on.
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) >= 2) spin_ns_ = kSpinNs;
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
    for (auto& [pid, p] : t->processes_) {
      t->remove_instrumentation(*p);
      for (auto& [tid, th] : p->threads) {
        if (!th->stopped) continue;  // running: the kernel lets go of it when functracer exits
        if (auto regs = ptrace::get_regs(tid)) {
          uint64_t at = regs->ip() - 1;
          bool hook = p->is_trampoline(RemoteAddr(at)) || p->fast_slow_stop(RemoteAddr(at)) >= 0;
          if (p->breakpoints.count(at) || hook) {
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

Thread* Tracer::thread_of(pid_t tid) {
  auto it = threads_.find(tid);
  return it == threads_.end() ? nullptr : it->second;
}

void Tracer::loop() {
  uint64_t handled = 0;
  while (!processes_.empty()) {
    if ((attach_mode_ && take_stop_request()) || host_.crashed()) {
      detach_all();
      break;
    }
    if (!attach_mode_ && forward_pending()) forward_signals(true);
    if (g_toggle.exchange(false)) {
      enabled_ = !enabled_;
      log::info("tracing {}", enabled_ ? "enabled" : "disabled");
    }
    int status = 0;
    pid_t tid;
    if (!deferred_.empty()) {
      std::tie(tid, status) = deferred_.front();
      deferred_.pop_front();
    } else {
      tid = wait_any(&status);
      if (tid < 0) {
        if (errno == EINTR) continue;
        if (errno == ECHILD) break;
        log::error("waitpid: {}", std::strerror(errno));
        break;
      }
      // With one thread there is no one to starve: save the system call.
      if (threads_.size() > 1) collect_pending();
    }
    handle_status(tid, status);
    // A trace whose process makes no records while others keep functracer busy.
    if ((++handled & 1023) == 0) flush_aged_traces(monotonic_ns());
  }
  // Processes we could no longer wait for (should not happen): flush what we have.
  for (auto& [pid, p] : processes_)
    if (p->trace) p->trace->flush();
}

void Tracer::collect_pending() {
  // waitpid(-1) reports the most recently attached thread first (the kernel scans its
  // list of tracees from the newest). Handling one stop and waiting again would serve
  // busy new threads over and over while older ones, stopped all the while, starve
  // (a thread could wait seconds for each of its stops). Every stop already pending
  // is taken now, and all of them are handled before the next wait.
  int status = 0;
  pid_t tid;
  while ((tid = ::waitpid(-1, &status, __WALL | WNOHANG)) > 0) deferred_.emplace_back(tid, status);
}

pid_t Tracer::wait_any(int* status) {
  // When stops come in quick succession (a traced function called in a loop), the
  // next one is microseconds away. Sleeping in waitpid then costs a wakeup of this
  // CPU at every stop, which on virtual machines is often the largest part of a stop's
  // cost; polling for a short while avoids it. Once a wait takes longer than the
  // polling window, functracer goes back to sleeping until waits are short again.
  uint64_t start = monotonic_ns();
  if (spin_ns_ > 0 && last_wait_ns_ < spin_ns_) {
    uint64_t until = start + spin_ns_;
    uint64_t now = start;
    do {
      pid_t tid = ::waitpid(-1, status, __WALL | WNOHANG);
      if (tid != 0) {
        last_wait_ns_ = monotonic_ns() - start;
        return tid;
      }
      now = monotonic_ns();
    } while (now < until);
  }
  // Sleeping: until a traced thread changes state or functracer gets a signal that
  // asks for something (detach, toggle). The signals are blocked while the requests
  // are checked, so one arriving just before the sleep still ends it.
  sigset_t wake, old;
  sigemptyset(&wake);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1}) sigaddset(&wake, sig);
  sigprocmask(SIG_BLOCK, &wake, &old);
  pid_t tid;
  for (;;) {
    if (g_toggle.load() || (attach_mode_ && stop_requested()) || (!attach_mode_ && forward_pending())) {
      errno = EINTR;
      tid = -1;
      break;
    }
    tid = ::waitpid(-1, status, __WALL | WNOHANG);
    if (tid != 0) break;
    // Records still buffered are written once they are TraceWriter::kMaxAgeNs old,
    // should nothing happen before then.
    siginfo_t si{};
    int sig;
    uint64_t now = monotonic_ns();
    if (uint64_t due = flush_aged_traces(now)) {
      uint64_t left_ns = due - now;
      timespec left{static_cast<time_t>(left_ns / 1000000000), static_cast<long>(left_ns % 1000000000)};
      sig = sigtimedwait(&wake, &si, &left);
    } else {
      sig = sigwaitinfo(&wake, &si);
    }
    bool from_user = si.si_code <= 0 && si.si_pid != 0;
    if (sig <= 0 || sig == SIGCHLD || (from_user && is_tracee(si.si_pid))) continue;  // see is_tracee
    if (sig == SIGUSR1) request_toggle();
    else request_stop(sig, from_user ? si.si_pid : 0);
  }
  int saved_errno = errno;
  sigprocmask(SIG_SETMASK, &old, nullptr);
  errno = saved_errno;
  last_wait_ns_ = monotonic_ns() - start;
  return tid;
}

uint64_t Tracer::flush_aged_traces(uint64_t now) {
  uint64_t due = 0;
  for (auto& [pid, p] : processes_) {
    if (!p->trace || !p->trace->pending_since()) continue;
    uint64_t d = p->trace->pending_since() + TraceWriter::kMaxAgeNs;
    if (d <= now) p->trace->flush();
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
  if (WIFSTOPPED(status)) ++stats_.stops;
  Thread* t = thread_of(tid);
  if (!t) {
    if (WIFSTOPPED(status)) early_stops_[tid] = status;  // its creation event comes next
    return;
  }
  FT_DEBUG("tid {}: {}", tid, ws.describe());
  // Returns the process handled itself come before anything seen at this stop.
  // (a SIGTRAP stop: in handle_sigtrap, with the thread's registers)
  bool sigtrap = ws.kind == WaitStatus::Kind::SignalStop && ws.signal == SIGTRAP && !detaching_;
  if (WIFSTOPPED(status) && !sigtrap) drain_fast(*t->process);
  if (ws.kind == WaitStatus::Kind::Exited || ws.kind == WaitStatus::Kind::Killed) {
    thread_gone(*t, ws);
    return;
  }
  if (detaching_) {
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
    release_child(p);
    return;
  }
  if (detaching_) {
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
    nt = pp.add_thread(new_tid);
    threads_[new_tid] = nt;
    TraceRecord r;
    r.type = "thread";
    r.add("parent", static_cast<int64_t>(parent.tid));
    lifecycle(pp, nt, FT_EVENT_THREAD_CREATED, parent.tid, 0, nullptr, std::move(r), "+++ thread created +++");
  } else {
    bool shares_mm = event == PTRACE_EVENT_VFORK || same_address_space(parent.tid, new_tid);
    auto child = std::make_unique<Process>(new_tid);
    Process& c = *child;
    c.exe = pp.exe;
    c.cmdline = pp.cmdline;
    c.started = true;
    for (const auto& m : pp.modules) {
      auto copy = std::make_unique<Module>();
      copy->map = m->map;
      copy->elf = m->elf;
      copy->bias = m->bias;
      copy->is_main = m->is_main;
      copy->data_file = m->data_file;
      c.modules.push_back(std::move(copy));
    }
    c.breakpoints = pp.breakpoints;
    for (auto& [a, bp] : c.breakpoints) bp.module = c.module_at(bp.addr);
    c.functions = pp.functions;
    for (const auto& a : pp.areas) c.areas.push_back(std::make_unique<SsolArea>(*a));
    c.trampoline = pp.trampoline;
    c.r_debug = pp.r_debug;
    nt = c.add_thread(new_tid);
    nt->stack = parent.stack;  // the child's stack is a copy of the forking thread's
    nt->stack.mark_inherited();
    // The stubs are in the copy too; the forking thread's block is the child's.
    c.fast_stubs = pp.fast_stubs;
    c.fast_stub_slot = pp.fast_stub_slot;
    if (shares_mm) {
      c.fast_unavailable = true;  // the parent's blocks: not the child's to use
    } else {
      c.fast_data = pp.fast_data;
      c.fast_unavailable = pp.fast_unavailable;
      if (!pp.fast_owner.empty()) c.fast_owner.assign(pp.fast_owner.size(), 0);
      if (parent.fast_slot >= 0) {
        c.fast_owner[parent.fast_slot] = new_tid;
        nt->fast_slot = parent.fast_slot;
        nt->fast_records = parent.fast_records;
      }
    }
    threads_[new_tid] = nt;
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
      if (auto s = open_trace(c); !s) log::error("{}", s.error().message);
      write_modules(c);
      TraceRecord r;
      r.type = "process";
      r.add("ppid", static_cast<int64_t>(pp.pid()));
      lifecycle(c, nt, FT_EVENT_PROCESS_CREATED, pp.pid(), 0, shares_mm ? "vfork" : "fork", std::move(r),
                fmt::format("+++ process {} created by {} +++", new_tid, pp.pid()));
    }
    processes_[new_tid] = std::move(child);
  }
  nt->awaiting_initial_stop = true;
  if (auto it = early_stops_.find(new_tid); it != early_stops_.end()) {
    early_stops_.erase(it);
    nt->awaiting_initial_stop = false;
    start_initial_thread(*nt);
  }
}

void Tracer::release_child(Process& child) {
  remove_instrumentation(child);
  for (const auto& [tid, t] : child.threads) {
    (void)ptrace::detach(tid, t->held_signal);
    threads_.erase(tid);
  }
  FT_DEBUG("released child {}", child.pid());
  processes_.erase(child.pid());
}

void Tracer::forget_image(Thread& t) {
  Process& p = *t.process;
  uint64_t now = monotonic_ns();
  // Every other thread of the process is gone (execve(2): "all threads other than the
  // calling thread are destroyed"); the exec'ing thread now has the process id.
  for (auto it = p.threads.begin(); it != p.threads.end();) {
    if (it->first != t.tid) {
      if (!it->second->stack.empty()) report_unwound(*it->second, it->second->stack.take_all(), "exit", now, 0);
      threads_.erase(it->first);
      it = p.threads.erase(it);
    } else {
      ++it;
    }
  }
  if (!t.stack.empty()) report_unwound(t, t.stack.take_all(), "exit", now, 0);
  // The old image's breakpoints and areas went with it.
  p.modules.clear();
  p.unwinder.reset();
  p.breakpoints.clear();
  p.areas.clear();
  p.trampoline = RemoteAddr();
  p.r_debug = RemoteAddr();
  p.scratch = RemoteAddr();
  p.fast_data = RemoteAddr();
  p.fast_unavailable = false;
  p.fast_owner.clear();
  p.fast_stubs.clear();
  p.fast_stub_slot.clear();
  t.fast_slot = -1;
  t.fast_records.clear();
}

void Tracer::handle_exec(Thread& t) {
  Process& p = *t.process;
  forget_image(t);
  if (p.silent) {
    // A vfork child that was not followed: the new image has none of our breakpoints.
    pid_t pid = p.pid();
    (void)ptrace::detach(t.tid);
    threads_.erase(t.tid);
    processes_.erase(pid);
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
    if (auto s = open_trace(p); !s) log::error("{}", s.error().message);
    TraceRecord r;
    r.type = "process";
    r.add("ppid", static_cast<int64_t>(::getpid()));
    lifecycle(p, &t, FT_EVENT_PROCESS_CREATED, 0, 0, "launch", std::move(r), "");
  } else {
    TraceRecord r;
    r.type = "exec";
    r.add("exe", p.exe);
    lifecycle(p, &t, FT_EVENT_EXEC, 0, 0, p.exe.c_str(), std::move(r), "+++ exec " + p.exe + " +++");
  }
  if (auto s = setup_address_space(p, t, *regs); !s)
    log::warn("cannot trace inside process {}: {}", p.pid(), s.error().message);
  (void)ptrace::set_regs(t.tid, *regs);
  resume(t);
}

void Tracer::thread_gone(Thread& t, const WaitStatus& ws) {
  Process& p = *t.process;
  if (t.tid != p.pid()) drain_fast(p);  // the process's memory is still there
  release_fast(t);
  uint64_t now = monotonic_ns();
  if (!t.stack.empty()) report_unwound(t, t.stack.take_all(), "exit", now, 0);
  if (t.tid == p.pid()) {
    process_gone(p, ws);
    return;
  }
  if (!p.silent) {
    TraceRecord r;
    r.type = "thread_exit";
    int64_t status = ws.kind == WaitStatus::Kind::Exited ? ws.exit_code : 128 + ws.signal;
    r.add("status", status);
    lifecycle(p, &t, FT_EVENT_THREAD_EXITED, status, 0, nullptr, std::move(r), "");
  }
  pid_t tid = t.tid;
  threads_.erase(tid);
  p.threads.erase(tid);
}

void Tracer::process_gone(Process& p, const WaitStatus& ws) {
  uint64_t now = monotonic_ns();
  for (auto& [tid, t] : p.threads)
    if (!t->stack.empty()) report_unwound(*t, t->stack.take_all(), "exit", now, 0);
  Thread* leader = nullptr;
  if (auto it = p.threads.find(p.pid()); it != p.threads.end()) leader = it->second.get();
  int code;
  if (ws.kind == WaitStatus::Kind::Exited) {
    code = ws.exit_code;
    if (!p.silent) {
      TraceRecord r;
      r.type = "exit";
      r.add("status", static_cast<int64_t>(code));
      lifecycle(p, leader, FT_EVENT_EXITED, code, 0, nullptr, std::move(r),
                fmt::format("+++ exited (status {}) +++", code));
    }
  } else {
    code = 128 + ws.signal;
    std::string name = signal_name(ws.signal);
    bool fault = is_fault_signal(ws.signal) && p.fatal_signal == ws.signal && p.fault_addr_valid;
    if (!p.silent) {
      TraceRecord r;
      r.type = "killed";
      r.add("signal", static_cast<int64_t>(ws.signal));
      r.add("name", name);
      if (fault) r.add("address", Hex{p.fault_addr});
      lifecycle(p, leader, FT_EVENT_KILLED, ws.signal, fault ? p.fault_addr : 0, name.c_str(), std::move(r),
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
  if (!p.ifuncs.empty())
    log::warn("process {} ended before {} IFUNC function{} could be resolved (first: {}); they were not traced",
              p.pid(), p.ifuncs.size(), p.ifuncs.size() == 1 ? "" : "s", p.ifuncs.front().demangled);
  if (p.trace) p.trace->flush();
  for (auto& [tid, t] : p.threads) threads_.erase(tid);
  processes_.erase(p.pid());
}

void Tracer::handle_signal(Thread& t, int sig) {
  Process& p = *t.process;
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
    r.type = "signal";
    r.add("signal", static_cast<int64_t>(sig));
    r.add("name", name);
    lifecycle(p, &t, FT_EVENT_SIGNAL, sig, 0, name.c_str(), std::move(r), "--- " + name + " ---");
  }
  resume(t, sig);
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
    ft_ctx c = ctx(p, &t, nullptr, monotonic_ns());
    host_.syscall(c, sc);
    ++stats_.syscalls;
  }
  resume(t);
}

void Tracer::handle_sigtrap(Thread& t) {
  Process& p = *t.process;
  auto regs = ptrace::get_regs(t.tid);
  drain_fast(p, regs ? &t : nullptr, regs ? regs->sp() : 0);
  if (!regs) return;  // vanished; its exit status follows
  RemoteAddr at(regs->ip() - arch::breakpoint_ip_advance(arch::Arch::X86_64));
  if (p.is_trampoline(at) || p.fast_slow_stop(at) >= 0) {
    on_return(t, *regs);
    return;
  }
  auto it = p.breakpoints.find(at.value());
  if (it == p.breakpoints.end()) {
    handle_signal(t, SIGTRAP);  // the program's own SIGTRAP
    return;
  }
  on_entry(t, *regs, it->second);
}

ft_ctx Tracer::ctx(Process& p, Thread* t, const Registers* regs, uint64_t now, unsigned depth) {
  ft_ctx c;
  c.process = &p;
  if (p.reports_to)
    if (auto it = processes_.find(p.reports_to); it != processes_.end()) c.process = it->second.get();
  c.thread = t;
  c.regs = regs ? regs : stop_regs_;
  c.now_ns = now;
  c.depth = depth;
  return c;
}

void Tracer::report_unwound(Thread& t, const std::vector<ShadowFrame>& frames, const char* reason, uint64_t now,
                            size_t base_depth) {
  Process& p = *t.process;
  if (p.silent && !p.reports_to) return;
  // Inherited frames (a forked child's copy of its parent's) are the outermost ones;
  // they are neither reported nor counted in depths.
  size_t inherited_below = std::min(base_depth, t.stack.inherited());
  size_t outer = static_cast<size_t>(
      std::count_if(frames.begin(), frames.end(), [](const ShadowFrame& f) { return !f.inherited; }));
  for (size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].inherited) continue;
    --outer;
    const FunctionInfo& fn = p.functions[frames[i].fn];
    ft_ctx c = ctx(p, &t, nullptr, now, static_cast<unsigned>(base_depth - inherited_below + outer));
    c.unwound_ret = frames[i].real_ret;
    host_.unwound(c, fn, reason);
    ++stats_.unwound;
  }
}

void Tracer::record_lost(Process& p, Thread& t, int64_t count, const std::string& reason) {
  if (p.silent && !p.reports_to) return;
  TraceRecord r;
  r.type = "lost";
  r.add("count", count);
  r.add("reason", reason);
  ft_ctx c = ctx(p, &t, nullptr, monotonic_ns());
  host_.record(c, r);
}

void Tracer::lifecycle(Process& p, Thread* t, ft_event_kind kind, int64_t value, uint64_t address, const char* text,
                       TraceRecord r, const std::string& line) {
  ft_ctx c = ctx(p, t, nullptr, monotonic_ns());
  host_.record(c, r);
  if (!line.empty()) host_.print(c, line);
  ft_event ev{kind, value, address, text};
  host_.event(c, ev);
  ++stats_.lifecycle;
}

Status Tracer::open_trace(Process& p) {
  if (opts_.output_dir.empty()) return {};
  std::string base = p.exe.substr(p.exe.rfind('/') + 1);
  if (base.empty()) base = "process";
  std::string path = opts_.output_dir + "/" + base + "." + std::to_string(p.pid()) + ".trace";
  auto w = TraceWriter::create(path);
  if (!w) return w.error();
  p.trace = std::move(*w);
  timespec rt{};
  clock_gettime(CLOCK_REALTIME, &rt);
  TraceRecord r;
  r.type = "header";
  r.tid = p.pid();
  r.ts_ns = monotonic_ns();
  r.add("format", static_cast<int64_t>(kTraceFormatVersion));
  r.add("arch", std::string("x86_64"));
  r.add("pid", static_cast<int64_t>(p.pid()));
  r.add("exe", p.exe);
  r.add("cmdline", p.cmdline);
  r.add("start_realtime_ns", static_cast<int64_t>(rt.tv_sec) * 1000000000 + rt.tv_nsec);
  r.add("plugins", host_.names());
  r.add("backtrace_depth", static_cast<int64_t>(opts_.backtrace_depth < 0 ? kDefaultBacktraceDepth : opts_.backtrace_depth));
  p.trace->write(r);
  // On disk before it has its name: a file that exists is a trace, even if
  // functracer is killed now.
  if (auto s = p.trace->publish(); !s) {
    p.trace.reset();
    return s.error();
  }
  return {};
}

void Tracer::write_module(Process& p, const Module& m) {
  if (m.data_file) return;
  TraceRecord r;
  r.type = "module";
  r.tid = p.pid();
  r.ts_ns = monotonic_ns();
  r.add("base", Hex{m.map.base}).add("end", Hex{m.map.end}).add("offset", Hex{m.map.offset});
  r.add("path", m.map.path).add("build_id", m.elf ? m.elf->build_id() : std::string());
  if (m.map.deleted) r.add("deleted", static_cast<int64_t>(1));
  p.trace->write(r);
}

void Tracer::write_modules(Process& p) {
  if (!p.trace) return;
  for (const auto& m : p.modules) write_module(p, *m);
}

}  // namespace ft
