// Tracer, part 1: launching a program under ptrace, and what functracer's own signals
// mean for it.
#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/tracer.h"
#include "core/check.h"
#include "core/log.h"
#include "core/procfs.h"
#include "core/ptrace.h"
#include "core/symbol_policy.h"

namespace ft {
namespace {

std::atomic<pid_t> g_forward_pid{0};
std::atomic<bool> g_stop_requested{false};

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

void Tracer::request_stop(int sig, bool from_user) {
  // Launch mode: a signal sent to functracer by a process is passed on to the program,
  // which would have received it without functracer. A terminal's SIGINT already
  // reached the whole foreground process group, program included.
  // Attach mode: the signal is for functracer, which detaches.
  pid_t p = g_forward_pid.load();
  if (p > 0) {
    if (from_user) ::kill(p, sig);
    return;
  }
  g_stop_requested = true;
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
      if (h[5] == 1 /* little endian */ && (machine != 62 /* EM_X86_64 */ || h[4] != 2 /* ELFCLASS64 */))
        return Error::msg("cannot trace '" + prog + "': not an x86-64 program (ELF class " +
                          std::to_string(h[4] == 2 ? 64 : 32) + ", machine " + std::to_string(machine) + ")");
    }
  }

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
  if (host_.crashed()) {
    // Let go of (loop() detached it): it runs on untraced to its end, still
    // functracer's child, and functracer's signals are still passed on to it.
    int status;
    while (::waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  g_forward_pid = 0;
  host_.finish();
  return host_.crashed() ? 1 : main_exit_;
}

}  // namespace ft
