// The attach/detach session: attaching to running processes (-p) and letting go of them.
//
// Attach: every thread listed in /proc/PID/task is seized (the list is read again
// until a pass finds no thread it has not tried: threads created meanwhile by a
// seized thread are attached by the kernel and announced by their clone event) and
// interrupted; once every thread is in a ptrace-stop, the modules are read and the
// breakpoints planted exactly as after an exec, and the threads are resumed.
//
// Detach (SIGINT/SIGTERM/SIGHUP/SIGQUIT to functracer in attach mode): every thread of
// every process is interrupted and its stop collected; a thread caught on an entry
// breakpoint is rewound onto the original instruction, one caught on the trampoline
// finishes its return. Then each process gets its breakpoint bytes and every
// hijacked return address back, held signals go with the detach, and the program
// runs on. Out-of-line areas stay mapped: a thread may still be running in one (a
// signal handler interrupted it there).
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

#include "core/log.h"
#include "functracer/schema.h"
#include "core/memory_snapshot.h"
#include "core/procfs.h"
#include "core/ptrace.h"
#include "core/tracer.h"
#include "arch/arch.h"

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

// Is a SIGTRAP pending for this very thread?
bool sigtrap_pending(pid_t tid) {
  unsigned long long mask = std::strtoull(status_field(tid, "SigPnd").c_str(), nullptr, 16);
  return mask & (1ull << (SIGTRAP - 1));
}

// A number from /proc/PID/status ("PPid", "TracerPid"); -1 when unknown.
long status_number(pid_t pid, std::string_view name) {
  std::string v = status_field(pid, name);
  return v.empty() ? -1 : std::strtol(v.c_str(), nullptr, 10);
}

}  // namespace

Result<int> Tracer::run_attach(const std::vector<pid_t>& pids) {
  attach_mode_ = true;
  for (size_t i = 0; i < pids.size(); ++i) {
    if (auto s = attach(pids[i]); !s) {
      detach_all();  // the processes attached so far run on untouched
      // With nothing traced, the plugins have nothing to say (calltrace would report
      // its patterns as matching nothing, next to the one line of the error).
      if (i > 0) host_.finish();
      return s.error();
    }
  }
  loop();
  host_.finish();
  return host_.crashed() ? 1 : 0;
}

Status Tracer::attach(pid_t pid) {
  pid_t tgid = tgid_of(pid);
  if (tgid == 0) return Error::msg(fmt::format("no such process: {}", pid));
  if (tgid == ::getpid()) return Error::msg(fmt::format("cannot attach to process {}: it is functracer itself", pid));
  if (procs_.contains(tgid)) return {};  // named twice, or a thread of one already attached
  Process& p = procs_.add(std::make_unique<Process>(tgid));
  p.attached = true;
  p.started = true;
  if (main_pid_ == 0) main_pid_ = tgid;

  auto let_go = [&](Status s) {
    for (auto& [tid, t] : p.threads())
      if (t->stopped) (void)ptrace::detach(tid, t->held_signal);
    procs_.remove(p);
    return s;
  };
  if (auto s = seize_threads(p); !s) return let_go(s);
  // No trace file, no point in tracing: the process is let go of untouched.
  p.exe = exe_of(p.pid());
  p.cmdline = read_cmdline(p.pid());
  if (auto s = report_.open_trace(p); !s) return let_go(s);
  if (auto s = setup_attached(p); !s) log::warn("cannot trace inside process {}: {}", p.pid(), s.error().message);
  if (p.trace) p.trace->flush();  // the header and module map are there for readers at once
  log::info("attached to process {} ({} thread{})", p.pid(), p.threads().size(), p.threads().size() == 1 ? "" : "s");
  for (auto& [tid, t] : p.threads()) {
    if (!t->stopped) continue;
    t->stopped = false;
    if (t->group_stop) {
      t->group_stop = false;
      (void)ptrace::listen(tid);
    } else {
      resume(*t);
    }
  }
  return {};
}

