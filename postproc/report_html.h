// The html report: one self-contained HTML page (no network: no external scripts,
// styles or fonts) about the heap of memtrace traces, with the views heaptrack_gui
// users work in, one tab each (the URL's fragment names it: "heap.html#top-down"):
//  - summary: leaked bytes and blocks, the peak (the largest of the processes'),
//    allocations and bytes, temporary allocations, processes;
//  - leaks, peak, temporary, allocations: the largest backtrace groups of each (the
//    leak table is the leaks report's groups; the others come from heap_stacks.h),
//    each titled by its first frame of the program's own code (display_name.h) and
//    the allocating function, the whole resolved backtrace in a <details>;
//  - sizes: the histogram report's power-of-two buckets, with bars;
//  - heap over time: an inline SVG line chart of each process's live heap
//    (heap_timeline.h) with labelled axes and ticks, the peak marked;
//  - bottom-up and top-down trees and the caller/callee table of heap_call_views.h,
//    with five metrics (allocations, allocated, temporary, peak, leaked);
//  - the interactive flame graph of flame_graph.h, inlined, as wide as the window,
//    with a choice of metric (allocated, leaked, peak, temporary) and a search box.
// Numbers are shown in readable units (KiB, MiB) with the exact value in the cell's
// data-value and title; long C++ names are shortened with the full name in the title
// attribute. Every number cell carries data-value so that readers and tests can use
// the page as data. The group filters (--function, --suppressions) and block filters
// of the heap reports apply to all of it, --top to the leak table.
#pragma once

#include "common/result.h"
#include "postproc/report.h"

namespace ft::post {

Status report_html(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
