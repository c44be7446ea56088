#include "postproc/report_allocators.h"

#include <fmt/format.h>

#include "postproc/heap_counts.h"

namespace ft::post {

Status report_allocators(const ReportOptions& options, Output& out, Diagnostics& diag) {
  auto filter = group_filter(options);
  if (!filter) return filter.error();
  CountRank rank = [](const HeapCounts& c) { return std::pair(c.allocations, c.allocated_bytes); };
  if (options.sort == "bytes") {
    rank = [](const HeapCounts& c) { return std::pair(c.allocated_bytes, c.allocations); };
  }
  std::optional<size_t> top;
  if (options.top) top = static_cast<size_t>(*options.top);
  auto ranked = rank_groups(options.traces, heap_replay_options(options), options.resolve, *filter,
                            rank, top, diag);
  if (!ranked) return ranked.error();
  const GroupSelection<HeapCounts>& sel = ranked->selection;

  std::string text;
  if (options.json) {
    JsonWriter w(text, 2);
    w.begin_object();
    w.key("allocations").unsigned_integer(sel.total.allocations);
    w.key("allocated_bytes").unsigned_integer(sel.total.allocated_bytes);
    w.key("processes").unsigned_integer(ranked->processes);
    w.key("groups_total").unsigned_integer(sel.groups_total);
    w.key("groups").begin_array();
    for (const auto& g : sel.groups) {
      w.begin_object();
      w.key("allocations").unsigned_integer(g.counts.allocations);
      w.key("bytes").unsigned_integer(g.counts.allocated_bytes);
      w.key("leaked_blocks").unsigned_integer(g.counts.leaked_blocks);
      w.key("function").string(g.head.function);
      w.key("mangled").string(g.head.mangled);
      write_frames_json(w, g.frames);
      w.end_object();
    }
    w.end_array();
    w.end_object();
    text += '\n';
  } else {
    auto it = std::back_inserter(text);
    fmt::format_to(it, "{} of {} ({}, {}", plural(sel.total.allocations, "allocation", "allocations"),
                   plural(sel.total.allocated_bytes, "byte", "bytes"),
                   plural(sel.groups_total, "group", "groups"),
                   plural(ranked->processes, "process", "processes"));
    if (sel.groups.size() < sel.groups_total) {
      fmt::format_to(it, "; the first {} shown", sel.groups.size());
    }
    text += ")\n";
    for (const auto& g : sel.groups) {
      fmt::format_to(it, "\n{} of {} by {}", plural(g.counts.allocations, "allocation", "allocations"),
                     plural(g.counts.allocated_bytes, "byte", "bytes"),
                     g.head.function.empty() ? "??" : g.head.function);
      if (g.counts.leaked_blocks > 0) fmt::format_to(it, " ({} leaked)", g.counts.leaked_blocks);
      text += '\n';
      append_frames_text(text, g.frames);
    }
  }
  out.write(text);
  return {};
}

}  // namespace ft::post
