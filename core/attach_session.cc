#include "core/attach_session.h"

#include <dirent.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>

#include "common/clock.h"
#include "core/instrumentation.h"
#include "core/log.h"
#include "core/memory_budget.h"
#include "core/memory_snapshot.h"
#include "core/ptrace.h"
#include "core/wait_status.h"
#include "functracer/schema.h"

namespace ft {
namespace {

constexpr unsigned long kAttachOptions = PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
                                         PTRACE_O_TRACEEXEC | PTRACE_O_TRACESYSGOOD;
constexpr uint64_t kSlowStopNs = 5'000'000'000;

std::vector<pid_t> task_ids(pid_t pid) {
  std::vector<pid_t> out;
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long v = std::strtol(e->d_name, &end, 10);
    if (end && *end == 0 && v > 0) out.push_back(static_cast<pid_t>(v));
  }
  ::closedir(d);
  // The leader first: if it cannot be seized, nothing else has been.
  std::sort(out.begin(), out.end(), [pid](pid_t a, pid_t b) {
    if ((a == pid) != (b == pid)) return a == pid;
    return a < b;
  });
  return out;
}

// A number from /proc/PID/status ("PPid", "TracerPid"); -1 when unknown.
long status_number(pid_t pid, std::string_view name) {
  std::string v = status_field(pid, name);
  return v.empty() ? -1 : std::strtol(v.c_str(), nullptr, 10);
}

}  // namespace

Status AttachSession::attach(pid_t pid) {
  pid_t tgid = tgid_of(pid);
  if (tgid == 0) return Error::msg(fmt::format("no such process: {}", pid));
  if (tgid == ::getpid()) return Error::msg(fmt::format("cannot attach to process {}: it is functracer itself", pid));
  if (procs_.contains(tgid)) return {};  // named twice, or a thread of one already attached
  Process& p = procs_.add(std::make_unique<Process>(tgid));
  p.attached = true;
  p.started = true;

  auto let_go = [&](Status s) {
    for (auto& [tid, t] : p.threads())
      if (t->stopped) (void)ptrace::detach(tid, t->held_signal);
    procs_.remove(p);
    return s;
  };
  // Read while the program runs: the pause below does not include it.
  const auto ahead = engine_.read_modules_ahead(p.pid());
  // The threads stand still from the first seize to the resumption below: the pause
  // an attach costs the program (--stats).
  const uint64_t held_from = monotonic_ns();
  if (auto s = seize_threads(p); !s) return let_go(s);
  // No trace file, no point in tracing: the process is let go of untouched.
  p.exe = exe_of(p.pid());
  p.cmdline = read_cmdline(p.pid());
  if (auto s = report_.open_trace(p); !s) return let_go(s);
  const uint64_t setup_from = monotonic_ns();
  if (auto s = set_up(p); !s) log::warn("cannot trace inside process {}: {}", p.pid(), s.error().message);
  if (p.trace) p.trace->flush();  // the header and module map are there for readers at once
  const uint64_t held = monotonic_ns() - held_from, setup = monotonic_ns() - setup_from;
  ++stats_.attaches;
  if (held > stats_.attach_held_max_ns) {
    stats_.attach_held_max_ns = held;
    stats_.attach_setup_max_ns = setup;
  }
  log::info("attached to process {} ({} thread{}; held {:.1f} ms)", p.pid(), p.threads().size(),
            p.threads().size() == 1 ? "" : "s", static_cast<double>(held) / 1e6);
  for (auto& [tid, t] : p.threads()) {
    if (!t->stopped) continue;
    t->stopped = false;
    if (t->group_stop) {
      t->group_stop = false;
      (void)ptrace::listen(tid);
    } else {
      engine_.resume_stopped(*t);
    }
  }
  return {};
}

