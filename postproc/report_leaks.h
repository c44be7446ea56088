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
// Leak kinds: memtrace scans the process's memory at its end or before a detach and
// records the blocks it found lost (`leak_scan` and `leak` records, functracer/
// leak_scan.h has memcheck's definitions). A block live at the end of a trace with such
// a scan gets its kind: definitely, indirectly or possibly lost, or still reachable
// (every block the scan did not list). Groups are then split by kind too, as
// memcheck's loss records are. The text lists the lost kinds first and sums the still
// reachable blocks at the end; --kinds=definite,indirect,possible,reachable chooses
// the kinds listed (memcheck's --show-leak-kinds). Blocks without a kind (a trace
// taken without the scan, blocks left at an exec, --at) are listed as before. When no
// trace has a scan, the report is what it was before kinds existed.
//
// JSON (doc design §5): {"leaked_bytes", "leaked_blocks", "processes", "groups_total",
// ["at",] "suppressed_bytes", "suppressed_blocks", ["kinds": {"definitely_lost":
// {"bytes", "blocks"}, "indirectly_lost", "possibly_lost", "still_reachable"},]
// "groups": [{"bytes", "blocks", ["kind",] "function", "mangled", "frames":
// [{"address", "function", "file", "line", "module", "inlined"}]}]}. leaked_bytes and
// leaked_blocks stay the blocks in use (every kind). "kind" is "definite",
// "indirect", "possible", "reachable", or null for a block without one. Unknown
// values are null. A frame whose code was inlined expands to several frames with the
// same address, innermost first, all but the last with "inlined": true.
//
// A trace that says a function could not be traced (an `untraced` record: another
// tool's breakpoint on it, an instruction that cannot be relocated) gets a warning
// that the totals are incomplete.
//
// A trace cut short (no exit, detach or killed record: a full disk, a killed
// functracer) holds nothing of what its process freed after the cut, so its blocks
// live at the cut are not known to be leaks: the text says "live at the end" instead
// of "leaked" and, on a line of its own, that the report is incomplete; the JSON has
// "cut_short": the number of such traces (only when there is one).
//
// --error-exitcode=N: the report exits N when lost blocks (definitely, indirectly or
// possibly lost, or without a kind) remain that are not suppressed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "functracer/leak_scan.h"
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
  // --kinds: bit (1 << LeakKind) per kind listed; unset: every kind in JSON, the lost
  // ones (and reachable summed) in text.
  std::optional<uint32_t> kinds;
};

// The kinds in memcheck's order of reporting; kNoKind: a block no scan classified.
using heap::LeakKind;
inline constexpr size_t kNoKind = 4;
inline constexpr size_t kKindSlots = 5;

struct KindTotals {
  uint64_t bytes = 0;
  uint64_t blocks = 0;
  uint64_t groups = 0;
};

// "definite,possible" -> bits (1 << LeakKind); the error names the unknown word.
Result<uint32_t> parse_leak_kinds(const std::string& list);

using LeakFrame = ReportFrame;

struct LeakGroup {
  std::string mangled;   // allocator entry point as recorded ("malloc", "_Znwm")
  std::string function;  // demangled
  uint64_t bytes = 0;
  uint64_t blocks = 0;
  size_t kind = kNoKind;          // a LeakKind, or kNoKind
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
  bool scanned = false;             // some trace had a leak scan
  KindTotals kinds[kKindSlots];     // in use, per kind (not suppressed)
  std::optional<uint32_t> listed;   // --kinds
  uint64_t cut_short = 0;           // traces read to their end that have no end record
  std::vector<LeakGroup> groups;
  // Blocks lost (any lost kind, or no kind) and not suppressed.
  uint64_t lost_blocks() const;
};

Result<LeakReport> compute_leaks(const std::vector<std::string>& traces, const LeakOptions& options,
                                 Diagnostics& diag);

// Text: a totals line, then per group "B bytes in K blocks allocated by FUNCTION" and
// its frames "  #i 0xADDR function (file:line) [module]".
std::string format_leaks_text(const LeakReport& report);
std::string format_leaks_json(const LeakReport& report);

Status report_leaks(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
