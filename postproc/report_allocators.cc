#include "postproc/report_allocators.h"

#include <fmt/format.h>

#include "postproc/heap_counts.h"

namespace ft::post {

Status report_allocators(const ReportOptions& options, Output& out, Diagnostics& diag) {
  auto ranked = rank_groups(
      options, [](const HeapCounts& c) { return std::pair(c.allocations, c.allocated_bytes); },
      [](const HeapCounts& c) { return std::pair(c.allocated_bytes, c.allocations); }, diag);
  if (!ranked) return ranked.error();
  const GroupSelection<HeapCounts>& sel = ranked->selection;

  std::string text;
  if (options.json) {
    JsonWriter w(text, 2);
    w.begin_object();
    w.key("allocations").unsigned_integer(sel.total.allocations);
    w.key("allocated_bytes").unsigned_integer(sel.total.allocated_bytes);
    w.key("processes").unsigned_integer(ranked->processes);
    write_groups_json(w, sel, [](JsonWriter& g, const HeapCounts& c) {
      g.key("allocations").unsigned_integer(c.allocations);
      g.key("bytes").unsigned_integer(c.allocated_bytes);
      g.key("leaked_blocks").unsigned_integer(c.leaked_blocks);
    });
    w.end_object();
    text += '\n';
  } else {
    fmt::format_to(std::back_inserter(text), "{} of {} (",
                   plural(sel.total.allocations, "allocation", "allocations"),
                   plural(sel.total.allocated_bytes, "byte", "bytes"));
    append_group_totals(text, sel.groups_total, sel.groups.size(), ranked->processes);
    for (const auto& g : sel.groups) {
      std::string headline = fmt::format("{} of {} by {}", plural(g.counts.allocations, "allocation", "allocations"),
                                         plural(g.counts.allocated_bytes, "byte", "bytes"),
                                         shown_function(g.head.function));
      if (g.counts.leaked_blocks > 0) headline += fmt::format(" ({} leaked)", g.counts.leaked_blocks);
      append_group_text(text, headline, g.frames);
    }
  }
  out.write(text);
  return {};
}

}  // namespace ft::post
