// HeapStacks: the heap of memtrace traces as resolved backtraces with values, the
// data of the views that draw it as stacks (flamegraph, html, speedscope).
//
// One replay counts every site (heap_counts.h) and follows each process's peak
// (heap_peak.h); the sites are grouped and filtered as the group reports do it
// (select_groups: --function, --suppressions), so that a stack's values add up to the
// totals of the leaks, allocators, temporary and peak reports. A group is one stack
// holding its counts; the blocks live at a process's peak are a stack of their own
// per process and group (only `peak` and `peak_blocks` set), because the peak is a
// moment of one process: summed over the processes, as the flame graph's `peak`.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "postproc/report.h"
#include "postproc/report_frame.h"
#include "postproc/report_flamegraph.h"

namespace ft::post {

struct HeapValues {
  uint64_t allocated = 0, allocations = 0;
  uint64_t leaked = 0, leaked_blocks = 0;
  uint64_t temporary = 0, temporary_count = 0;
  uint64_t peak = 0, peak_blocks = 0;

  // The value of a heap metric (FlameMetric::kAllocated ... kTemporary).
  uint64_t of(FlameMetric metric) const;
};

struct HeapStack {
  std::vector<ReportFrame> frames;  // innermost first, resolved as in the leaks report
  std::string function;             // the allocating function, demangled; "??" if unknown
  HeapValues values;
  int64_t pid = 0;  // the process of a peak stack; 0 for the others
};

struct HeapStacks {
  std::vector<HeapStack> stacks;
  uint64_t processes = 0;
};

Result<HeapStacks> collect_heap_stacks(const ReportOptions& options, Diagnostics& diag);

// The name of a frame in a stack: its function, or "MODULE+0xOFFSET" (the module's
// file name and link-time address), or the address.
std::string frame_name(const ReportFrame& frame);

}  // namespace ft::post