Status AttachSession::seize_threads(Process& p) {
  std::set<pid_t> tried;
  for (bool added = true; added;) {
    added = false;
    for (pid_t tid : task_ids(p.pid())) {
      if (!tried.insert(tid).second) continue;
      if (auto s = ptrace::seize(tid, kAttachOptions | (host_.wants_snapshots() ? PTRACE_O_TRACEEXIT : 0)); !s) {
        if (tid != p.pid()) continue;  // gone, or attached already as the child of a seized thread
        int err = s.error().code;
        if (err == EPERM) {
          // A process that has exited but is not reaped yet cannot be seized either
          // (the kernel refuses a dead task with EPERM): it is not a permission problem.
          std::string state = status_field(p.pid(), "State");
          if (auto at = state.find_first_not_of(" \t"); at != std::string::npos && (state[at] == 'Z' || state[at] == 'X'))
            return Error::msg(status_number(p.pid(), "Threads") > 1
                                  ? fmt::format("cannot attach to process {}: its main thread has exited "
                                                "(a zombie; the kernel does not let it be traced)", p.pid())
                                  : fmt::format("cannot attach to process {}: it has exited (a zombie its "
                                                "parent has not reaped)", p.pid()));
          long tracer = status_number(p.pid(), "TracerPid");
          if (tracer > 0)
            return Error::msg(fmt::format("cannot attach to process {}: it is already traced by process {}",
                                          p.pid(), tracer));
          // Yama (ptrace_scope >= 1) refuses to attach to a process that is not a
          // descendant unless functracer has CAP_SYS_PTRACE: say so.
          std::ifstream yama("/proc/sys/kernel/yama/ptrace_scope");
          int scope = 0;
          if (yama >> scope && scope >= 1)
            return Error::msg(fmt::format("cannot attach to process {}: permission denied "
                                          "(kernel.yama.ptrace_scope is {}: {})",
                                          p.pid(), scope, scope >= 3 ? "no process may attach"
                                                                     : "attaching needs CAP_SYS_PTRACE"));
          return Error::msg(fmt::format("cannot attach to process {}: permission denied", p.pid()));
        }
        if (err == ESRCH) return Error::msg(fmt::format("no such process: {}", p.pid()));
        return Error::msg(fmt::format("cannot attach to process {}: {}", p.pid(), s.error().message));
      }
      procs_.add_thread(p, tid);
      (void)ptrace::interrupt(tid);
      added = true;
    }
  }
  if (p.threads().empty()) return Error::msg(fmt::format("no such process: {}", p.pid()));
  // Copy the list: a thread's clone event adds threads.
  std::vector<Thread*> seized;
  for (auto& [tid, t] : p.threads()) seized.push_back(t.get());
  for (Thread* t : seized) (void)stop_thread(*t);  // one that exits meanwhile is reported by the loop
  if (!p.leader())
    return Error::msg(fmt::format("no such process: {}", p.pid()));
  return {};
}

Status AttachSession::stop_thread(Thread& t) {
  uint64_t since = monotonic_ns();
  bool warned = false;
  while (!t.stopped) {
    auto polled = stops_.poll_thread(t.tid);
    if (!polled) return polled.error();
    if (!*polled) {
      if (!warned && monotonic_ns() - since > kSlowStopNs) {
        log::warn("waiting for thread {} to stop", t.tid);
        warned = true;
      }
      ::usleep(200);
      continue;
    }
    Stop stop = **polled;
    WaitStatus ws = WaitStatus::classify(stop.status);
    switch (ws.kind) {
      case WaitStatus::Kind::Exited:
      case WaitStatus::Kind::Killed:
        stops_.defer(stop);
        return Error::msg(fmt::format("thread {} ended", t.tid));
      case WaitStatus::Kind::EventStop:
        if (ws.event == PTRACE_EVENT_EXEC) {
          // A new image: the loop sets it up from scratch (and resumes the thread).
          stops_.defer(stop);
          return Error::msg(fmt::format("thread {} called exec", t.tid));
        }
        if (ws.event == PTRACE_EVENT_CLONE || ws.event == PTRACE_EVENT_FORK || ws.event == PTRACE_EVENT_VFORK)
          engine_.on_new_task(t, ws.event);
        t.stopped = true;
        break;
      case WaitStatus::Kind::GroupStop:
        t.stopped = true;
        t.group_stop = true;
        t.held_signal = 0;
        break;
      case WaitStatus::Kind::SignalStop:
        t.held_signal = ws.signal;  // delivered when the thread is resumed
        t.stopped = true;
        break;
      default:
        t.stopped = true;
        break;
    }
  }
  return {};
}

