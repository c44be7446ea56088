// The diff report: leaks and allocations of two runs side by side, per backtrace, for
// "did my change fix the leak / cut the allocations?". functracer-postproc diff OLD NEW,
// each a trace file or a directory of them (functracer -o DIR).
//
// The two runs are usually different builds, so addresses do not match: backtraces are
// matched on what their frames resolve to, frame by frame: function, file and line
// when the debug info says; the function alone when there is no line (a rebuilt
// executable may be named differently); module file name and offset in the module
// when there is no symbol either (module-relative, so ASLR does not matter). The allocating entry point (malloc, operator new) is part of
// the key. Groups whose counts are equal in both runs are left out; the rest are sorted
// by the size of the change in leaked bytes (--sort bytes, the default), leaked blocks
// (--sort blocks) or allocations (--sort count), largest change first.
//
// JSON: {"old": TOTALS, "new": TOTALS, "groups_total", "groups": [{"function",
// "mangled", "old": COUNTS, "new": COUNTS, "delta": COUNTS, "frames": [...]}]} where
// COUNTS = {"leaked_bytes", "leaked_blocks", "allocations", "allocated_bytes"}
// (signed in "delta") and TOTALS adds "processes". Frames are the newer run's when it
// has the group.
#pragma once

#include "common/result.h"
#include "postproc/report.h"

namespace ft::post {

Status report_diff(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
