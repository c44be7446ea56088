#include "postproc/report_leaks.h"

#include <fmt/format.h>

#include "postproc/heap_counts.h"
#include "postproc/json_writer.h"

namespace ft::post {

Result<LeakReport> compute_leaks(const std::vector<std::string>& traces, const LeakOptions& options,
                                 Diagnostics& diag) {
  CountRank rank = [](const HeapCounts& c) { return std::pair(c.leaked_bytes, c.leaked_blocks); };
  if (options.sort == LeakSort::kBlocks) {
    rank = [](const HeapCounts& c) { return std::pair(c.leaked_blocks, c.leaked_bytes); };
  }
  auto ranked = rank_groups(traces, options.replay, options.resolve, options.filter, rank,
                            options.top, diag);
  if (!ranked) return ranked.error();
  GroupSelection<HeapCounts>& sel = ranked->selection;

  LeakReport report;
  report.processes = ranked->processes;
  report.at = options.replay.stop;
  report.leaked_bytes = sel.total.leaked_bytes;
  report.leaked_blocks = sel.total.leaked_blocks;
  report.groups_total = sel.groups_total;
  report.suppressed_bytes = sel.suppressed.leaked_bytes;
  report.suppressed_blocks = sel.suppressed.leaked_blocks;
  report.suppressed_groups = sel.suppressed_groups;
  for (SelectedGroup<HeapCounts>& g : sel.groups) {
    LeakGroup lg;
    lg.mangled = std::move(g.head.mangled);
    lg.function = std::move(g.head.function);
    lg.bytes = g.counts.leaked_bytes;
    lg.blocks = g.counts.leaked_blocks;
    lg.frames = std::move(g.frames);
    report.groups.push_back(std::move(lg));
  }
  return report;
}

std::string format_leaks_text(const LeakReport& report) {
  std::string text;
  auto out = std::back_inserter(text);
  fmt::format_to(out, "{} in {} {} ({}, {}", plural(report.leaked_bytes, "byte", "bytes"),
                 plural(report.leaked_blocks, "block", "blocks"),
                 report.at ? "live at " + format_when(*report.at) : std::string("leaked"),
                 plural(report.groups_total, "group", "groups"),
                 plural(report.processes, "process", "processes"));
  if (report.groups.size() < report.groups_total) {
    fmt::format_to(out, "; the first {} shown", report.groups.size());
  }
  text += ")\n";
  if (report.suppressed_groups > 0) {
    fmt::format_to(out, "suppressed: {} in {} ({})\n",
                   plural(report.suppressed_bytes, "byte", "bytes"),
                   plural(report.suppressed_blocks, "block", "blocks"),
                   plural(report.suppressed_groups, "group", "groups"));
  }
  for (const LeakGroup& g : report.groups) {
    fmt::format_to(out, "\n{} in {} allocated by {}\n", plural(g.bytes, "byte", "bytes"),
                   plural(g.blocks, "block", "blocks"), g.function.empty() ? "??" : g.function);
    append_frames_text(text, g.frames);
  }
  return text;
}

std::string format_leaks_json(const LeakReport& report) {
  std::string text;
  JsonWriter w(text, 2);
  w.begin_object();
  w.key("leaked_bytes").unsigned_integer(report.leaked_bytes);
  w.key("leaked_blocks").unsigned_integer(report.leaked_blocks);
  w.key("processes").unsigned_integer(report.processes);
  w.key("groups_total").unsigned_integer(report.groups_total);
  if (report.at) w.key("at").string(format_when(*report.at));
  w.key("suppressed_bytes").unsigned_integer(report.suppressed_bytes);
  w.key("suppressed_blocks").unsigned_integer(report.suppressed_blocks);
  w.key("groups").begin_array();
  for (const LeakGroup& g : report.groups) {
    w.begin_object();
    w.key("bytes").unsigned_integer(g.bytes);
    w.key("blocks").unsigned_integer(g.blocks);
    w.key("function").string(g.function);
    w.key("mangled").string(g.mangled);
    write_frames_json(w, g.frames);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  text += '\n';
  return text;
}

Status report_leaks(const ReportOptions& options, Output& out, Diagnostics& diag) {
  LeakOptions leak_options;
  if (options.sort == "blocks") leak_options.sort = LeakSort::kBlocks;
  if (options.top) leak_options.top = static_cast<size_t>(*options.top);
  leak_options.replay = heap_replay_options(options);
  auto filter = group_filter(options);
  if (!filter) return filter.error();
  leak_options.filter = std::move(*filter);
  leak_options.resolve = options.resolve;
  auto report = compute_leaks(options.traces, leak_options, diag);
  if (!report) return report.error();
  out.write(options.json ? format_leaks_json(*report) : format_leaks_text(*report));
  return {};
}

}  // namespace ft::post