Status AttachSession::set_up(Process& p) {
  p.exe = exe_of(p.pid());
  p.cmdline = read_cmdline(p.pid());
  if (auto s = p.mem().open(); !s) return s;
  if (!p.trace)
    if (auto s = report_.open_trace(p); !s) log::error("{}", s.error().message);
  Thread* leader = p.leader();
  {
    long ppid = status_number(p.pid(), "PPid");
    TraceRecord r;
    r.type = schema::type::kProcess;
    r.add(schema::key::kPpid, static_cast<int64_t>(ppid));
    r.add(schema::key::kAttached, static_cast<int64_t>(1));
    report_.lifecycle(p, leader, FT_EVENT_PROCESS_CREATED, 0, 1, "attach", std::move(r),
              fmt::format("+++ attached to process {} +++", p.pid()));
  }
  // Code is injected through a thread in an ordinary stop; one in a group-stop would
  // leave it, and is sent its stop signal again afterwards.
  Thread* worker = nullptr;
  for (auto& [tid, t] : p.threads())
    if (t->stopped && !t->group_stop && (!worker || tid == p.pid())) worker = t.get();
  for (auto& [tid, t] : p.threads())
    if (!worker && t->stopped) worker = t.get();
  if (!worker) return Error::msg("no thread is stopped");
  if (worker->group_stop) {
    auto si = ptrace::siginfo(worker->tid);
    worker->group_stop = false;
    worker->held_signal = si ? si->si_signo : SIGSTOP;
  }
  auto regs = ptrace::get_regs(worker->tid);
  if (!regs) return regs.error();
  auto maps = read_maps(p.pid());
  if (!maps) return maps.error();
  // Temporary code goes to the start of the executable's code: every thread is
  // stopped, and none is on its way there.
  for (const auto& e : *maps)
    if (e.x && e.path.starts_with(p.exe) && (e.path == p.exe || e.path == p.exe + " (deleted)")) {
      p.space.scratch = RemoteAddr(e.start);
      break;
    }
  adopt_areas(p, *maps);
  return engine_.set_up_image(p, *worker, *regs, *maps);
}

void AttachSession::detach_all() {
  detaching_ = true;
  for (auto& [pid, p] : procs_)
    for (auto& [tid, t] : p->threads())
      if (!t->stopped && !t->awaiting_initial_stop) (void)ptrace::interrupt(tid);
  uint64_t since = monotonic_ns();
  bool warned = false;
  while (!procs_.empty()) {
    std::vector<Process*> ready;
    for (auto& [pid, p] : procs_)
      if (std::all_of(p->threads().begin(), p->threads().end(), [](const auto& e) { return e.second->stopped; }))
        ready.push_back(p.get());
    for (Process* p : ready) detach_process(*p);
    if (procs_.empty()) break;
    auto stop = stops_.poll();
    if (!stop) {
      if (errno == EINTR) continue;
      if (errno != 0) {
        log::error("waitpid: {}", std::strerror(errno));
        break;
      }
      if (!warned && monotonic_ns() - since > kSlowStopNs) {
        log::warn("waiting for the traced threads to stop before detaching");
        warned = true;
      }
      ::usleep(200);
      continue;
    }
    engine_.dispatch(stop->tid, stop->status);
  }
  detaching_ = false;
}

void AttachSession::detach_process(Process& p) {
  engine_.before_detach(p);
  returns_.drain_all(p);
  // A leak scan copies the program's heap: not when memory is what ran out.
  if (!memory_budget::ran_out()) snapshot_before_detach(host_, p, stats_);
  else log::warn("process {}: no leak scan at the detach (out of memory)", p.pid());
  // A thread stopped just before executing the trampoline returns now.
  for (auto& [tid, t] : p.threads()) {
    if (p.space.trampoline.null()) break;
    auto regs = ptrace::get_regs(tid);
    if (regs && p.space.is_return_hook(regs->ip()) && returns_.finish_return(*t, *regs))
      (void)ptrace::set_regs(tid, *regs);
  }
  remove_instrumentation(p);
  engine_.after_removal(p);
  uint64_t now = monotonic_ns();
  for (auto& [tid, t] : p.threads())
    if (!t->stack.empty()) report_.report_unwound(*t, t->stack.take_all(), "detach", now, 0);
  if (!p.threads().empty()) report_.close_goroutines(p, *p.threads().begin()->second, "detach", now);
  if (!p.silent) {
    Thread* leader = p.leader();
    TraceRecord r;
    r.type = schema::type::kDetach;
    report_.lifecycle(p, leader, FT_EVENT_DETACHED, 0, 0, nullptr, std::move(r),
              fmt::format("+++ detached from process {} +++", p.pid()));
  }
  if (p.trace) p.trace->flush();
  for (auto& [tid, t] : p.threads()) (void)ptrace::detach(tid, t->group_stop ? 0 : t->held_signal);
  log::info("detached from process {}", p.pid());
  procs_.remove(p);
}

}  // namespace ft
