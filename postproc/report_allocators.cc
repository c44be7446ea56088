#include "postproc/report_allocators.h"

#include <fmt/format.h>

#include "postproc/heap_counts.h"
#include "postproc/heap_session.h"

namespace ft::post {

Status report_allocators(const ReportOptions& options, Output& out, Diagnostics& diag) {
  auto filter = group_filter(options);
  if (!filter) return filter.error();
  HeapSession session(diag, options.resolve);
  SiteCounter counter;
  auto processes = session.replay(options.traces, counter, heap_replay_options(options));
  if (!processes) return processes.error();

  std::vector<std::pair<SiteId, HeapCounts>> allocating;
  for (const auto& [site, c] : counter.per_site()) {
    if (c.allocations > 0) allocating.emplace_back(site, c);
  }
  bool by_bytes = options.sort == "bytes";
  auto greater = [by_bytes](const HeapCounts& a, const HeapCounts& b) {
    auto key = [by_bytes](const HeapCounts& c) {
      return by_bytes ? std::pair(c.allocated_bytes, c.allocations)
                      : std::pair(c.allocations, c.allocated_bytes);
    };
    return key(a) > key(b);
  };
  std::optional<size_t> top;
  if (options.top) top = static_cast<size_t>(*options.top);
  auto sel = select_groups(session.grouper(), allocating, *filter, greater, top);

  std::string text;
  if (options.json) {
    JsonWriter w(text, 2);
    w.begin_object();
    w.key("allocations").unsigned_integer(sel.total.allocations);
    w.key("allocated_bytes").unsigned_integer(sel.total.allocated_bytes);
    w.key("processes").unsigned_integer(*processes);
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
                   plural(*processes, "process", "processes"));
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
