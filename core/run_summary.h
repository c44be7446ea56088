// RunSummary: what functracer tells at the end of a run, on stderr unless -q (the
// way heaptrack ends with what it recorded and how to read it): for each traced
// process the events reported and, with -o, the records written, the trace file and
// its size; what could not be traced (functions untraced for any reason, events
// lost); and the functracer-postproc command that reads the traces.
//
// Trace writers outlive the reporter that opens them (a process's writer goes with
// the process), so they tell the summary about themselves when they close, through
// a shared_ptr to it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ft {

struct TracerStats;

class RunSummary {
 public:
  // A process reported under `exe` (again after an exec).
  void process(pid_t pid, const std::string& exe);
  // One event reported for process pid (calls, returns, lifecycle, system calls).
  void event(pid_t pid) {
    if (pid != last_pid_ || last_ == nullptr) {
      last_ = &entries_[pid];
      last_pid_ = pid;
    }
    ++last_->events;
  }
  void lost(uint64_t count) { lost_ += count; }
  // A trace file closed: its name at the end, records and bytes written.
  void trace_closed(pid_t pid, const std::string& path, uint64_t records, uint64_t bytes);

  // The lines to print (each without its newline). output_dir: -o, empty without;
  // first_plugin: the plugin that decides the report suggested; untraced: the functions
  // (or modules) that could not be traced, whatever the reason (untraced_so_far()).
  std::vector<std::string> lines(const TracerStats& stats, const std::string& output_dir,
                                 const std::string& first_plugin, const std::vector<std::string>& untraced) const;

  // How many processes are listed one by one; the rest are counted.
  static constexpr size_t kMaxListed = 20;
  // How many untraced functions are named; the rest are counted.
  static constexpr size_t kMaxNamed = 5;

 private:
  struct Entry {
    std::string exe;
    uint64_t events = 0;
    std::vector<std::string> files;  // a reused pid may have written several
    uint64_t records = 0, bytes = 0;
  };
  std::map<pid_t, Entry> entries_;  // std::map: last_ stays valid as entries are added
  Entry* last_ = nullptr;
  pid_t last_pid_ = 0;
  uint64_t lost_ = 0;
};

// "1.4 MiB", "512 B": sizes for people.
std::string human_size(uint64_t bytes);

}  // namespace ft
