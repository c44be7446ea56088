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
  auto filter = group_filter(options);
  if (!filter) return filter.error();
  CountRank rank = [](const HeapCounts& c) { return std::pair(c.temporary, c.temporary_bytes); };
  if (options.sort == "bytes") {
    rank = [](const HeapCounts& c) { return std::pair(c.temporary_bytes, c.temporary); };
  }
  std::optional<size_t> top;
  if (options.top) top = static_cast<size_t>(*options.top);
  auto ranked = rank_groups(options.traces, heap_replay_options(options), options.resolve, *filter,
                            rank, top, diag);
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
    w.key("groups_total").unsigned_integer(sel.groups_total);
    w.key("groups").begin_array();
    for (const auto& g : sel.groups) {
      w.begin_object();
      w.key("temporary").unsigned_integer(g.counts.temporary);
      w.key("temporary_bytes").unsigned_integer(g.counts.temporary_bytes);
      w.key("allocations").unsigned_integer(g.counts.allocations);
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
    fmt::format_to(it, "{} of {} ({}) are temporary, {} ({}, {}",
                   plural(sel.total.temporary, "allocation", "allocations"), all,
                   percent(sel.total.temporary, all),
                   plural(sel.total.temporary_bytes, "byte", "bytes"),
                   plural(sel.groups_total, "group", "groups"),
                   plural(ranked->processes, "process", "processes"));
    if (sel.groups.size() < sel.groups_total) {
      fmt::format_to(it, "; the first {} shown", sel.groups.size());
    }
    text += ")\n";
    for (const auto& g : sel.groups) {
      fmt::format_to(it, "\n{} temporary of {} ({}), {}, by {}\n", g.counts.temporary,
                     plural(g.counts.allocations, "allocation", "allocations"),
                     percent(g.counts.temporary, g.counts.allocations),
                     plural(g.counts.temporary_bytes, "byte", "bytes"),
                     g.head.function.empty() ? "??" : g.head.function);
      append_frames_text(text, g.frames);
    }
  }
  out.write(text);
  return {};
}

}  // namespace ft::post
