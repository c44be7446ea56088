// Options: the functracer command line (design contract, doc/functracer.1).
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
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
  // --returns: how returns are caught. Stack: the return address is replaced by a hook
  // (Go code still takes ReturnSites, its runtime walks its stacks); ReturnSites: a
  // breakpoint on each of the function's exits, the stack never written.
  enum class Returns { Stack, ReturnSites } returns = Returns::Stack;
  // The calltrace plugin's call log (ltrace, strace and uftrace options).
  bool summary = false;              // -c: a table of calls, time and errors at exit
  bool durations = false;            // -T: time spent in each call
  int timestamps = 0;                // -t, -tt, -ttt
  int string_size = -1;              // -s N; -1: the plugin's default
  bool demangle = true;              // -C (the default) / --no-demangle
  std::string library;               // -l LIB, repeatable, comma-separated
  std::string exe_audit;             // -x PATTERNS: the executable's own functions
  int depth_limit = -1;              // -D N; -1: no limit
  int struct_depth = -1;             // --struct-depth=N; -1: not given (0)
  uint64_t time_filter_ns = 0;       // --time-filter DUR
  bool from_program = false;         // --from-program: only calls made from the executable
  std::vector<pid_t> attach;         // -p
  std::vector<std::string> command;  // PROGRAM ARGS...

  enum class Action { Run, Help, Version } action = Action::Run;
};

// Usage errors carry code 2.
Result<Options> parse_options(int argc, char** argv);
// "250us", "1.5ms", "2s", "100ns" as nanoseconds; a unit is required.
bool parse_duration(std::string_view text, uint64_t* ns);
std::string usage_text();

}  // namespace ft
