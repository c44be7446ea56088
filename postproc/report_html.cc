#include "postproc/report_html.h"

#include <algorithm>

#include <fmt/format.h>

#include "postproc/flame_graph.h"
#include "postproc/heap_session.h"
#include "postproc/heap_timeline.h"
#include "postproc/markup.h"
#include "postproc/report_flamegraph.h"
#include "postproc/report_leaks.h"

namespace ft::post {

namespace {

constexpr std::string_view kStyle = R"(
body { font-family: sans-serif; margin: 1em 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.5em; }
table { border-collapse: collapse; }
td, th { padding: 2px 8px; text-align: left; vertical-align: top; }
tr.group:nth-child(even) { background: #f4f4f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code, summary, li { font-family: monospace; }
#summary td:first-child { color: #555; }
)";

constexpr std::string_view kPageScript = R"JS(
(function () {
  var pick = document.getElementById("metric");
  var graphs = document.querySelectorAll("svg.ft-flamegraph");
  function show() {
    for (var i = 0; i < graphs.length; ++i)
      graphs[i].style.display = graphs[i].id === "fg-" + pick.value ? "" : "none";
  }
  pick.addEventListener("change", show);
  document.getElementById("search").addEventListener("input", function (e) {
    for (var i = 0; i < graphs.length; ++i) graphs[i].flameSearch(e.target.value);
  });
  show();
})();
)JS";

void frame_text(std::string& out, const ReportFrame& f) {
  fmt::format_to(std::back_inserter(out), "{:#x} ", f.address);
  append_xml_escaped(out, f.function ? *f.function : "??");
  if (f.file) {
    out += " (";
    append_xml_escaped(out, *f.file);
    if (f.line) fmt::format_to(std::back_inserter(out), ":{}", *f.line);
    out += ")";
  }
  if (f.module) {
    out += " [";
    append_xml_escaped(out, *f.module);
    out += "]";
  }
  if (f.inlined) out += " (inlined)";
}

void write_chart(std::string& out, const std::vector<ProcessTimeline>& processes) {
  constexpr double kW = 1000, kH = 300, kLeft = 80, kRight = 20, kTop = 20, kBottom = 30;
  uint64_t max_t = 1, max_b = 1;
  for (const ProcessTimeline& p : processes) {
    max_t = std::max(max_t, p.end_ns);
    for (const HeapPoint& h : p.points) max_b = std::max(max_b, h.bytes);
  }
  auto x = [&](uint64_t t) { return kLeft + static_cast<double>(t) / static_cast<double>(max_t) * (kW - kLeft - kRight); };
  auto y = [&](uint64_t b) { return kTop + (1 - static_cast<double>(b) / static_cast<double>(max_b)) * (kH - kTop - kBottom); };
  auto it = std::back_inserter(out);
  fmt::format_to(it,
                 "<svg id=\"heap-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
                 "height=\"{1}\" viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" "
                 "font-size=\"11\" data-max-bytes=\"{2}\" data-max-ns=\"{3}\">\n",
                 kW, kH, max_b, max_t);
  fmt::format_to(it, "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#fff\"/>\n", kW, kH);
  fmt::format_to(it,
                 "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#888\"/>"
                 "<line x1=\"{0}\" y1=\"{2}\" x2=\"{3}\" y2=\"{2}\" stroke=\"#888\"/>\n",
                 kLeft, kTop, kH - kBottom, kW - kRight);
  fmt::format_to(it, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", kLeft - 4, kTop + 4,
                 plural(max_b, "byte", "bytes"));
  fmt::format_to(it, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">0</text>\n", kLeft - 4, kH - kBottom);
  fmt::format_to(it, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", kW - kRight, kH - 8,
                 format_duration(max_t));
  static constexpr std::string_view kColours[] = {"#c0392b", "#2471a3", "#229954", "#b9770e",
                                                  "#7d3c98", "#17a589"};
  for (size_t i = 0; i < processes.size(); ++i) {
    const ProcessTimeline& p = processes[i];
    std::string_view colour = kColours[i % std::size(kColours)];
    fmt::format_to(it, "<polyline class=\"heap\" data-pid=\"{}\" fill=\"none\" stroke=\"{}\" "
                       "stroke-width=\"1.5\" points=\"", p.pid, colour);
    // A step line: the value holds until the next change.
    for (size_t k = 0; k < p.points.size(); ++k) {
      const HeapPoint& h = p.points[k];
      if (k > 0) fmt::format_to(it, " {:.1f},{:.1f}", x(h.time_ns), y(p.points[k - 1].bytes));
      fmt::format_to(it, "{}{:.1f},{:.1f}", k ? " " : "", x(h.time_ns), y(h.bytes));
    }
    fmt::format_to(it, " {:.1f},{:.1f}\"><title>process {}</title></polyline>\n", x(p.end_ns),
                   y(p.points.back().bytes), p.pid);
    // The values, for readers and tests: time and bytes of every point.
    fmt::format_to(it, "<g class=\"points\" data-pid=\"{}\" style=\"display:none\">", p.pid);
    for (const HeapPoint& h : p.points) {
      fmt::format_to(it, "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"1\" data-ns=\"{}\" data-bytes=\"{}\"/>",
                     x(h.time_ns), y(h.bytes), h.time_ns, h.bytes);
    }
    out += "</g>\n";
    auto peak = std::max_element(p.points.begin(), p.points.end(),
                                 [](const HeapPoint& a, const HeapPoint& b) { return a.bytes < b.bytes; });
    fmt::format_to(it,
                   "<circle class=\"peak\" data-pid=\"{0}\" data-ns=\"{1}\" data-bytes=\"{2}\" "
                   "cx=\"{3:.1f}\" cy=\"{4:.1f}\" r=\"5\" fill=\"{5}\"><title>process {0}: peak {6} at "
                   "{7}</title></circle>\n",
                   p.pid, peak->time_ns, peak->bytes, x(peak->time_ns), y(peak->bytes), colour,
                   plural(peak->bytes, "byte", "bytes"), format_duration(peak->time_ns));
    fmt::format_to(it, "<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\">peak {}</text>\n",
                   std::min(x(peak->time_ns) + 8, kW - 150), y(peak->bytes) + 4, colour,
                   plural(peak->bytes, "byte", "bytes"));
  }
  out += "</svg>\n";
}

}  // namespace

