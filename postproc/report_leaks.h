// The leaks report: heap blocks still live at the end of each process (or at an --at
// moment), grouped by the backtrace that allocated them, resolved to function,
// file:line and module.
//
// The replay is HeapReplay's (heap_replay.h): blocks live at the end of a trace and at
// an `exec` are the leaks; with --at WHEN, the blocks live at that moment of each trace
// (blocks left behind by an earlier exec are not live then). Leaks are grouped by
// allocating entry point (`function`, e.g. malloc) and backtrace (site_groups.h),
// summed over every trace given and sorted by bytes (or by blocks), largest first.
// Block filters (--tid, --size, --from, --to) choose which allocations are followed;
// --function and --suppressions choose groups (group_filter.h). Suppressed leaks are
// counted apart.
//
// JSON (doc design §5): {"leaked_bytes", "leaked_blocks", "processes", "groups_total",
// ["at",] "suppressed_bytes", "suppressed_blocks", "groups": [{"bytes", "blocks",
// "function", "mangled", "frames": [{"address", "function", "file", "line", "module",
// "inlined"}]}]}. Unknown values are null. A frame whose code was inlined expands to
// several frames with the same address, innermost first, all but the last with
// "inlined": true.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "postproc/group_filter.h"
#include "postproc/heap_replay.h"
#include "postproc/report.h"
#include "postproc/report_frame.h"
#include "postproc/symbolizer.h"

namespace ft::post {

enum class LeakSort { kBytes, kBlocks };

struct LeakOptions {
  LeakSort sort = LeakSort::kBytes;
  std::optional<size_t> top;  // only the first N groups (totals still count all)
  HeapReplayOptions replay;   // block filters; replay.stop is --at
  GroupFilter filter;
  ResolveOptions resolve;
};

using LeakFrame = ReportFrame;

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
  std::optional<When> at;     // --at
  uint64_t suppressed_bytes = 0;
  uint64_t suppressed_blocks = 0;
  uint64_t suppressed_groups = 0;
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
