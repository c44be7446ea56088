// Launching a program under ptrace, and what functracer's own signals
// mean for it.
#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/tracer.h"
#include "arch/arch.h"
#include "common/check.h"
#include "core/log.h"
#include "core/memory_budget.h"
#include "core/procfs.h"
#include "core/ptrace.h"
#include "core/symbol_policy.h"

namespace ft {
namespace {

// Where functracer's SIGINT/SIGTERM/SIGHUP/SIGQUIT go: a pid > 0 is the launched
// program; kAttach: functracer itself (detach); kNotStarted: remembered
// until the program exists, then sent to it; kEnded: nowhere.
constexpr pid_t kAttach = 0;
constexpr pid_t kNotStarted = -1;
constexpr pid_t kEnded = -2;
std::atomic<pid_t> g_forward_pid{kAttach};
// Stop signals to pass on: per signal, who sent it to functracer and when.
std::atomic<pid_t> g_forward_from[NSIG];
std::atomic<uint64_t> g_forward_at[NSIG];
std::atomic<bool> g_forward_pending{false};
std::atomic<bool> g_stop_requested{false};
// A signal the program took itself counts as the one functracer got when their times
// are this close (both come from one kill(2) of a process group).
constexpr uint64_t kSameSignalNs = 1'000'000'000;

struct SavedDisposition {
  int sig;
  struct sigaction action;
};
std::vector<SavedDisposition> g_saved_dispositions;

}  // namespace

void Tracer::save_disposition(int sig) {
  SavedDisposition d{sig, {}};
  if (sigaction(sig, nullptr, &d.action) == 0) g_saved_dispositions.push_back(d);
}

bool Tracer::is_tracee(pid_t pid) {
  // Only async-signal-safe calls: this runs in signal handlers.
  if (pid <= 0) return false;
  char path[40] = "/proc/";
  char* q = path + 6;
  char digits[16];
  int n = 0;
  for (unsigned v = static_cast<unsigned>(pid); v > 0 && n < 15; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
  while (n > 0) *q++ = digits[--n];
  const char tail[] = "/status";
  for (const char* t = tail; *t;) *q++ = *t++;
  *q = '\0';
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[2048];
  ssize_t len = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (len <= 0) return false;
  buf[len] = '\0';
  const char key[] = "\nTracerPid:";
  for (char* c = buf; *c; ++c) {
    size_t k = 0;
    while (key[k] && c[k] == key[k]) ++k;
    if (key[k]) continue;
    c += k;
    while (*c == ' ' || *c == '\t') ++c;
    long tracer = 0;
    while (*c >= '0' && *c <= '9') tracer = tracer * 10 + (*c++ - '0');
    return tracer == ::getpid();
  }
  return false;
}

void Tracer::set_launch_mode() { g_forward_pid = kNotStarted; }

void Tracer::request_stop(int sig, pid_t sender) {
  // Launch mode: a signal sent to functracer by a process is passed on to the program,
  // which would have received it without functracer (forward_signals). A terminal's
  // SIGINT already reached the whole foreground process group, program included.
  // Attach mode: the signal is for functracer, which detaches.
  pid_t p = g_forward_pid.load();
  if (p == kAttach) {
    g_stop_requested = true;
    return;
  }
  if (sender == 0 || p == kEnded || sig <= 0 || sig >= NSIG) return;
  g_forward_at[sig] = monotonic_ns();  // async-signal-safe (clock_gettime)
  g_forward_from[sig] = sender;
  g_forward_pending = true;
}

bool Tracer::forward_pending() { return g_forward_pending.load(); }

void Tracer::forward_signals(bool check_delivered) {
  if (!g_forward_pending.exchange(false)) return;
  for (int sig = 1; sig < NSIG; ++sig) {
    pid_t from = g_forward_from[sig].exchange(0);
    if (from == 0) continue;
    if (check_delivered && delivered_directly(sig, from, g_forward_at[sig].load())) {
      FT_DEBUG("{} from process {} reached the program itself: not passed on", signal_name(sig), from);
      continue;
    }
    FT_DEBUG("passing {} from process {} on to process {}", signal_name(sig), from, main_pid_);
    ::kill(main_pid_, sig);
  }
}

bool Tracer::delivered_directly(int sig, pid_t from, uint64_t at) {
  auto near = [at](uint64_t t) { return t + kSameSignalNs >= at && at + kSameSignalNs >= t; };
  // A signal-delivery stop for it, already handled.
  if (auto it = own_signals_.find(sig); it != own_signals_.end() && it->second.first == from && near(it->second.second)) {
    own_signals_.erase(it);
    return true;
  }
  // Sent to the program too and not yet taken by one of its threads.
  unsigned long long pending = std::strtoull(status_field(main_pid_, "ShdPnd").c_str(), nullptr, 16);
  if (pending & (1ull << (sig - 1))) return true;
  // Taken by a thread, which is in its signal-delivery stop now: collect the stops.
  stops_.collect_pending();
  for (const auto& [tid, st] : stops_.deferred()) {
    Thread* t = procs_.thread(tid);
    if (!t || t->process->pid() != main_pid_ || !WIFSTOPPED(st) || WSTOPSIG(st) != sig || (st >> 16) != 0) continue;
    auto si = ptrace::siginfo(tid);
    if (si && si->si_signo == sig && si->si_code == SI_USER && si->si_pid == from) return true;
  }
  return false;
}

void Tracer::note_own_signal(Thread& t, int sig) {
  if (attach_mode_ || t.process->pid() != main_pid_) return;
  if (sig != SIGINT && sig != SIGTERM && sig != SIGHUP && sig != SIGQUIT) return;
  auto si = ptrace::siginfo(t.tid);
  if (si && si->si_code == SI_USER && si->si_pid > 0) own_signals_[sig] = {si->si_pid, monotonic_ns()};
}

void Tracer::program_ended() {
  if (g_forward_pid.load() > 0) g_forward_pid = kEnded;  // its pid may be reused
}

bool Tracer::take_stop_request() { return g_stop_requested.exchange(false); }
bool Tracer::stop_requested() { return g_stop_requested.load(); }

Result<pid_t> Tracer::spawn() {
  const std::string& prog = opts_.command[0];
  std::string path = find_in_path(prog);
  if (path.empty() || ::access(path.c_str(), F_OK) != 0)
    return Error::msg("cannot run '" + prog + "': No such file or directory");
  if (::access(path.c_str(), X_OK) != 0) return Error::from_errno(errno, "cannot run '" + prog + "'");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return Error::msg("cannot run '" + prog + "': Is a directory");

  // functracer traces x86-64 code: refuse other ELF programs before starting them
  // (scripts and other formats go to the kernel; their interpreter is checked at exec).
  if (int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    unsigned char h[20] = {};
    ssize_t n = ::read(fd, h, sizeof h);
    ::close(fd);
    if (n == static_cast<ssize_t>(sizeof h) && h[0] == 0x7f && h[1] == 'E' && h[2] == 'L' && h[3] == 'F') {
      uint16_t machine = static_cast<uint16_t>(h[18] | (h[19] << 8));
      if (h[5] == 1 /* little endian */ && (machine != arch::host().elf_machine || h[4] != 2 /* ELFCLASS64 */))
        return Error::msg("cannot trace '" + prog + "': not an " + std::string(arch::host().title) + " program (ELF class " +
                          std::to_string(h[4] == 2 ? 64 : 32) + ", machine " + std::to_string(machine) + ")");
    }
  }

  int go[2], err[2];
  if (::pipe2(go, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return Error::from_errno(errno, "pipe");
  std::vector<char*> argv;
  for (const auto& a : opts_.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  // functracer's signal handlers must not run in the child: a signal that reaches it
  // before it has its own dispositions back waits (blocked) until then.
  sigset_t block, old_mask;
  sigemptyset(&block);
  for (const auto& d : g_saved_dispositions) sigaddset(&block, d.sig);
  sigprocmask(SIG_BLOCK, &block, &old_mask);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(go[1]);
    ::close(err[0]);
    for (const auto& d : g_saved_dispositions) sigaction(d.sig, &d.action, nullptr);
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    char c;
    // Wait until the parent has seized us, so the exec is seen.
    if (::read(go[0], &c, 1) != 1) ::_exit(127);
    ::execv(path.c_str(), argv.data());
    int e = errno;
    if (::write(err[1], &e, sizeof e) < 0) ::_exit(127);
    ::_exit(127);
  }
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  if (pid < 0) return Error::from_errno(errno, "fork");
  ::close(go[0]);
  ::close(err[1]);
  unsigned long options = PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC |
                          PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL |
                          (host_.wants_snapshots() ? PTRACE_O_TRACEEXIT : 0);
  if (auto s = ptrace::seize(pid, options); !s) {
    ::kill(pid, SIGKILL);
    (void)stops_.reap(pid);
    return Error::msg("cannot trace '" + prog + "': " + s.error().message);
  }
  // From now on the program exists: functracer's stop signals go to it (one that came
  // earlier too).
  g_forward_pid = pid;
  main_pid_ = pid;
  forward_signals(false);
  if (::write(go[1], "x", 1) != 1) return Error::from_errno(errno, "cannot start '" + prog + "'");
  ::close(go[1]);
  // Until its exec the child is waited for here. A signal it gets meanwhile (a
  // terminal's Ctrl-C, one passed on) is a signal-delivery stop to be answered:
  // delivered, with the dispositions the program starts with.
  for (;;) {
    auto stop = stops_.wait_thread(pid, true);
    if (!stop) {
      if (stop.error().code == EINTR) {
        forward_signals(false);
        continue;
      }
      return stop.error();
    }
    WaitStatus ws = WaitStatus::classify(stop->status);
    if (ws.kind == WaitStatus::Kind::Exited || ws.kind == WaitStatus::Kind::Killed ||
        (ws.kind == WaitStatus::Kind::EventStop && ws.event == PTRACE_EVENT_EXEC)) {
      int e = 0;
      ssize_t n = 0;
      if (ws.kind == WaitStatus::Kind::Exited) {
        do n = ::read(err[0], &e, sizeof e);
        while (n < 0 && errno == EINTR);
      }
      ::close(err[0]);
      if (n == static_cast<ssize_t>(sizeof e)) return Error::from_errno(e, "cannot run '" + prog + "'");
      stops_.defer(*stop);  // the loop handles the exec, or the death
      return pid;
    }
    if (ws.kind == WaitStatus::Kind::SignalStop) (void)ptrace::cont(pid, ws.signal);
    else if (ws.kind == WaitStatus::Kind::GroupStop) (void)ptrace::listen(pid);
    else (void)ptrace::cont(pid, 0);
  }
}

Result<int> Tracer::run_launch() {
  auto pid = spawn();
  if (!pid) {
    g_forward_pid = kEnded;
    return pid.error();
  }
  main_pid_ = *pid;
  procs_.add_thread(procs_.add(std::make_unique<Process>(*pid)), *pid);
  loop();
  const bool let_go = host_.crashed() || memory_budget::ran_out();
  if (let_go) {
    // Let go of (loop() detached it): it runs on untraced to its end, still
    // functracer's child. A terminal's signals reach it directly.
    (void)stops_.reap(*pid);
  }
  g_forward_pid = kEnded;
  host_.finish();
  return host_.crashed() || memory_budget::ran_out() ? 1 : main_exit_;  // (a plugin may crash in finish)
}

}  // namespace ft