Status report_html(const ReportOptions& options, Output& out, Diagnostics& all_diag) {
  OnceDiagnostics diag(all_diag);  // the traces are read three times
  // The leaks, as the leaks report finds them.
  LeakOptions leak_options;
  leak_options.replay = heap_replay_options(options);
  auto filter = group_filter(options);
  if (!filter) return filter.error();
  leak_options.filter = std::move(*filter);
  leak_options.resolve = options.resolve;
  if (options.top) leak_options.top = static_cast<size_t>(*options.top);
  auto leaks = compute_leaks(options.traces, leak_options, diag);
  if (!leaks) return leaks.error();

  // The heap over time.
  HeapTimeline timeline;
  {
    HeapSession session(diag, options.resolve);
    auto n = session.replay(options.traces, timeline, heap_replay_options(options));
    if (!n) return n.error();
  }

  // The flame graphs, one replay for all four metrics.
  constexpr FlameMetric kMetrics[] = {FlameMetric::kAllocated, FlameMetric::kLeaked,
                                      FlameMetric::kPeak, FlameMetric::kTemporary};
  auto graphs = build_flame_graphs(options, kMetrics, diag);
  if (!graphs) return graphs.error();

  uint64_t peak = 0;
  for (const ProcessTimeline& p : timeline.processes) {
    for (const HeapPoint& h : p.points) peak = std::max(peak, h.bytes);
  }

  std::string html;
  auto it = std::back_inserter(html);
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<title>functracer heap report</title>\n<style>";
  html += kStyle;
  html += "</style>\n</head>\n<body>\n<h1>Heap report</h1>\n<p>";
  for (size_t i = 0; i < options.traces.size(); ++i) {
    if (i) html += ", ";
    html += "<code>";
    append_xml_escaped(html, options.traces[i]);
    html += "</code>";
  }
  html += "</p>\n<h2>Summary</h2>\n<table id=\"summary\">\n";
  fmt::format_to(it, "<tr><td>leaked</td><td id=\"leaked-bytes\" data-value=\"{}\">{}</td>"
                     "<td id=\"leaked-blocks\" data-value=\"{}\">in {}</td></tr>\n",
                 leaks->leaked_bytes, plural(leaks->leaked_bytes, "byte", "bytes"),
                 leaks->leaked_blocks, plural(leaks->leaked_blocks, "block", "blocks"));
  fmt::format_to(it, "<tr><td>peak</td><td id=\"peak-bytes\" data-value=\"{}\">{}</td><td>the "
                     "largest of the processes</td></tr>\n",
                 peak, plural(peak, "byte", "bytes"));
  fmt::format_to(it, "<tr><td>allocated</td><td>{}</td><td></td></tr>\n",
                 plural((*graphs)[0].total(), "byte", "bytes"));
  fmt::format_to(it, "<tr><td>processes</td><td>{}</td><td></td></tr>\n</table>\n",
                 leaks->processes);

  fmt::format_to(it, "<h2>Leaks</h2>\n<p>{} in {} ({})</p>\n",
                 plural(leaks->leaked_bytes, "byte", "bytes"),
                 plural(leaks->leaked_blocks, "block", "blocks"),
                 plural(leaks->groups_total, "group", "groups"));
  html += "<table id=\"leaks\">\n<tr><th>bytes</th><th>blocks</th><th>allocated by</th>"
          "<th>backtrace</th></tr>\n";
  for (const LeakGroup& g : leaks->groups) {
    fmt::format_to(it, "<tr class=\"group\"><td class=\"num\">{}</td><td class=\"num\">{}</td><td><code>",
                   g.bytes, g.blocks);
    append_xml_escaped(html, g.function.empty() ? "??" : g.function);
    html += "</code></td><td><details><summary>";
    if (g.frames.empty()) {
      html += "(no backtrace)</summary>";
    } else {
      frame_text(html, g.frames.front());
      html += "</summary><ol start=\"0\">";
      for (const ReportFrame& f : g.frames) {
        html += "<li class=\"frame\">";
        frame_text(html, f);
        html += "</li>";
      }
      html += "</ol>";
    }
    html += "</details></td></tr>\n";
  }
  html += "</table>\n";

  html += "<h2>Heap over time</h2>\n";
  write_chart(html, timeline.processes);

  html += "<h2>Flame graph</h2>\n<p><label>metric <select id=\"metric\">";
  for (FlameMetric m : kMetrics) {
    fmt::format_to(it, "<option value=\"{0}\">{0}</option>", flame_metric_name(m));
  }
  html += "</select></label> <label>search <input id=\"search\" type=\"search\" "
          "placeholder=\"regular expression\"></label></p>\n";
  for (size_t i = 0; i < std::size(kMetrics); ++i) {
    FlameGraph::SvgOptions svg;
    FlameMetric m = kMetrics[i];
    svg.id = fmt::format("fg-{}", flame_metric_name(m));
    svg.title = fmt::format("{} ({})", flame_metric_name(m), format_flame_value(m, (*graphs)[i].total()));
    svg.format_value = [m](uint64_t v) { return format_flame_value(m, v); };
    svg.xml_declaration = false;
    (*graphs)[i].write_svg(html, svg);
  }
  html += "<script>";
  html += kPageScript;
  html += "</script>\n</body>\n</html>\n";
  out.write(html);
  return {};
}

}  // namespace ft::post
