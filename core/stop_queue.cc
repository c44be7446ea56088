#include "core/stop_queue.h"

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include <cerrno>

#include "common/clock.h"

namespace ft {

StopQueue::StopQueue() {
  // Polling only makes sense when the traced threads have another CPU to run on.
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) >= 2) spin_ns_ = kSpinNs;
}

pid_t StopQueue::wait_kernel(int* status, int flags, pid_t which) {
  pid_t tid = ::waitpid(which, status, __WALL | flags);
  if (tid > 0 && WIFSTOPPED(*status)) {
    ++stops_;
    if (watcher_) watcher_->reaped({tid, *status});
  }
  return tid;
}

std::optional<Stop> StopQueue::next(Sleeper& sleeper, bool many_threads) {
  if (!deferred_.empty()) {
    Stop s = deferred_.front();
    deferred_.pop_front();
    return s;
  }
  auto s = wait_any(sleeper);
  // With one thread there is no one to starve: save the system call.
  if (s && many_threads) collect_pending();
  return s;
}

void StopQueue::collect_pending() {
  int status = 0;
  pid_t tid;
  while ((tid = wait_kernel(&status, WNOHANG)) > 0) deferred_.push_back({tid, status});
}

std::optional<Stop> StopQueue::poll() {
  if (!deferred_.empty()) {
    Stop s = deferred_.front();
    deferred_.pop_front();
    return s;
  }
  int status = 0;
  pid_t tid = wait_kernel(&status, WNOHANG);
  if (tid > 0) return Stop{tid, status};
  if (tid == 0) errno = 0;
  return std::nullopt;
}

std::optional<Stop> StopQueue::wait_any(Sleeper& sleeper) {
  int status = 0;
  uint64_t start = monotonic_ns();
  if (spin_ns_ > 0 && last_wait_ns_ < spin_ns_) {
    uint64_t until = start + spin_ns_;
    uint64_t now = start;
    do {
      pid_t tid = wait_kernel(&status, WNOHANG);
      if (tid != 0) {
        last_wait_ns_ = monotonic_ns() - start;
        if (tid < 0) return std::nullopt;
        return Stop{tid, status};
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
    if (sleeper.wake_requested()) {
      errno = EINTR;
      tid = -1;
      break;
    }
    tid = wait_kernel(&status, WNOHANG);
    if (tid != 0) break;
    siginfo_t si{};
    int sig;
    uint64_t now = monotonic_ns();
    if (uint64_t due = sleeper.idle(now)) {
      uint64_t left_ns = due > now ? due - now : 0;
      timespec left{static_cast<time_t>(left_ns / 1000000000), static_cast<long>(left_ns % 1000000000)};
      sig = sigtimedwait(&wake, &si, &left);
    } else {
      sig = sigwaitinfo(&wake, &si);
    }
    if (sig <= 0 || sig == SIGCHLD) continue;
    bool from_user = si.si_code <= 0 && si.si_pid != 0;
    sleeper.on_signal(sig, from_user ? si.si_pid : 0);
  }
  int saved_errno = errno;
  sigprocmask(SIG_SETMASK, &old, nullptr);
  errno = saved_errno;
  last_wait_ns_ = monotonic_ns() - start;
  if (tid < 0) return std::nullopt;
  return Stop{tid, status};
}

Result<Stop> StopQueue::wait_thread(pid_t tid, bool interruptible) {
  for (;;) {
    int status = 0;
    pid_t w = wait_kernel(&status, 0, tid);
    if (w > 0) return Stop{w, status};
    if (errno == EINTR && !interruptible) continue;
    return Error::from_errno(errno, "waitpid");
  }
}

Result<std::optional<Stop>> StopQueue::poll_thread(pid_t tid) {
  for (;;) {
    int status = 0;
    pid_t w = wait_kernel(&status, WNOHANG, tid);
    if (w > 0) return std::optional<Stop>(Stop{w, status});
    if (w == 0) return std::optional<Stop>();
    if (errno == EINTR) continue;
    return Error::from_errno(errno, "waitpid for thread " + std::to_string(tid));
  }
}

int StopQueue::reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

std::optional<int> StopQueue::take_early(pid_t tid) {
  auto it = early_.find(tid);
  if (it == early_.end()) return std::nullopt;
  int status = it->second;
  early_.erase(it);
  return status;
}

}  // namespace ft
