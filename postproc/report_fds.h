// The fds report: file descriptors and FILE * streams left open, from the records of
// the fileops plugin (doc/trace-format.md §3.6), grouped by the call that opened them
// and its backtrace. A descriptor that is never closed is a leak that no heap checker
// sees, and one that piles up ends in EMFILE; the backtrace says which code forgot.
//
// Each trace is one process, replayed on its own:
//  - `fd_open` makes fd N open. An fd_open of an fd that is already open replaces it
//    (its close was not seen), so the old one is not a leak.
//  - `fd_close` closes fd N if it is open; closes of fds not seen open are ignored
//    (inherited 0, 1, 2; opened before an attach; inherited by a forked child). This
//    covers `close`, `close_range`, the target of `dup2`/`dup3`, the fd an `fdopen`
//    stream took over when it is `fclose`d, and the close-on-exec fds, which the
//    plugin closes with function "exec" right after the `exec` record.
//  - `file_open` / `file_close` do the same for streams, keyed by the stream address.
//    A stream remembers the fd it was opened on; when that number is closed or opened
//    again underneath it, the stream's fd becomes unknown.
//  - At an `exec` record every open stream is a leak: the FILE lived in the memory of
//    the old image and was never closed (its buffered output is lost with it). Its fd,
//    if it was not close-on-exec, stays open in the new image.
//  - Whatever is open at the end of the trace (its end record, or the cut of a
//    truncated one) is a leak.
// --tid N keeps the fds and streams opened by thread N (closes by any thread count).
//
// Leaks are grouped by (opening function, backtrace) (site_groups.h), summed over the
// traces given, and sorted by count, largest first; --top, --function and
// --suppressions select groups as in the leaks report. A group lists its fds (and,
// for streams, the stream addresses) with the path the record gives, the first
// kMaxListed of them.
//
// JSON: {"open_fds", "open_streams", "processes", "groups_total", "groups": [{"kind":
// "fd" | "stream", "count", "function", "mangled", "open": [{"fd", "path", ["stream"]}],
// "frames": [...]}]} (frames as in the leaks report). "fd" is null for a stream whose
// fd is unknown, "path" null when the record has none, "stream" (streams only) a hex
// string. "open" holds at most kMaxListed entries; "count" is the number in the group.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "postproc/group_filter.h"
#include "postproc/report.h"
#include "postproc/report_frame.h"
#include "postproc/symbolizer.h"
#include "postproc/trace_reader.h"

namespace ft::post {

struct FdOptions {
  std::optional<int64_t> tid;  // only what this thread opened
  std::optional<size_t> top;   // only the first N groups (totals still count all)
  GroupFilter filter;
  ResolveOptions resolve;
};

enum class FdKind { kFd, kStream };

// One descriptor or stream left open.
struct OpenEntry {
  int64_t fd = -1;                  // -1: unknown (streams only)
  std::optional<std::string> path;  // as recorded
  uint64_t stream = 0;              // streams only
};

struct FdGroup {
  FdKind kind = FdKind::kFd;
  std::string mangled;   // the opening function as recorded ("open", "fopen")
  std::string function;  // demangled
  uint64_t count = 0;
  std::vector<OpenEntry> open;  // the first kMaxListed, in the order they were left open
  std::vector<ReportFrame> frames;
};

struct FdReport {
  static constexpr size_t kMaxListed = 10;

  uint64_t open_fds = 0;
  uint64_t open_streams = 0;
  uint64_t processes = 0;     // trace files read
  uint64_t groups_total = 0;  // groups before FdOptions::top
  uint64_t groups_shown = 0;  // after it (a group of both kinds has two entries in `groups`)
  uint64_t suppressed_fds = 0;
  uint64_t suppressed_streams = 0;
  uint64_t suppressed_groups = 0;
  std::vector<FdGroup> groups;
};

Result<FdReport> compute_fds(const std::vector<std::string>& traces, const FdOptions& options,
                             Diagnostics& diag);

// Text: a totals line, then per group "2 fds opened by open: 5 /tmp/a.txt, 7" (streams:
// "1 stream opened by fopen: 0x4052a0 (fd 3) /tmp/b.txt") and its frames.
std::string format_fds_text(const FdReport& report);
std::string format_fds_json(const FdReport& report);

Status report_fds(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
