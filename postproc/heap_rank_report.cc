#include "postproc/heap_rank_report.h"

namespace ft::post {

Status write_heap_rank_report(const HeapRankReport& report, const ReportOptions& options, Output& out,
                              Diagnostics& diag) {
  auto filter = group_filter(options);
  if (!filter) return filter.error();
  std::optional<size_t> top;
  if (options.top) top = static_cast<size_t>(*options.top);
  auto ranked = rank_groups(options.traces, heap_replay_options(options), options.resolve, *filter,
                            options.sort == "bytes" ? report.by_bytes : report.by_count, top, diag);
  if (!ranked) return ranked.error();
  const GroupSelection<HeapCounts>& sel = ranked->selection;

  std::string text;
  if (options.json) {
    JsonWriter w(text, 2);
    w.begin_object();
    report.totals_json(w, *ranked);
    w.key("processes").unsigned_integer(ranked->processes);
    write_groups_json(w, sel, report.counts_json);
    w.end_object();
    text += '\n';
  } else {
    text = report.summary(*ranked);
    append_group_totals(text, sel.groups_total, sel.groups.size(), ranked->processes);
    for (const auto& g : sel.groups) append_group_text(text, report.headline(g), g.frames);
  }
  out.write(text);
  return {};
}

}  // namespace ft::post
