// The html report: one self-contained HTML page (no network: no external scripts,
// styles or fonts) about the heap of memtrace traces, for the eye:
//  - the summary: leaked bytes and blocks, the peak (the largest of the processes'),
//    allocations, processes;
//  - the leak table: the groups of the leaks report, largest first, each row with its
//    bytes, blocks, allocating function and first frame, and its whole resolved
//    backtrace in an expandable <details>;
//  - the heap over time: an inline SVG line chart of each process's live heap bytes
//    (heap_timeline.h), the peak marked with a dot;
//  - the interactive flame graph of flame_graph.h, inlined, with a choice of metric
//    (allocated, leaked, peak, temporary) and a search box.
// The group filters (--function, --suppressions) and block filters of the heap
// reports apply to all of it.
#pragma once

#include "common/result.h"
#include "postproc/report.h"

namespace ft::post {

Status report_html(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
