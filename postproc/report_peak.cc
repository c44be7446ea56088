#include "postproc/report_peak.h"

#include <fmt/format.h>

#include "postproc/heap_peak.h"
#include "postproc/heap_session.h"

namespace ft::post {

Status report_peak(const ReportOptions& options, Output& out, Diagnostics& diag) {
  auto filter = group_filter(options);
  if (!filter) return filter.error();
  HeapSession session(diag, options.resolve);
  PeakObserver observer;
  auto processes = session.replay(options.traces, observer, heap_replay_options(options));
  if (!processes) return processes.error();

  auto greater = [](const LiveCount& a, const LiveCount& b) {
    return std::pair(a.bytes, a.blocks) > std::pair(b.bytes, b.blocks);
  };
  std::optional<size_t> top;
  if (options.top) top = static_cast<size_t>(*options.top);

  std::string text;
  JsonWriter w(text, 2);
  auto it = std::back_inserter(text);
  if (options.json) {
    uint64_t largest = 0;
    for (const ProcessPeak& p : observer.peaks) largest = std::max(largest, p.peak.bytes);
    w.begin_object();
    w.key("peak_bytes").unsigned_integer(largest);
    w.key("processes").begin_array();
  }
  for (const ProcessPeak& p : observer.peaks) {
    auto sel = select_groups(session.grouper(), p.per_site, *filter, greater, top);
    if (options.json) {
      w.begin_object();
      w.key("pid").integer(p.pid);
      w.key("trace").string(p.trace);
      w.key("peak_bytes").unsigned_integer(p.peak.bytes);
      w.key("peak_blocks").unsigned_integer(p.peak.blocks);
      w.key("time_ns").unsigned_integer(p.time_ns);
      w.key("seq").unsigned_integer(p.seq);
      w.key("at").string(fmt::format("#{}", p.seq));
      write_groups_json(w, sel, [](JsonWriter& g, const LiveCount& c) {
        g.key("bytes").unsigned_integer(c.bytes);
        g.key("blocks").unsigned_integer(c.blocks);
      });
      w.end_object();
      continue;
    }
    if (&p != &observer.peaks.front()) text += '\n';
    if (p.peak.blocks == 0) {
      fmt::format_to(it, "process {} ({}): no heap blocks\n", p.pid, p.trace);
      continue;
    }
    fmt::format_to(it, "process {} ({}): peak heap {} in {} at {} (event #{}; {} groups",
                   p.pid, p.trace, plural(p.peak.bytes, "byte", "bytes"),
                   plural(p.peak.blocks, "block", "blocks"), format_duration(p.time_ns), p.seq,
                   sel.groups_total);
    if (sel.groups.size() < sel.groups_total) {
      fmt::format_to(it, "; the first {} shown", sel.groups.size());
    }
    text += ")\n";
    for (const auto& g : sel.groups) {
      append_group_text(text,
                        fmt::format("{} in {} allocated by {}", plural(g.counts.bytes, "byte", "bytes"),
                                    plural(g.counts.blocks, "block", "blocks"), shown_function(g.head.function)),
                        g.frames);
    }
  }
  if (options.json) {
    w.end_array();
    w.end_object();
    text += '\n';
  }
  out.write(text);
  return {};
}

}  // namespace ft::post
