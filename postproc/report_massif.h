// The massif report: the heap of one process over time, in the massif.out format that
// valgrind --tool=massif writes, for ms_print and massif-visualizer.
//
// What the format holds (valgrind's massif manual; ms_print is its reference reader):
//   desc: ...                     free text
//   cmd: COMMAND LINE
//   time_unit: ms                 ours: milliseconds since the trace started
//   then snapshots, each:
//   #-----------
//   snapshot=N
//   #-----------
//   time=T
//   mem_heap_B=LIVE BYTES         bytes requested in live blocks
//   mem_heap_extra_B=0            allocator overhead: memtrace does not see it
//   mem_stacks_B=0
//   heap_tree=empty|detailed|peak
// A detailed (or peak) snapshot is followed by its allocation tree, one node a line,
// indented by depth: "nC: BYTES LABEL", C the number of child lines that follow. The
// root is "(heap allocation functions) malloc/new/new[], --alloc-fns, etc."; below it
// the innermost frames of the backtraces, then their callers, each labelled
// "0xADDR: FUNCTION (FILE:LINE)" (or "(in MODULE)" without line information, "???"
// for an unknown function). Children come largest first; those under 1% of the
// snapshot's heap are summed into one "n0: BYTES in N places, all below massif's
// threshold (1.00%)" line, as massif writes it.
//
// Snapshots (as massif's defaults: at most 100, every 10th detailed, the peak exact):
// the trace is read twice. The first pass finds the peak (PeakTracker, the peak
// report's logic) and the time of the last heap event. The second takes up to 99
// snapshots at evenly spaced times over that span (the heap after every event up to
// that time; a time with no heap event since the previous snapshot is skipped), and
// the peak snapshot right after the allocation that reached it, with heap_tree=peak.
//
// One process per file: the report takes exactly one trace (a directory holding one
// trace file). --tid N follows only the blocks allocated by thread N.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "postproc/report.h"

namespace ft::post {

// One backtrace of a heap tree: its frame labels, innermost first, and its live bytes.
struct MassifStack {
  std::vector<std::string> labels;
  uint64_t bytes = 0;
};

// Appends the allocation tree of a snapshot whose heap is `total` bytes (the sum of
// the stacks' bytes), threshold 1%, as described above.
void append_massif_tree(std::string& out, const std::vector<MassifStack>& stacks, uint64_t total);

Status report_massif(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
