// ProcessTable: every process functracer traces, and the index from a thread id to its
// Thread that each stop is looked up in.
//
// A Process owns its threads; the table owns the processes. Threads are added and
// removed only here, so the index can never hold a thread its process has let go of
// (waitpid reports a tid, and a stale pointer would be a use-after-free): removing a
// process removes its threads from the index, removing a thread removes it from both.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <unordered_map>

#include "core/process.h"

namespace ft {

class ProcessTable {
 public:
  using Map = std::map<pid_t, std::unique_ptr<Process>>;

  // Takes p; a process with the same pid must not be there.
  Process& add(std::unique_ptr<Process> p);
  Thread& add_thread(Process& p, pid_t tid);
  // The thread leaves its process and the index.
  void remove_thread(Thread& t);
  // Every thread of p but `keep` (exec: the other threads are gone).
  void remove_threads_except(Process& p, const Thread& keep);
  // The process, its threads with it.
  void remove(Process& p);

  Process* find(pid_t pid) const;
  Thread* thread(pid_t tid) const;
  bool contains(pid_t pid) const { return processes_.count(pid) != 0; }

  bool empty() const { return processes_.empty(); }
  size_t thread_count() const { return index_.size(); }
  Map::const_iterator begin() const { return processes_.begin(); }
  Map::const_iterator end() const { return processes_.end(); }

 private:
  Map processes_;
  std::unordered_map<pid_t, Thread*> index_;
};

}  // namespace ft
