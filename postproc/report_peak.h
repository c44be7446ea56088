// The peak report: for each process, the highest its live heap ever was (bytes
// requested in live blocks, as memtrace sees them; allocator overhead not included),
// the moment it was reached (time since the trace started, and the event: use either
// with `leaks --at` to see the same heap), and the backtraces of the blocks live at
// that moment, largest first.
//
// The live bytes of every site at the peak are kept without copying the live set at
// each new maximum: every site remembers the epoch (number of maxima so far) of its
// last change, and when a site changes after a later maximum its value before the
// change is its value at that maximum. One pass, O(1) per event.
//
// JSON: {"peak_bytes" (the largest of the processes), "processes": [{"pid", "trace",
// "peak_bytes", "peak_blocks", "time_ns", "seq", "at" ("#SEQ"), "groups_total",
// "groups": [{"bytes", "blocks", "function", "mangled", "frames": [...]}]}]}
#pragma once

#include "core/result.h"
#include "postproc/report.h"

namespace ft::post {

Status report_peak(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
