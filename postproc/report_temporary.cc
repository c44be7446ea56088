#include "postproc/report_temporary.h"

#include <fmt/format.h>

#include "postproc/heap_rank_report.h"

namespace ft::post {

namespace {

// "12.5%" of a part of a whole.
std::string percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "0%";
  return fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

const HeapRankReport kTemporary{
    [](const HeapCounts& c) { return std::pair(c.temporary, c.temporary_bytes); },
    [](const HeapCounts& c) { return std::pair(c.temporary_bytes, c.temporary); },
    [](JsonWriter& w, const RankedGroups& ranked) {
      w.key("temporary").unsigned_integer(ranked.selection.total.temporary);
      w.key("temporary_bytes").unsigned_integer(ranked.selection.total.temporary_bytes);
      w.key("allocations").unsigned_integer(ranked.all.allocations);
    },
    [](JsonWriter& w, const HeapCounts& c) {
      w.key("temporary").unsigned_integer(c.temporary);
      w.key("temporary_bytes").unsigned_integer(c.temporary_bytes);
      w.key("allocations").unsigned_integer(c.allocations);
    },
    [](const RankedGroups& ranked) {
      const HeapCounts& total = ranked.selection.total;
      uint64_t all = ranked.all.allocations;
      return fmt::format("{} of {} ({}) are temporary, {} (",
                         plural(total.temporary, "allocation", "allocations"), all,
                         percent(total.temporary, all), plural(total.temporary_bytes, "byte", "bytes"));
    },
    [](const SelectedGroup<HeapCounts>& g) {
      return fmt::format("{} temporary of {} ({}), {}, by {}", g.counts.temporary,
                         plural(g.counts.allocations, "allocation", "allocations"),
                         percent(g.counts.temporary, g.counts.allocations),
                         plural(g.counts.temporary_bytes, "byte", "bytes"), shown_function(g.head.function));
    },
};

}  // namespace

Status report_temporary(const ReportOptions& options, Output& out, Diagnostics& diag) {
  return write_heap_rank_report(kTemporary, options, out, diag);
}

}  // namespace ft::post
