#include "postproc/report_allocators.h"

#include <fmt/format.h>

#include "postproc/heap_rank_report.h"

namespace ft::post {

namespace {

const HeapRankReport kAllocators{
    [](const HeapCounts& c) { return std::pair(c.allocations, c.allocated_bytes); },
    [](const HeapCounts& c) { return std::pair(c.allocated_bytes, c.allocations); },
    [](JsonWriter& w, const RankedGroups& ranked) {
      w.key("allocations").unsigned_integer(ranked.selection.total.allocations);
      w.key("allocated_bytes").unsigned_integer(ranked.selection.total.allocated_bytes);
    },
    [](JsonWriter& w, const HeapCounts& c) {
      w.key("allocations").unsigned_integer(c.allocations);
      w.key("bytes").unsigned_integer(c.allocated_bytes);
      w.key("leaked_blocks").unsigned_integer(c.leaked_blocks);
    },
    [](const RankedGroups& ranked) {
      const HeapCounts& total = ranked.selection.total;
      return fmt::format("{} of {} (", plural(total.allocations, "allocation", "allocations"),
                         plural(total.allocated_bytes, "byte", "bytes"));
    },
    [](const SelectedGroup<HeapCounts>& g) {
      std::string line = fmt::format("{} of {} by {}", plural(g.counts.allocations, "allocation", "allocations"),
                                     plural(g.counts.allocated_bytes, "byte", "bytes"),
                                     shown_function(g.head.function));
      if (g.counts.leaked_blocks > 0) line += fmt::format(" ({} leaked)", g.counts.leaked_blocks);
      return line;
    },
};

}  // namespace

Status report_allocators(const ReportOptions& options, Output& out, Diagnostics& diag) {
  return write_heap_rank_report(kAllocators, options, out, diag);
}

}  // namespace ft::post
