// RunSummary: what functracer tells at the end of a run, on stderr unless -q (the
// way heaptrack ends with what it recorded and how to read it): for each traced
// process the events reported and, with -o, the records written, the trace file and
// its size; what could not be traced (functions untraced for any reason, events
// lost); and the functracer-postproc command that reads the traces.
//
// A trace a write error cut (a full disk) is told as it is on disk: the records the
// file holds, that it is cut and why, and how many records were not written; a file
// removed because nothing could be written is named as such, and when no trace file
// is left there is no command to read them. incomplete() makes the exit status 1.
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

// How a trace file ended, as its writer tells it when it closes.
struct TraceOutcome {
  std::string path;      // its name at the end
  uint64_t records = 0;  // records given to its writer
  uint64_t written = 0;  // of them, the records the file holds
  uint64_t bytes = 0;    // the file's size
  int error = 0;         // errno of the write that failed; 0: none did
  bool kept = true;      // false: no file is left (nothing could be written to it)
};

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
  void trace_closed(pid_t pid, const std::string& path, uint64_t records, uint64_t bytes) {
    trace_closed(pid, TraceOutcome{path, records, records, bytes});
  }
  void trace_closed(pid_t pid, const TraceOutcome& t);
  // Some trace could not be written whole (or at all).
  bool incomplete() const { return incomplete_; }

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
    std::vector<std::string> removed;  // files removed: nothing could be written
    std::vector<std::string> errors;   // of the failed writes, each once
    uint64_t records = 0, bytes = 0;   // in the files
    uint64_t dropped = 0;              // records not written
  };
  std::map<pid_t, Entry> entries_;  // std::map: last_ stays valid as entries are added
  Entry* last_ = nullptr;
  pid_t last_pid_ = 0;
  uint64_t lost_ = 0;
  bool incomplete_ = false;
};

// "1.4 MiB", "512 B": sizes for people.
std::string human_size(uint64_t bytes);

}  // namespace ft
