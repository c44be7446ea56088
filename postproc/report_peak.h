// The peak report: for each process, the highest its live heap ever was (bytes
// requested in live blocks, as memtrace sees them; allocator overhead not included),
// the moment it was reached (time since the trace started, and the event: use either
// with `leaks --at` to see the same heap), and the backtraces of the blocks live at
// that moment, largest first.
// The peak and what was live at it come from a PeakTracker (peak_tracker.h), in one
// pass, O(1) per event.
//
// JSON: {"peak_bytes" (the largest of the processes), "processes": [{"pid", "trace",
// "peak_bytes", "peak_blocks", "time_ns", "seq", "at" ("#SEQ"), "groups_total",
// "groups": [{"bytes", "blocks", "function", "mangled", "frames": [...]}]}]}
#pragma once

#include "common/result.h"
#include "postproc/report.h"

namespace ft::post {

Status report_peak(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
