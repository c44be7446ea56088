// The leaks report: heap blocks still live at the end of each process, grouped by the
// backtrace that allocated them, resolved to function, file:line and module.
//
// Each trace is replayed on its own (one process; doc/trace-format.md §3.5): an
// `alloc` makes its block live, a `free` of a live block ends it; a `free` of an
// address that is not live is ignored (a block from before an attach, or inherited
// from the parent of a fork), and `alloc_failed`, `bad_free`, `map` and `unmap` are
// not heap blocks. An `alloc` at an address that is already live replaces that block
// (its release was not recorded). Blocks live at the end of the trace (its end record
// or, for a trace cut short, the cut) are the leaks; so are the blocks live at an
// `exec`, whose heap the new image does not inherit.
//
// Leaks are grouped by allocating entry point (`function`, e.g. malloc) and backtrace
// (`frames`; blocks recorded without frames group by function alone). Frames are
// compared by the code they point at (module file and offset in it, see
// Symbolizer::CodeKey), so the same call stack in several processes is one group even
// when ASLR mapped their modules at different addresses. Groups are summed over every
// trace given and sorted by bytes (or by blocks), largest first; ties by blocks (or
// bytes), then by frame addresses, then by function.
//
// JSON (doc design §5): {"leaked_bytes", "leaked_blocks", "processes", "groups_total",
// "groups": [{"bytes", "blocks", "function", "mangled", "frames": [{"address",
// "function", "file", "line", "module", "inlined"}]}]}. Unknown values are null. A
// frame whose code was inlined expands to several frames with the same address,
// innermost first, all but the last with "inlined": true.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "postproc/report.h"

namespace ft::post {

enum class LeakSort { kBytes, kBlocks };

struct LeakOptions {
  LeakSort sort = LeakSort::kBytes;
  std::optional<size_t> top;  // only the first N groups (totals still count all)
};

struct LeakFrame {
  uint64_t address = 0;  // as recorded (for a group seen in several processes: the first)
  std::optional<std::string> function;  // demangled
  std::optional<std::string> file;
  std::optional<int64_t> line;
  std::optional<std::string> module;
  bool inlined = false;
};

struct LeakGroup {
  std::string mangled;   // allocator entry point as recorded ("malloc", "_Znwm")
  std::string function;  // demangled
  uint64_t bytes = 0;
  uint64_t blocks = 0;
  std::vector<LeakFrame> frames;  // innermost first, inlined frames expanded
};

struct LeakReport {
  uint64_t leaked_bytes = 0;
  uint64_t leaked_blocks = 0;
  uint64_t processes = 0;     // trace files read
  uint64_t groups_total = 0;  // groups before LeakOptions::top
  std::vector<LeakGroup> groups;
};

Result<LeakReport> compute_leaks(const std::vector<std::string>& traces, const LeakOptions& options,
                                 Diagnostics& diag);

// Text: a totals line, then per group "B bytes in K blocks allocated by FUNCTION" and
// its frames "  #i 0xADDR function (file:line) [module]".
std::string format_leaks_text(const LeakReport& report);
std::string format_leaks_json(const LeakReport& report);

Status report_leaks(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
