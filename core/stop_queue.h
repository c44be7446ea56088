// StopQueue: the one place functracer waits for its tracees (waitpid(2) with __WALL:
// every thread, clone children included).
//
// A stop is a (tid, status) pair from waitpid. Stops are not always handled where they
// are seen: waiting for one thread (an injected system call, a thread being stopped
// at attach) may see it exit or exec, which the main loop must handle; a new task's
// first stop can arrive before its parent's clone event. Those are queued here and the
// loop takes them first, in the order they were seen.
//
// Fairness: waitpid(-1) reports the most recently attached thread first (the kernel
// scans its list of tracees from the newest), so handling one stop and waiting again
// would serve busy new threads while older ones, stopped all the while, starve.
// collect_pending() takes every stop already there; all of them are handled before
// the next wait.
//
// Cost: when stops come in quick succession the next one is microseconds away, and
// sleeping in waitpid costs a wakeup of this CPU at every stop (on virtual machines
// often the largest part of a stop's cost), so the queue polls for a short while
// before it sleeps, as long as the last wait was short and the tracees have another
// CPU to run on.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <optional>

#include "common/result.h"

namespace ft {

struct Stop {
  pid_t tid = 0;
  int status = 0;
};

class StopQueue {
 public:
  // What the queue needs from its owner while it sleeps in next().
  class Sleeper {
   public:
    virtual ~Sleeper() = default;
    // Something asks the loop to run (a detach or toggle request): next() returns.
    virtual bool wake_requested() = 0;
    // functracer got `sig` from `sender` (0: from the kernel, a terminal's key).
    virtual void on_signal(int sig, pid_t sender) = 0;
    // Called at every wakeup; returns when it wants to be called again (CLOCK_MONOTONIC
    // ns; 0: not before a stop or a signal). Used to write aged trace buffers.
    virtual uint64_t idle(uint64_t now) = 0;
  };

  // Told of every stop the moment waitpid reports it, before it is queued or handled
  // (survival::take_in).
  class Watcher {
   public:
    virtual ~Watcher() = default;
    virtual void reaped(const Stop& s) = 0;
  };

  StopQueue();
  void set_watcher(Watcher* w) { watcher_ = w; }

  // Ptrace stops seen by waitpid so far (exits are not stops).
  uint64_t stops() const { return stops_; }

  // The next stop for the main loop: a queued one, else one from the kernel. nullopt
  // with errno set: EINTR (the sleeper asked to wake up), ECHILD (no tracee left), or
  // another waitpid error. A stop taken from the kernel while many_threads are traced
  // brings every other stop already there into the queue (collect_pending).
  std::optional<Stop> next(Sleeper& sleeper, bool many_threads);
  // Queues every stop the kernel has ready now (see the fairness note above).
  void collect_pending();
  // A stop of any tracee if one is queued or ready, without waiting. nullopt with
  // errno 0 when there is none.
  std::optional<Stop> poll();

  // Waits for thread tid alone; other threads' stops stay with the kernel. EINTR is
  // retried unless interruptible, in which case it is returned as an Error with code
  // EINTR.
  Result<Stop> wait_thread(pid_t tid, bool interruptible = false);
  // Thread tid's stop if it has one ready, without waiting.
  Result<std::optional<Stop>> poll_thread(pid_t tid);
  // Reaps a child that is not traced (or no longer): no stop is counted.
  int reap(pid_t pid);

  // A stop seen outside the main loop that the loop must handle.
  void defer(Stop s) { deferred_.push_back(s); }
  const std::deque<Stop>& deferred() const { return deferred_; }

  // A new task's stop that came before the event announcing it.
  void hold_early(Stop s) { early_[s.tid] = s.status; }
  std::optional<int> take_early(pid_t tid);

 private:
  pid_t wait_kernel(int* status, int flags, pid_t which = -1);
  std::optional<Stop> wait_any(Sleeper& sleeper);

  std::deque<Stop> deferred_;
  std::map<pid_t, int> early_;
  Watcher* watcher_ = nullptr;
  uint64_t stops_ = 0;
  static constexpr uint64_t kSpinNs = 100'000;
  uint64_t spin_ns_ = 0;
  uint64_t last_wait_ns_ = 0;
};

}  // namespace ft
