#include "core/process_table.h"

#include "common/check.h"

namespace ft {

Process& ProcessTable::add(std::unique_ptr<Process> p) {
  pid_t pid = p->pid();
  auto [it, inserted] = processes_.emplace(pid, std::move(p));
  FT_CHECK(inserted, "process %d added twice", pid);
  for (const auto& [tid, t] : it->second->threads()) index_[tid] = t.get();
  return *it->second;
}

Thread& ProcessTable::add_thread(Process& p, pid_t tid) {
  auto t = std::make_unique<Thread>();
  t->tid = tid;
  t->process = &p;
  Thread& ref = *t;
  p.threads_[tid] = std::move(t);
  if (processes_.count(p.pid())) index_[tid] = &ref;
  return ref;
}

void ProcessTable::remove_thread(Thread& t) {
  pid_t tid = t.tid;
  Process& p = *t.process;
  if (auto it = index_.find(tid); it != index_.end() && it->second == &t) index_.erase(it);
  p.threads_.erase(tid);
}

void ProcessTable::remove_threads_except(Process& p, const Thread& keep) {
  for (auto it = p.threads_.begin(); it != p.threads_.end();) {
    if (it->second.get() == &keep) {
      ++it;
      continue;
    }
    if (auto ix = index_.find(it->first); ix != index_.end() && ix->second == it->second.get()) index_.erase(ix);
    it = p.threads_.erase(it);
  }
}

void ProcessTable::remove(Process& p) {
  for (const auto& [tid, t] : p.threads_)
    if (auto ix = index_.find(tid); ix != index_.end() && ix->second == t.get()) index_.erase(ix);
  processes_.erase(p.pid());
}

Process* ProcessTable::find(pid_t pid) const {
  auto it = processes_.find(pid);
  return it == processes_.end() ? nullptr : it->second.get();
}

Thread* ProcessTable::thread(pid_t tid) const {
  auto it = index_.find(tid);
  return it == index_.end() ? nullptr : it->second;
}

}  // namespace ft
