// Options: the functracer command line (design contract, doc/functracer.1).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/result.h"

namespace ft {

// Frames per backtrace when -b is not given (what memtrace and fileops take).
constexpr int kDefaultBacktraceDepth = 10;

struct Options {
  std::vector<std::string> plugins;  // -e, in order; default calltrace
  std::string audit;                 // -a
  std::vector<std::string> prototype_files;  // -F, in order
  std::string output_dir;            // -o; empty: stream to stderr
  int backtrace_depth = -1;          // -b; -1: the plugin's default
  bool backtrace_all = false;        // -A
  std::string monitor;               // -M
  bool follow_forks = false;         // -f
  bool start_disabled = false;       // --disabled
  bool uncompressed = false;         // --uncompressed: plain .trace files, not .trace.zst
  bool log = false;                  // --log: plugins print every event on stderr, not a summary
  bool quiet = false, debug = false, stats = false;
  std::vector<pid_t> attach;         // -p
  std::vector<std::string> command;  // PROGRAM ARGS...

  enum class Action { Run, Help, Version } action = Action::Run;
};

// Usage errors carry code 2.
Result<Options> parse_options(int argc, char** argv);
std::string usage_text();

}  // namespace ft