Status Tracer::seize_threads(Process& p) {
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

Status Tracer::stop_thread(Thread& t) {
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
          handle_new_task(t, ws.event);
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

Status Tracer::setup_attached(Process& p) {
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
  if (auto s = load_modules(p, *worker, *regs, *maps); !s) return s;
  resolve_ifuncs(p, *worker, *regs);  // everything is relocated already
  return {};
}

void Tracer::detach_all() {
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
    handle_status(stop->tid, stop->status);  // while detaching_: collect_for_detach
  }
  detaching_ = false;
}

void Tracer::collect_for_detach(Thread& thread, const WaitStatus& ws) {
  Thread* t = &thread;
  pid_t tid = t->tid;
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
        auto regs = ptrace::get_regs(tid);
        if (!regs) return;
        RemoteAddr at = arch::host().trap_address(regs->ip());
        if (p.space.is_trampoline(at) || p.space.fast_slow_stop(at) >= 0) {
          if (!returns_.finish_return(*t, *regs))
            log::error("thread {} returned through the trampoline with no matching frame", tid);
          (void)ptrace::set_regs(tid, *regs);
        } else if (p.space.breakpoints.count(at.value())) {
          regs->set_ip(at);  // runs the original instruction once it is back
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

void Tracer::adopt_areas(Process& p, const std::vector<MapsEntry>& maps) {
  for (const auto& e : maps) {
    if (e.path.empty() && e.end - e.start == fastret::kDataSize && e.r && e.w && !e.x && p.space.fast_data.null()) {
      // The return records of an earlier functracer (fast_return.h): every block is
      // free again, their tops are reset as threads take them.
      if (auto mark = p.mem().read_u64(RemoteAddr(e.start)); mark && *mark == fastret::kDataMark) {
        p.space.fast_data = RemoteAddr(e.start);
        FT_DEBUG("process {}: adopted the return records at {:#x}", p.pid(), e.start);
      }
      continue;
    }
    if (!e.path.empty() || e.end - e.start != SsolArea::kSize || !e.r || e.w || !e.x) continue;
    uint8_t head[SsolArea::kMarkOffset + 16] = {};
    if (!p.mem().read_exact(RemoteAddr(e.start), head)) continue;
    uint64_t mark = 0, next = 0;
    std::memcpy(&mark, head + SsolArea::kMarkOffset, 8);
    std::memcpy(&next, head + SsolArea::kMarkOffset + 8, 8);
    bool ours = mark == SsolArea::kMark && arch::host().is_area_header(head, SsolArea::kSyscallOffset) &&
                next >= SsolArea::kFirstSlotOffset && next <= SsolArea::kSize && next % SsolArea::kSlotSize == 0;
    if (!ours) continue;
    // Slots below `next` may still be run by a thread; new ones go after them. The
    // mark is cleared while this functracer uses the area.
    static constexpr uint8_t kZero[16] = {};
    if (!p.mem().write(RemoteAddr(e.start + SsolArea::kMarkOffset), kZero)) continue;
    auto area = std::make_unique<SsolArea>(RemoteAddr(e.start), next);
    if (p.space.trampoline.null()) p.space.trampoline = area->trampoline();
    FT_DEBUG("process {}: adopted the out-of-line area at {:#x} ({} bytes used)", p.pid(), e.start, next);
    p.space.areas.push_back(std::move(area));
  }
}

void Tracer::remove_instrumentation(Process& p) {
  for (const auto& a : p.space.areas) {
    uint64_t mark[2] = {SsolArea::kMark, a->next_offset()};
    (void)p.mem().write(a->base() + SsolArea::kMarkOffset, {reinterpret_cast<const uint8_t*>(mark), sizeof mark});
  }
  for (const auto& [addr, bp] : p.space.breakpoints) (void)p.mem().write(bp.addr, {&bp.orig_byte, 1});
  if (p.space.trampoline.null()) return;
  for (const auto& [tid, t] : p.threads())
    for (const auto& f : t->stack.frames()) {
      if (!f.armed || f.tail || f.site) continue;
      auto v = p.mem().read_u64(RemoteAddr(f.slot));
      if (v && p.space.is_return_hook(*v)) (void)p.mem().write_u64(RemoteAddr(f.slot), f.real_ret);
    }
}

void Tracer::detach_process(Process& p) {
  returns_.drain(p);
  snapshot_before_detach(host_, p, stats_);
  // A thread stopped just before executing the trampoline returns now.
  for (auto& [tid, t] : p.threads()) {
    if (p.space.trampoline.null()) break;
    auto regs = ptrace::get_regs(tid);
    if (regs && p.space.is_return_hook(regs->ip().value()) && returns_.finish_return(*t, *regs))
      (void)ptrace::set_regs(tid, *regs);
  }
  remove_instrumentation(p);
  uint64_t now = monotonic_ns();
  for (auto& [tid, t] : p.threads())
    if (!t->stack.empty()) report_.report_unwound(*t, t->stack.take_all(), "detach", now, 0);
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
