#include "postproc/report_temporary.h"

#include <fmt/format.h>

#include "postproc/heap_counts.h"

namespace ft::post {

namespace {

// "12.5%" of a part of a whole.
std::string percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "0%";
  return fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

}  // namespace

Status report_temporary(const ReportOptions& options, Output& out, Diagnostics& diag) {
  auto ranked = rank_groups(
      options, [](const HeapCounts& c) { return std::pair(c.temporary, c.temporary_bytes); },
      [](const HeapCounts& c) { return std::pair(c.temporary_bytes, c.temporary); }, diag);
  if (!ranked) return ranked.error();
  const GroupSelection<HeapCounts>& sel = ranked->selection;
  uint64_t all = ranked->all.allocations;

  std::string text;
  if (options.json) {
    JsonWriter w(text, 2);
    w.begin_object();
    w.key("temporary").unsigned_integer(sel.total.temporary);
    w.key("temporary_bytes").unsigned_integer(sel.total.temporary_bytes);
    w.key("allocations").unsigned_integer(all);
    w.key("processes").unsigned_integer(ranked->processes);
    write_groups_json(w, sel, [](JsonWriter& g, const HeapCounts& c) {
      g.key("temporary").unsigned_integer(c.temporary);
      g.key("temporary_bytes").unsigned_integer(c.temporary_bytes);
      g.key("allocations").unsigned_integer(c.allocations);
    });
    w.end_object();
    text += '\n';
  } else {
    fmt::format_to(std::back_inserter(text), "{} of {} ({}) are temporary, {} (",
                   plural(sel.total.temporary, "allocation", "allocations"), all,
                   percent(sel.total.temporary, all),
                   plural(sel.total.temporary_bytes, "byte", "bytes"));
    append_group_totals(text, sel.groups_total, sel.groups.size(), ranked->processes);
    for (const auto& g : sel.groups) {
      append_group_text(text,
                        fmt::format("{} temporary of {} ({}), {}, by {}", g.counts.temporary,
                                    plural(g.counts.allocations, "allocation", "allocations"),
                                    percent(g.counts.temporary, g.counts.allocations),
                                    plural(g.counts.temporary_bytes, "byte", "bytes"),
                                    shown_function(g.head.function)),
                        g.frames);
    }
  }
  out.write(text);
  return {};
}

}  // namespace ft::post
