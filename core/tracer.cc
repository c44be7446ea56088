#include "core/tracer.h"

#include <fcntl.h>
#include <linux/kcmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <cxxabi.h>
#include <deque>
#include <fstream>

#include "core/check.h"
#include "core/log.h"
#include "core/ptrace.h"

namespace ft {
namespace {

std::atomic<bool> g_toggle{false};
std::atomic<pid_t> g_forward_pid{0};

constexpr int kRtConsistent = 0;
constexpr uint64_t kRDebugStateOffset = 24;  // struct r_debug { int; link_map*; ElfW(Addr) r_brk; r_state; ... }

std::deque<std::pair<pid_t, int>> g_deferred;

struct SavedDisposition {
  int sig;
  struct sigaction action;
};
std::vector<SavedDisposition> g_saved_dispositions;  // statuses collected while waiting for one thread

std::string demangle(const std::string& name) {
  if (!name.starts_with("_Z")) return name;
  int status = 0;
  std::string base = name, suffix;
  if (auto at = name.find('@'); at != std::string::npos) {
    base = name.substr(0, at);
    suffix = name.substr(at);
  }
  char* d = abi::__cxa_demangle(base.c_str(), nullptr, nullptr, &status);
  if (!d) return name;
  std::string out = std::string(d) + suffix;
  std::free(d);
  return out;
}

pid_t tgid_of(pid_t tid) {
  std::ifstream f("/proc/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.starts_with("Tgid:")) return static_cast<pid_t>(std::atol(line.c_str() + 5));
  return 0;
}

bool same_address_space(pid_t a, pid_t b) {
  long rc = ::syscall(SYS_kcmp, a, b, KCMP_VM, 0, 0);
  return rc == 0;
}

std::string read_link(const std::string& p) {
  char buf[4096];
  ssize_t n = ::readlink(p.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return {};
  return std::string(buf, static_cast<size_t>(n));
}

std::string read_cmdline(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::string out, arg;
  auto flush = [&] {
    bool plain = !arg.empty() && arg.find_first_not_of(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == std::string::npos;
    if (!out.empty()) out += ' ';
    if (plain) {
      out += arg;
    } else {
      out += '\'';
      for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
    arg.clear();
  };
  for (char c : raw) {
    if (c == 0) flush();
    else arg += c;
  }
  if (!arg.empty()) flush();
  return out;
}

bool is_fault_signal(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE;
}

unsigned hooks_for(const std::string& name) {
  if (name == "_dl_debug_state") return kHookLinker;
  if (name == "_Unwind_RaiseException" || name == "_Unwind_Resume" || name == "_Unwind_Resume_or_Rethrow" ||
      name == "_Unwind_ForcedUnwind")
    return kHookUnwindStart;
  if (name == "_Unwind_Backtrace") return kHookUnwindStart | kHookBacktrace;
  if (name == "__cxa_begin_catch") return kHookCatch;
  // Functions that return twice keep their return address: setjmp stores it in the
  // jmp_buf, a vfork child returns through the parent's stack, getcontext saves it.
  static const char* const kReturnsTwice[] = {"setjmp", "_setjmp", "__setjmp", "sigsetjmp", "__sigsetjmp",
                                              "savectx", "getcontext", "vfork", "__vfork"};
  for (const char* n : kReturnsTwice)
    if (name == n) return kHookReturnsTwice;
  return kHookNone;
}

// GCC's hot/cold splitting emits "foo.cold" (and "foo.cold.N") symbols for the cold
// part of foo: it is jumped into from foo's body, never called, so it has no return
// address to hook and no entry to report.
bool is_fragment(const std::string& name) {
  auto pos = name.find(".cold");
  return pos != std::string::npos && (pos + 5 == name.size() || name[pos + 5] == '.');
}

// Code that is entered without a call, so [sp] holds no return address to hook:
// process entry points (argc is at [sp]), the lazy-binding resolvers (entered by a jmp
// from PLT0 with the link map and relocation index on the stack), the signal-return
// and makecontext trampolines (entered by ret).
bool not_a_called_function(const std::string& name) {
  static const char* const kExact[] = {"_start", "_dl_start_user", "__restore_rt", "__start_context",
                                       "_dl_runtime_resolve", "_dl_runtime_profile"};
  for (const char* n : kExact)
    if (name == n) return true;
  return name.starts_with("_dl_runtime_resolve_") || name.starts_with("_dl_runtime_profile_");
}

std::string find_in_path(const std::string& prog) {
  if (prog.find('/') != std::string::npos) return prog;
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t colon = p.find(':', start);
    if (colon == std::string::npos) colon = p.size();
    std::string dir = p.substr(start, colon - start);
    if (dir.empty()) dir = ".";
    std::string cand = dir + "/" + prog;
    if (::access(cand.c_str(), X_OK) == 0) {
      struct stat st {};
      if (::stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return cand;
    }
    start = colon + 1;
  }
  return {};
}

}  // namespace

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void Tracer::request_toggle() { g_toggle = true; }

void Tracer::save_disposition(int sig) {
  SavedDisposition d{sig, {}};
  if (sigaction(sig, nullptr, &d.action) == 0) g_saved_dispositions.push_back(d);
}

void Tracer::request_stop(int sig, bool from_user) {
  // Launch mode: a signal sent to functracer by a process is passed on to the program,
  // which would have received it without functracer. A terminal's SIGINT already
  // reached the whole foreground process group, program included.
  pid_t p = g_forward_pid.load();
  if (from_user && p > 0) ::kill(p, sig);
}

Tracer::Tracer(const Options& opts, PluginHost& host) : opts_(opts), host_(host) {
  start_ns_ = monotonic_ns();
  enabled_ = !opts.start_disabled;
  // Polling only makes sense when the traced threads have another CPU to run on.
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) >= 2) spin_ns_ = kSpinNs;
}

Tracer::~Tracer() = default;

uint64_t Tracer::elapsed_ns() const { return monotonic_ns() - start_ns_; }

Process* Tracer::process_of(pid_t tid) {
  Thread* t = thread_of(tid);
  return t ? t->process : nullptr;
}

Thread* Tracer::thread_of(pid_t tid) {
  auto it = threads_.find(tid);
  return it == threads_.end() ? nullptr : it->second;
}

// ---------------------------------------------------------------------------------
// Launch

Result<pid_t> Tracer::spawn() {
  const std::string& prog = opts_.command[0];
  std::string path = find_in_path(prog);
  if (path.empty() || ::access(path.c_str(), F_OK) != 0)
    return Error::msg("cannot run '" + prog + "': No such file or directory");
  if (::access(path.c_str(), X_OK) != 0) return Error::from_errno(errno, "cannot run '" + prog + "'");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return Error::msg("cannot run '" + prog + "': Is a directory");

  int go[2], err[2];
  if (::pipe2(go, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return Error::from_errno(errno, "pipe");
  std::vector<char*> argv;
  for (const auto& a : opts_.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0) return Error::from_errno(errno, "fork");
  if (pid == 0) {
    ::close(go[1]);
    ::close(err[0]);
    for (const auto& d : g_saved_dispositions) sigaction(d.sig, &d.action, nullptr);
    char c;
    // Wait until the parent has seized us, so the exec is seen.
    if (::read(go[0], &c, 1) != 1) ::_exit(127);
    ::execv(path.c_str(), argv.data());
    int e = errno;
    if (::write(err[1], &e, sizeof e) < 0) ::_exit(127);
    ::_exit(127);
  }
  ::close(go[0]);
  ::close(err[1]);
  unsigned long options = PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC |
                          PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL;
  if (auto s = ptrace::seize(pid, options); !s) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return Error::msg("cannot trace '" + prog + "': " + s.error().message);
  }
  if (::write(go[1], "x", 1) != 1) return Error::from_errno(errno, "cannot start '" + prog + "'");
  ::close(go[1]);
  int e = 0;
  ssize_t n;
  do n = ::read(err[0], &e, sizeof e);
  while (n < 0 && errno == EINTR);
  ::close(err[0]);
  if (n == static_cast<ssize_t>(sizeof e)) {
    int status;
    ::waitpid(pid, &status, __WALL);
    return Error::from_errno(e, "cannot run '" + prog + "'");
  }
  return pid;
}

Result<int> Tracer::run_launch() {
  auto pid = spawn();
  if (!pid) return pid.error();
  main_pid_ = *pid;
  g_forward_pid = *pid;
  auto proc = std::make_unique<Process>(*pid);
  Thread* t = proc->add_thread(*pid);
  threads_[*pid] = t;
  processes_[*pid] = std::move(proc);
  loop();
  g_forward_pid = 0;
  host_.finish();
  return main_exit_;
}

void Tracer::loop() {
  while (!processes_.empty()) {
    if (g_toggle.exchange(false)) {
      enabled_ = !enabled_;
      log::info("tracing {}", enabled_ ? "enabled" : "disabled");
    }
    int status = 0;
    pid_t tid;
    if (!g_deferred.empty()) {
      std::tie(tid, status) = g_deferred.front();
      g_deferred.pop_front();
    } else {
      tid = wait_any(&status);
      if (tid < 0) {
        if (errno == EINTR) continue;
        if (errno == ECHILD) break;
        log::error("waitpid: {}", std::strerror(errno));
        break;
      }
    }
    handle_status(tid, status);
  }
  // Processes we could no longer wait for (should not happen): flush what we have.
  for (auto& [pid, p] : processes_)
    if (p->trace) p->trace->flush();
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
  pid_t tid = ::waitpid(-1, status, __WALL);
  last_wait_ns_ = monotonic_ns() - start;
  return tid;
}

void Tracer::resume(Thread& t, int sig) {
  if (sig == 0 && t.held_signal) {
    sig = t.held_signal;
    t.held_signal = 0;
  }
  (void)ptrace::cont(t.tid, sig);  // ESRCH: it died meanwhile; its exit status follows
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
  switch (ws.kind) {
    case WaitStatus::Kind::Exited:
    case WaitStatus::Kind::Killed:
      thread_gone(*t, ws);
      return;
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
      resume(*t);
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
    release_child(p, nullptr);
    return;
  }
  resume(t);
}

void Tracer::handle_new_task(Thread& parent, int event) {
  auto msg = ptrace::event_msg(parent.tid);
  if (!msg) return;
  pid_t new_tid = static_cast<pid_t>(*msg);
  Process& pp = *parent.process;
  uint64_t now = monotonic_ns();
  bool is_thread = event == PTRACE_EVENT_CLONE && tgid_of(new_tid) == pp.pid();
  Thread* nt = nullptr;
  if (is_thread) {
    nt = pp.add_thread(new_tid);
    threads_[new_tid] = nt;
    TraceRecord r;
    r.type = "thread";
    r.add("parent", static_cast<int64_t>(parent.tid));
    (void)now;
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
    threads_[new_tid] = nt;
    if (auto s = c.mem().open(); !s) log::warn("{}", s.error().message);
    if (!opts_.follow_forks) {
      c.silent = true;
      // A copy of the address space: remove our breakpoints and hijacked return
      // addresses from it and let it go. A shared one (vfork): keep it under control
      // until it execs or exits, silently, so it never meets an int3 on its own.
      c.release_pending = !shares_mm;
    } else {
      c.shares_memory = shares_mm;
      if (auto s = open_trace(c); !s) log::error("{}", s.error().message);
      write_modules(c);
      TraceRecord r;
      r.type = "process";
      r.add("ppid", static_cast<int64_t>(pp.pid()));
      lifecycle(c, nt, FT_EVENT_PROCESS_CREATED, pp.pid(), 0, nullptr, std::move(r),
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

void Tracer::release_child(Process& child, Thread* forking_thread) {
  (void)forking_thread;
  for (const auto& [addr, bp] : child.breakpoints)
    (void)child.mem().write(bp.addr, {&bp.orig_byte, 1});
  for (const auto& [tid, t] : child.threads)
    for (const auto& f : t->stack.frames())
      if (f.armed && !f.tail) (void)child.mem().write_u64(RemoteAddr(f.slot), f.real_ret);
  for (const auto& [tid, t] : child.threads) {
    (void)ptrace::detach(tid, t->held_signal);
    threads_.erase(tid);
  }
  FT_DEBUG("released child {}", child.pid());
  processes_.erase(child.pid());
}

void Tracer::handle_exec(Thread& t) {
  Process& p = *t.process;
  // Every other thread of the process is gone (execve(2): "all threads other than the
  // calling thread are destroyed"); the exec'ing thread now has the process id.
  for (auto it = p.threads.begin(); it != p.threads.end();) {
    if (it->first != t.tid) {
      if (!it->second->stack.empty())
        report_unwound(*it->second, it->second->stack.take_all(), "exit", monotonic_ns(), 0);
      threads_.erase(it->first);
      it = p.threads.erase(it);
    } else {
      ++it;
    }
  }
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
  uint64_t now = monotonic_ns();
  if (!t.stack.empty()) report_unwound(t, t.stack.take_all(), "exit", now, 0);
  bool first = !p.started;
  p.started = true;
  p.exe = read_link("/proc/" + std::to_string(p.pid()) + "/exe");
  p.cmdline = read_cmdline(p.pid());
  p.modules.clear();
  p.breakpoints.clear();
  p.areas.clear();
  p.trampoline = RemoteAddr();
  p.r_debug = RemoteAddr();
  if (first) {
    if (auto s = open_trace(p); !s) log::error("{}", s.error().message);
    TraceRecord r;
    r.type = "process";
    r.add("ppid", static_cast<int64_t>(::getpid()));
    lifecycle(p, &t, FT_EVENT_PROCESS_CREATED, ::getpid(), 0, nullptr, std::move(r), "");
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
  if (p.pid() == main_pid_) main_exit_ = code;
  if (p.trace) p.trace->flush();
  for (auto& [tid, t] : p.threads) threads_.erase(tid);
  processes_.erase(p.pid());
}

// ---------------------------------------------------------------------------------
// Signals and breakpoints

void Tracer::handle_signal(Thread& t, int sig) {
  Process& p = *t.process;
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

void Tracer::handle_sigtrap(Thread& t) {
  Process& p = *t.process;
  auto regs = ptrace::get_regs(t.tid);
  if (!regs) return;  // vanished; its exit status follows
  RemoteAddr at(regs->ip() - arch::breakpoint_ip_advance(arch::Arch::X86_64));
  if (p.is_trampoline(at)) {
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

Status Tracer::apply_relocation(Process& p, const Breakpoint& bp, Registers& regs) {
  const arch::Relocation& rel = bp.reloc;
  if (rel.kind == arch::Relocation::Kind::OutOfLine) {
    regs.set_ip(bp.slot.value());
    return {};
  }
  const arch::Emulation& e = rel.emulation;
  uint64_t target = e.target;
  switch (e.kind) {
    case arch::Emulation::Kind::SetIp:
      regs.set_ip(target);
      return {};
    case arch::Emulation::Kind::JumpMem: {
      auto v = p.mem().read_u64(RemoteAddr(e.mem));
      if (!v) return v.error();
      regs.set_ip(*v);
      return {};
    }
    case arch::Emulation::Kind::CallMem: {
      auto v = p.mem().read_u64(RemoteAddr(e.mem));
      if (!v) return v.error();
      target = *v;
      [[fallthrough]];
    }
    case arch::Emulation::Kind::Call: {
      uint64_t sp = regs.sp() - 8;
      if (auto s = p.mem().write_u64(RemoteAddr(sp), e.return_addr); !s) return s;
      regs.set_sp(sp);
      regs.set_ip(target);
      return {};
    }
  }
  return {};
}

void Tracer::disarm(Thread& t) {
  Process& p = *t.process;
  for (auto [slot, real] : t.stack.disarm()) (void)p.mem().write_u64(RemoteAddr(slot), real);
}

void Tracer::rearm(Thread& t, uint64_t sp) {
  Process& p = *t.process;
  auto r = t.stack.rearm(sp);
  report_unwound(t, r.dead, "exception", monotonic_ns(), t.stack.depth());
  for (uint64_t slot : r.slots) (void)p.mem().write_u64(RemoteAddr(slot), p.trampoline.value());
}

void Tracer::on_entry(Thread& t, Registers& regs, Breakpoint& bp_ref) {
  Process& p = *t.process;
  uint64_t addr = bp_ref.addr.value();
  unsigned hooks = bp_ref.hooks;
  if (hooks & kHookReturnSite) {
    auto r = t.stack.pop_site(regs.sp(), addr);
    if (r.found) report_returns(t, regs, r, monotonic_ns());
    if (t.rearm_ip == addr && t.rearm_sp == regs.sp()) {
      t.rearm_ip = t.rearm_sp = 0;
      rearm(t, regs.sp());
    }
  }
  if (hooks & kHookLinker) {
    bool consistent = true;
    if (!p.r_debug.null()) {
      uint32_t state = 0;
      if (p.mem().read_exact(p.r_debug + kRDebugStateOffset, {reinterpret_cast<uint8_t*>(&state), 4}))
        consistent = static_cast<int>(state) == kRtConsistent;
    }
    if (consistent) rescan_modules(p, t, regs);
  }
  if (hooks & kHookUnwindStart) disarm(t);
  if (hooks & kHookCatch) rearm(t, regs.sp());
  if (hooks & kHookBacktrace) {
    // backtrace() returns normally: put the trampolines back when it does.
    if (auto ret = p.mem().peek(t.tid, RemoteAddr(regs.sp())); ret && *ret != p.trampoline.value()) {
      if (Breakpoint* site = plant_raw(p, t, regs, *ret, "_Unwind_Backtrace return site")) {
        site->hooks |= kHookReturnSite;
        t.rearm_ip = *ret;
        t.rearm_sp = regs.sp() + 8;
      }
    }
  }
  bool traced_here = false;
  if (auto b = p.breakpoints.find(addr); b != p.breakpoints.end() && b->second.traced && enabled_ && !p.silent)
    traced_here = p.functions[b->second.fn].return_mask != 0;
  if ((hooks & kHookReturnsTwice) && !traced_here) {
    // Not traced itself, but reached by a jump from hijacked frames (a traced
    // _setjmp@plt): it would save the trampoline as its return address. Hand those
    // frames over to a return-site breakpoint and put the real address back.
    if (auto ret = p.mem().peek(t.tid, RemoteAddr(regs.sp())))
      if (uint64_t real = t.stack.to_site(regs.sp(), p.trampoline.value(), *ret)) {
        (void)p.mem().poke(t.tid, RemoteAddr(regs.sp()), real);
        if (Breakpoint* site = plant_raw(p, t, regs, real, "return site"))
          site->hooks |= kHookReturnSite;
      }
  }

  auto it = p.breakpoints.find(addr);  // rescanning may have changed the table
  if (it == p.breakpoints.end()) {
    // The module went away under us; the instruction is back in place.
    regs.set_ip(addr);
    (void)ptrace::set_regs(t.tid, regs);
    resume(t);
    return;
  }
  if (it->second.traced && enabled_ && !p.silent) {
    const FunctionInfo& fn = p.functions[it->second.fn];
    uint32_t fn_id = it->second.fn;
    uint64_t now = monotonic_ns();
    unsigned depth = static_cast<unsigned>(t.stack.depth() - t.stack.inherited());
    if (fn.return_mask) {
      RemoteAddr slot(regs.sp());
      auto ret = p.mem().peek(t.tid, slot);
      if (ret && (hooks & kHookReturnsTwice)) {
        // Catch the return with a breakpoint at the return address.
        auto e = t.stack.push_site(slot.value(), *ret, p.trampoline.value(), fn_id, now);
        if (!e.abandoned.empty()) report_unwound(t, e.abandoned, "longjmp", now, t.stack.depth() - 1);
        depth = static_cast<unsigned>(t.stack.depth() - 1 - t.stack.inherited());
        if (e.restore_slot) (void)p.mem().poke(t.tid, slot, e.real_ret);
        Breakpoint* site = plant_raw(p, t, regs, e.real_ret, fn.name + " return site");
        if (site) {
          site->hooks |= kHookReturnSite;
        } else {
          t.stack.pop_last();
        }
      } else if (ret) {
        auto e = t.stack.push(slot.value(), *ret, p.trampoline.value(), fn_id, now);
        if (!e.abandoned.empty()) report_unwound(t, e.abandoned, "longjmp", now, t.stack.depth() - 1);
        depth = static_cast<unsigned>(t.stack.depth() - 1 - t.stack.inherited());
        if (e.write_trampoline) {
          if (auto s = p.mem().poke(t.tid, slot, p.trampoline.value()); !s) {
            t.stack.pop_last();
            log::warn("cannot hook the return of {} in thread {}: {}", fn.name, t.tid, s.error().message);
          }
        }
      }
    }
    it = p.breakpoints.find(addr);  // planting a return site may have rehashed the table
    ft_ctx c = ctx(p, &t, &regs, depth);
    c.now_ns = now;
    const FunctionInfo& f = p.functions[fn_id];
    if (f.entry_mask) {
      host_.call(c, f);
      ++stats_.calls;
    }
  }
  if (auto s = apply_relocation(p, it->second, regs); !s) {
    // The emulated instruction touched memory the program cannot touch either (a
    // call pushing into the stack guard page): the CPU would have raised SIGSEGV.
    log::warn("thread {}: the instruction at {:#x} faults ({}); delivering SIGSEGV", t.tid, addr,
              s.error().message);
    regs.set_ip(addr);
    (void)ptrace::set_regs(t.tid, regs);
    (void)ptrace::cont(t.tid, SIGSEGV);
    return;
  }
  if (auto s = ptrace::set_regs(t.tid, regs); !s) return;
  resume(t);
}

void Tracer::report_returns(Thread& t, const Registers& regs, const CallStack::Return& r, uint64_t now) {
  Process& p = *t.process;
  if (p.silent) return;
  size_t n = r.returned.size();
  size_t base = t.stack.depth() - t.stack.inherited();
  for (size_t i = 0; i < n; ++i) {
    if (r.returned[i].inherited) continue;
    const FunctionInfo& fn = p.functions[r.returned[i].fn];
    ft_ctx c = ctx(p, &t, &regs, static_cast<unsigned>(base + (n - 1 - i)));
    c.now_ns = now;
    host_.ret(c, fn);
    ++stats_.returns;
  }
}

void Tracer::on_return(Thread& t, Registers& regs) {
  uint64_t now = monotonic_ns();
  auto r = t.stack.pop(regs.sp());
  if (!r.abandoned.empty()) report_unwound(t, r.abandoned, "longjmp", now, t.stack.depth() + r.returned.size());
  FT_CHECK(r.found, "thread %d returned through the trampoline with no matching frame (%s)", t.tid,
           regs.dump().c_str());
  report_returns(t, regs, r, now);
  regs.set_ip(r.real_ret);
  if (auto s = ptrace::set_regs(t.tid, regs); !s) return;
  resume(t);
}

// ---------------------------------------------------------------------------------
// Address space: modules, SSOL areas, breakpoints

Result<uint64_t> Tracer::inject_syscall(Process& p, Thread& t, const Registers& saved, RemoteAddr stub, long nr,
                                        std::initializer_list<uint64_t> args) {
  (void)p;
  Registers r = saved;
  r.raw.rax = static_cast<unsigned long long>(nr);
  unsigned long long* slots[] = {&r.raw.rdi, &r.raw.rsi, &r.raw.rdx, &r.raw.r10, &r.raw.r8, &r.raw.r9};
  size_t i = 0;
  for (uint64_t a : args) *slots[i++] = a;
  r.set_ip(stub.value());
  r.set_no_restart();
  if (auto s = ptrace::set_regs(t.tid, r); !s) return s.error();
  auto after = run_to_trap(t, stub.value() + 3);
  if (!after) return after.error();
  if (auto s = ptrace::set_regs(t.tid, saved); !s) return s.error();
  return after->ret();
}

Result<Registers> Tracer::run_to_trap(Thread& t, uint64_t expect_ip) {
  if (auto s = ptrace::cont(t.tid, 0); !s) return s.error();
  for (;;) {
    int status = 0;
    pid_t w = ::waitpid(t.tid, &status, __WALL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Error::from_errno(errno, "waitpid");
    }
    ++stats_.stops;
    WaitStatus ws = WaitStatus::classify(status);
    if (ws.kind == WaitStatus::Kind::Exited || ws.kind == WaitStatus::Kind::Killed) {
      g_deferred.emplace_back(w, status);
      return Error::msg("the thread ended while running functracer's code");
    }
    if (ws.kind == WaitStatus::Kind::SignalStop && ws.signal == SIGTRAP) {
      auto now = ptrace::get_regs(t.tid);
      if (!now) return now.error();
      if (now->ip() == expect_ip) return *now;
    }
    // A signal that arrived meanwhile is held and delivered at the next resume.
    if (ws.kind == WaitStatus::Kind::SignalStop && ws.signal != SIGTRAP) t.held_signal = ws.signal;
    if (auto s = ptrace::cont(t.tid, 0); !s) return s.error();
  }
}

Status Tracer::settle_after_exec(Process& p, Thread& t, Registers& regs) {
  // At the PTRACE_EVENT_EXEC stop the thread is still inside execve: registers set now
  // would have rax overwritten by execve's return value on the way out. Let it return
  // to user mode onto a temporary int3 at its entry point, then work from there.
  RemoteAddr ip(regs.ip());
  uint8_t saved = 0;
  static constexpr uint8_t kInt3 = 0xcc;
  if (auto s = p.mem().read_exact(ip, {&saved, 1}); !s) return s;
  if (auto s = p.mem().write(ip, {&kInt3, 1}); !s) return s;
  auto after = run_to_trap(t, ip.value() + 1);
  (void)p.mem().write(ip, {&saved, 1});
  if (!after) return after.error();
  regs = *after;
  regs.set_ip(ip.value());
  return ptrace::set_regs(t.tid, regs);
}

SsolArea* Tracer::area_near(Process& p, Thread& t, Registers& regs, RemoteAddr addr) {
  for (auto& a : p.areas)
    if (a->near(addr) && a->has_room()) return a.get();
  auto maps = read_maps(p.pid());
  if (!maps) return nullptr;
  const Module* m = p.module_at(addr);
  uint64_t lo = m ? m->map.base : addr.value(), hi = m ? m->map.end : addr.value() + 1;
  uint64_t hint = find_free_range(*maps, lo, hi, SsolArea::kSize);
  if (hint == 0) {
    log::warn("no room for an out-of-line area near {:#x} in process {}", addr.value(), p.pid());
    return nullptr;
  }
  // The first area is mapped with a temporary `syscall; int3` written at the thread's
  // ip. That only happens while no other thread can run there (right after exec, or
  // with every thread stopped).
  RemoteAddr stub;
  uint8_t saved_code[3] = {};
  bool temp = p.areas.empty();
  static constexpr uint8_t kStub[3] = {0x0f, 0x05, 0xcc};  // syscall; int3
  if (temp) {
    stub = RemoteAddr(regs.ip());
    if (!p.mem().read_exact(stub, saved_code) || !p.mem().write(stub, kStub)) return nullptr;
  } else {
    stub = p.areas.front()->syscall_stub();
  }
  auto rc = inject_syscall(p, t, regs, stub, SYS_mmap,
                           {hint, SsolArea::kSize, PROT_READ | PROT_EXEC,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, static_cast<uint64_t>(-1), 0});
  if (temp) (void)p.mem().write(stub, saved_code);
  if (!rc) {
    log::warn("cannot map an out-of-line area in process {}: {}", p.pid(), rc.error().message);
    return nullptr;
  }
  if (*rc > static_cast<uint64_t>(-4096)) {
    log::warn("cannot map an out-of-line area in process {}: {}", p.pid(),
              std::strerror(static_cast<int>(-static_cast<int64_t>(*rc))));
    return nullptr;
  }
  auto area = std::make_unique<SsolArea>(RemoteAddr(*rc));
  static constexpr uint8_t kHeader[SsolArea::kSyscallOffset + 3] = {
      0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
      0x0f, 0x05, 0xcc};
  if (auto s = p.mem().write(area->base(), kHeader); !s) {
    log::warn("{}", s.error().message);
    return nullptr;
  }
  FT_DEBUG("process {}: out-of-line area at {:#x}", p.pid(), area->base().value());
  if (p.trampoline.null()) p.trampoline = area->trampoline();
  p.areas.push_back(std::move(area));
  return p.areas.back().get();
}

Status Tracer::setup_address_space(Process& p, Thread& t, Registers& regs) {
  if (auto s = p.mem().reopen(); !s) return s;
  if (auto s = settle_after_exec(p, t, regs); !s) return s;
  auto maps = read_maps(p.pid());
  if (!maps) return maps.error();
  auto mods = modules_from_maps(*maps);
  const MappedModule* main = nullptr;
  for (const auto& m : mods)
    if (m.path == p.exe) main = &m;
  if (!main) return Error::msg("cannot find " + p.exe + " in the process's memory map");
  // The first area goes next to the executable; it holds the trampoline.
  auto main_copy = *main;
  load_module(p, t, regs, main_copy, true);
  for (const auto& m : mods)
    if (m.path != p.exe) load_module(p, t, regs, m, false);
  write_modules(p);
  return {};
}

void Tracer::rescan_modules(Process& p, Thread& t, Registers& regs) {
  auto maps = read_maps(p.pid());
  if (!maps) return;
  auto now = modules_from_maps(*maps);
  // Gone: forget their breakpoints without touching their memory.
  for (auto it = p.modules.begin(); it != p.modules.end();) {
    const Module& m = **it;
    bool present = std::any_of(now.begin(), now.end(), [&](const MappedModule& n) {
      return n.path == m.map.path && n.base == m.map.base && n.inode == m.map.inode;
    });
    if (present) {
      ++it;
      continue;
    }
    FT_DEBUG("process {}: module {} unloaded", p.pid(), m.map.path);
    for (auto b = p.breakpoints.begin(); b != p.breakpoints.end();)
      b = b->second.module == &m ? p.breakpoints.erase(b) : std::next(b);
    it = p.modules.erase(it);
  }
  size_t before = p.modules.size();
  for (const auto& n : now) {
    bool known = std::any_of(p.modules.begin(), p.modules.end(), [&](const auto& m) {
      return n.path == m->map.path && n.base == m->map.base && n.inode == m->map.inode;
    });
    if (!known) load_module(p, t, regs, n, n.path == p.exe);
  }
  if (p.trace)
    for (size_t i = before; i < p.modules.size(); ++i) write_module(p, *p.modules[i]);
}

void Tracer::load_module(Process& p, Thread& t, Registers& regs, const MappedModule& mm, bool is_main) {
  auto elf = ElfImage::open(mm.path);
  auto m = std::make_unique<Module>();
  m->map = mm;
  m->is_main = is_main;
  if (!elf) {
    FT_DEBUG("{}", elf.error().message);
    p.modules.push_back(std::move(m));
    return;
  }
  std::shared_ptr<const ElfImage> img(std::move(*elf));
  m->elf = img;
  m->bias = img->is_dyn() ? mm.base - img->min_vaddr() : 0;
  Module& mod = *m;
  p.modules.push_back(std::move(m));
  FT_DEBUG("process {}: module {} at {:#x} (bias {:#x}, {} functions)", p.pid(), mm.path, mm.base, mod.bias,
           img->functions().size());
  for (const ElfSymbol& sym : img->functions()) {
    if (sym.ifunc) continue;  // the resolver, not the implementation that runs
    if (is_fragment(sym.name)) continue;
    if (not_a_called_function(sym.name) || sym.value == img->entry()) {
      FT_DEBUG("not tracing {}: not entered by a call", sym.name);
      continue;
    }
    uint64_t addr = sym.value + mod.bias;
    unsigned hooks = hooks_for(sym.name);
    if (hooks == kHookLinker && mod.is_main && !img->is_static()) hooks = kHookNone;
    std::string dem = demangle(sym.name);
    ft_symbol s{sym.name.c_str(), dem.c_str(), mm.path.c_str(), addr, sym.size, sym.plt ? 1 : 0, is_main ? 1 : 0};
    auto in = host_.offer(s);
    if (hooks == kHookLinker)
      if (const ElfSymbol* rd = img->find("_r_debug")) p.r_debug = RemoteAddr(rd->value + mod.bias);
    if (in.any() || hooks != kHookNone) plant(p, t, regs, mod, addr, sym, in, hooks);
  }
}

void Tracer::plant(Process& p, Thread& t, Registers& regs, Module& m, uint64_t addr, const ElfSymbol& sym,
                   const PluginHost::Interest& in, unsigned hooks) {
  auto add_function = [&](Breakpoint& bp) {
    FunctionInfo fi;
    fi.name = sym.name;
    fi.demangled = demangle(sym.name);
    fi.module = m.map.path;
    fi.address = RemoteAddr(addr);
    fi.entry_mask = in.entry_mask;
    fi.return_mask = in.return_mask;
    if (in.params && m.elf) {
      if (!m.dwarf_tried) {
        m.dwarf_tried = true;
        m.dwarf = DwarfParams::open(m.map.path, m.elf->build_id(), m.elf->debuglink());
      }
      if (m.dwarf)
        if (auto ps = m.dwarf->params(sym.value)) {
          for (const auto& pi : *ps) {
            switch (pi.kind) {
              case ParamInfo::Kind::Integer: fi.params.push_back(FT_PARAM_INTEGER); break;
              case ParamInfo::Kind::Pointer: fi.params.push_back(FT_PARAM_POINTER); break;
              case ParamInfo::Kind::String: fi.params.push_back(FT_PARAM_STRING); break;
              case ParamInfo::Kind::Float: fi.params.push_back(FT_PARAM_FLOAT); break;
              case ParamInfo::Kind::Other: fi.params.push_back(FT_PARAM_OTHER); break;
            }
          }
          fi.nparams = static_cast<int>(fi.params.size());
        }
    }
    bp.traced = true;
    bp.fn = static_cast<uint32_t>(p.functions.size());
    p.functions.push_back(std::move(fi));
  };

  if (auto it = p.breakpoints.find(addr); it != p.breakpoints.end()) {
    Breakpoint& bp = it->second;
    bp.hooks |= hooks;
    if (in.any()) {
      if (!bp.traced) {
        add_function(bp);
      } else {
        p.functions[bp.fn].entry_mask |= in.entry_mask;
        p.functions[bp.fn].return_mask |= in.return_mask;
      }
    }
    return;
  }
  Breakpoint* bp = plant_raw(p, t, regs, addr, demangle(sym.name));
  if (!bp) return;
  bp->hooks = hooks;
  bp->module = &m;
  if (in.any()) add_function(*bp);
}

Breakpoint* Tracer::plant_raw(Process& p, Thread& t, Registers& regs, uint64_t addr, const std::string& what) {
  if (auto it = p.breakpoints.find(addr); it != p.breakpoints.end()) return &it->second;
  SsolArea* area = area_near(p, t, regs, RemoteAddr(addr));
  if (!area) {
    ++stats_.refused;
    log::warn("cannot trace {}: no out-of-line area", what);
    return nullptr;
  }
  RemoteAddr slot = area->allocate_slot();
  uint8_t code[arch::kMaxInsnBytes] = {};
  auto got = p.mem().read(RemoteAddr(addr), code);
  if (!got) {
    ++stats_.refused;
    log::warn("cannot trace {}: {}", what, got.error().message);
    return nullptr;
  }
  auto rel = arch::relocate_x86_64({code, *got}, addr, slot.value());
  if (rel.kind == arch::Relocation::Kind::Refuse) {
    ++stats_.refused;
    log::warn("cannot trace {} at {:#x}: {} ({})", what, addr, rel.reason, rel.text.empty() ? "undecodable" : rel.text);
    return nullptr;
  }
  FT_DEBUG("breakpoint {} at {:#x}: {} -> {}", what, addr, rel.text,
           rel.kind == arch::Relocation::Kind::Emulate ? "emulated" : "out of line");
  // The slot is complete before the breakpoint exists, so no thread can reach an
  // empty slot.
  if (rel.kind == arch::Relocation::Kind::OutOfLine)
    if (auto s = p.mem().write(slot, rel.slot_code); !s) {
      ++stats_.refused;
      log::warn("cannot trace {}: {}", what, s.error().message);
      return nullptr;
    }
  auto bpbytes = arch::breakpoint_bytes(arch::Arch::X86_64);
  if (auto s = p.mem().write(RemoteAddr(addr), bpbytes); !s) {
    ++stats_.refused;
    log::warn("cannot trace {}: {}", what, s.error().message);
    return nullptr;
  }
  Breakpoint bp;
  bp.addr = RemoteAddr(addr);
  bp.orig_byte = code[0];
  bp.reloc = std::move(rel);
  bp.slot = slot;
  bp.module = p.module_at(bp.addr);
  ++stats_.breakpoints;
  return &p.breakpoints.emplace(addr, std::move(bp)).first->second;
}

// ---------------------------------------------------------------------------------
// Reporting

ft_ctx Tracer::ctx(Process& p, Thread* t, const Registers* regs, unsigned depth) {
  ft_ctx c;
  c.process = &p;
  c.thread = t;
  c.regs = regs;
  c.now_ns = monotonic_ns();
  c.depth = depth;
  return c;
}

void Tracer::report_unwound(Thread& t, const std::vector<ShadowFrame>& frames, const char* reason, uint64_t now,
                            size_t base_depth) {
  Process& p = *t.process;
  if (p.silent) return;
  size_t n = frames.size();
  // Inherited frames are the outermost ones; they are not counted in depths.
  size_t inherited_below = std::min(base_depth, t.stack.inherited());
  for (size_t i = 0; i < n; ++i) {
    if (frames[i].inherited) continue;
    const FunctionInfo& fn = p.functions[frames[i].fn];
    ft_ctx c = ctx(p, &t, nullptr, static_cast<unsigned>(base_depth - inherited_below + (n - 1 - i)));
    c.now_ns = now;
    host_.unwound(c, fn, reason);
    ++stats_.unwound;
  }
}

void Tracer::lifecycle(Process& p, Thread* t, ft_event_kind kind, int64_t value, uint64_t address, const char* text,
                       TraceRecord r, const std::string& line) {
  ft_ctx c = ctx(p, t, nullptr);
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
  r.add("backtrace_depth", static_cast<int64_t>(opts_.backtrace_depth < 0 ? 0 : opts_.backtrace_depth));
  p.trace->write(r);
  return {};
}

void Tracer::write_module(Process& p, const Module& m) {
  TraceRecord r;
  r.type = "module";
  r.tid = p.pid();
  r.ts_ns = monotonic_ns();
  r.add("base", Hex{m.map.base}).add("end", Hex{m.map.end}).add("offset", Hex{m.map.offset});
  r.add("path", m.map.path).add("build_id", m.elf ? m.elf->build_id() : std::string());
  p.trace->write(r);
}

void Tracer::write_modules(Process& p) {
  if (!p.trace) return;
  for (const auto& m : p.modules) write_module(p, *m);
}

}  // namespace ft
