#include "postproc/report_html.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "postproc/display_name.h"
#include "postproc/flame_graph.h"
#include "postproc/heap_call_views.h"
#include "postproc/heap_session.h"
#include "postproc/heap_stacks.h"
#include "postproc/heap_timeline.h"
#include "postproc/markup.h"
#include "postproc/report_flamegraph.h"
#include "postproc/report_leaks.h"
#include "postproc/size_histogram.h"

namespace ft::post {

namespace {

constexpr std::string_view kStyle = R"(
body { font-family: sans-serif; margin: 0; color: #222; }
header { position: sticky; top: 0; background: #2c3e50; color: #fff; padding: 0.4em 1.5em; z-index: 2; }
header h1 { font-size: 1.2em; margin: 0.2em 0; display: inline-block; margin-right: 1em; }
header code { color: #ddd; font-size: 0.85em; }
nav a { color: #fff; text-decoration: none; padding: 0.2em 0.6em; border-radius: 3px; display: inline-block; }
nav a.active { background: #fff; color: #2c3e50; }
main { margin: 0.5em 1.5em; }
h2 { font-size: 1.15em; margin-top: 1em; }
table { border-collapse: collapse; }
td, th { padding: 2px 8px; text-align: left; vertical-align: top; }
th { background: #eee; position: sticky; top: 0; }
tr.group:nth-child(even), tr.fn-row:nth-child(even) { background: #f6f6f6; }
table.callers, table.callees { margin: 0.3em 0 0.6em 1em; font-size: 0.9em; }
#functions td:first-child { white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
code, summary, li, .fn, .loc { font-family: monospace; }
.loc, .via { color: #777; font-size: 0.9em; }
#summary-table td:first-child { color: #555; }
table.tree tr.node { cursor: pointer; }
table.tree tr.node:hover, tr.fn-row:hover { background: #e8f0fe; }
table.tree td.name { white-space: nowrap; }
.tog { display: inline-block; width: 1em; color: #555; }
.bar { background: #c0392b; height: 0.8em; display: inline-block; }
th.sort { cursor: pointer; }
.more { color: #777; font-style: italic; }
)";

// The views are tabs: the one named by the URL's fragment ("#top-down") is shown.
constexpr std::string_view kPageScript = R"JS(
(function () {
  var views = document.querySelectorAll("section.view");
  var links = document.querySelectorAll("nav a");
  function show() {
    var name = (window.location.hash || "#summary").substring(1);
    if (!document.getElementById("view-" + name)) name = "summary";
    for (var i = 0; i < views.length; ++i)
      views[i].style.display = views[i].id === "view-" + name ? "" : "none";
    for (var j = 0; j < links.length; ++j)
      links[j].className = links[j].getAttribute("href") === "#" + name ? "active" : "";
    if (name === "flame-graph") showGraph();
    window.scrollTo(0, 0);
  }
  var pick = document.getElementById("metric");
  var graphs = document.querySelectorAll("svg.ft-flamegraph");
  function showGraph() {
    for (var i = 0; i < graphs.length; ++i) {
      var on = graphs[i].id === "fg-" + pick.value;
      graphs[i].style.display = on ? "" : "none";
      if (on && graphs[i].flameResize) graphs[i].flameResize();
    }
  }
  pick.addEventListener("change", showGraph);
  document.getElementById("search").addEventListener("input", function (e) {
    for (var i = 0; i < graphs.length; ++i) graphs[i].flameSearch(e.target.value);
  });
  // Trees: a click on a row opens or closes it; closing hides every row below it.
  document.querySelectorAll("table.tree").forEach(function (t) {
    var rows = t.querySelectorAll("tr.node");
    var byParent = {};
    rows.forEach(function (r) {
      var p = r.getAttribute("data-parent");
      (byParent[p] = byParent[p] || []).push(r);
    });
    function setOpen(r, open) {
      r.setAttribute("data-open", open ? "1" : "0");
      var tog = r.querySelector(".tog");
      if (tog && tog.textContent !== "") tog.textContent = open ? "\u25be" : "\u25b8";
      (byParent[r.getAttribute("data-id")] || []).forEach(function (c) {
        c.style.display = open ? "" : "none";
        if (!open) setOpen(c, false);
      });
    }
    rows.forEach(function (r) {
      if (r.getAttribute("data-open") === "1") setOpen(r, true);
      else if (r.getAttribute("data-parent") !== "") setOpen(r, false);
      r.addEventListener("click", function () { setOpen(r, r.getAttribute("data-open") !== "1"); });
    });
  });
  // Tables: a click on a column heading sorts by it, largest first.
  document.querySelectorAll("th.sort").forEach(function (th) {
    th.addEventListener("click", function () {
      var table = th.closest("table");
      var col = th.hasAttribute("data-col") ? +th.getAttribute("data-col") : th.cellIndex;
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        return +b.cells[col].getAttribute("data-value") - +a.cells[col].getAttribute("data-value");
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
  window.addEventListener("hashchange", show);
  show();
})();
)JS";

constexpr std::string_view kMetricNames[kViewMetrics] = {"allocations", "allocated", "temporary", "peak",
                                                         "leaked"};
constexpr bool kMetricIsBytes[kViewMetrics] = {false, true, false, true, true};

// A number cell: the readable value shown, the exact one in data-value (and, for byte
// counts, in the title).
void num_cell(std::string& out, uint64_t v, bool bytes, std::string_view cls = "num") {
  if (!bytes) {
    fmt::format_to(std::back_inserter(out), "<td class=\"{}\" data-value=\"{}\">{}</td>", cls, v, v);
    return;
  }
  fmt::format_to(std::back_inserter(out), "<td class=\"{}\" data-value=\"{}\" title=\"{}\">{}</td>", cls, v,
                 plural(v, "byte", "bytes"), format_bytes(v));
}

// A function name: shortened, the full name on hover.
void name_span(std::string& out, std::string_view name) {
  out += "<span class=\"fn\" title=\"";
  append_xml_escaped(out, name);
  out += "\">";
  append_xml_escaped(out, short_display_name(name));
  out += "</span>";
}

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

// A group's title: the first frame of the program's own code, where it is, and the
// allocating function; then the whole backtrace, expanding on a click.
void group_cells(std::string& out, const std::string& allocator, const std::vector<ReportFrame>& frames) {
  out += "<td class=\"title\">";
  const ReportFrame* user = first_user_frame(frames);
  if (user) {
    name_span(out, frame_name(*user));
    if (user->file) {
      out += " <span class=\"loc\">";
      append_xml_escaped(out, *user->file);
      if (user->line) fmt::format_to(std::back_inserter(out), ":{}", *user->line);
      out += "</span>";
    }
  } else {
    out += "(no backtrace)";
  }
  out += "<br><span class=\"via\">via ";
  name_span(out, allocator.empty() ? "??" : allocator);
  out += "</span></td><td><details><summary>backtrace</summary>";
  if (frames.empty()) {
    out += "(no backtrace)";
  } else {
    out += "<ol start=\"0\">";
    for (const ReportFrame& f : frames) {
      out += "<li class=\"frame\">";
      frame_text(out, f);
      out += "</li>";
    }
    out += "</ol>";
  }
  out += "</details></td>";
}

// The ticks of an axis from 0 to `max`: at most six, at round values: 1, 2 or 5 times
// a power of ten of `unit` (1024^k for bytes, so that the labels read "50 KiB").
std::vector<uint64_t> ticks(uint64_t max, uint64_t unit_base) {
  uint64_t unit = 1;
  while (unit_base > 1 && max / unit >= unit_base) unit *= unit_base;
  uint64_t step = 1;
  for (uint64_t decade = 1;; decade *= 10) {
    if (max / (unit * decade) <= 5) { step = decade; break; }
    if (max / (unit * decade * 2) <= 5) { step = decade * 2; break; }
    if (max / (unit * decade * 5) <= 5) { step = decade * 5; break; }
  }
  std::vector<uint64_t> out;
  for (uint64_t v = 0; v <= max; v += step * unit) out.push_back(v);
  return out;
}

// An axis label: "20 ms" rather than "20.000 ms", "50 KiB" rather than "50.0 KiB".
std::string tick_label(std::string s) {
  for (std::string_view zeros : {".000 ", ".00 ", ".0 "}) {
    if (size_t at = s.find(zeros); at != std::string::npos) s.erase(at, zeros.size() - 1);
  }
  return s;
}

void write_chart(std::string& out, const std::vector<ProcessTimeline>& processes) {
  constexpr double kW = 1100, kH = 340, kLeft = 90, kRight = 20, kTop = 20, kBottom = 50;
  uint64_t max_t = 1, max_b = 1;
  for (const ProcessTimeline& p : processes) {
    max_t = std::max(max_t, p.end_ns);
    for (const HeapPoint& h : p.points) max_b = std::max(max_b, h.bytes);
  }
  auto x = [&](uint64_t t) { return kLeft + static_cast<double>(t) / static_cast<double>(max_t) * (kW - kLeft - kRight); };
  auto y = [&](uint64_t b) { return kTop + (1 - static_cast<double>(b) / static_cast<double>(max_b)) * (kH - kTop - kBottom); };
  auto it = std::back_inserter(out);
  fmt::format_to(it,
                 "<svg id=\"heap-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"100%\" "
                 "viewBox=\"0 0 {0} {1}\" style=\"max-width:{0}px\" font-family=\"sans-serif\" "
                 "font-size=\"11\" data-max-bytes=\"{2}\" data-max-ns=\"{3}\">\n",
                 kW, kH, max_b, max_t);
  fmt::format_to(it, "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#fff\"/>\n", kW, kH);
  // Axes, ticks with grid lines, and their titles.
  for (uint64_t b : ticks(max_b, 1024)) {
    fmt::format_to(it,
                   "<line class=\"grid\" x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#eee\"/>"
                   "<text class=\"tick-y\" x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                   kLeft, y(b), kW - kRight, kLeft - 4, y(b) + 4, tick_label(format_bytes(b)));
  }
  for (uint64_t t : ticks(max_t, 1000)) {
    fmt::format_to(it,
                   "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#888\"/>"
                   "<text class=\"tick-x\" x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                   x(t), kH - kBottom, kH - kBottom + 4, kH - kBottom + 16, tick_label(format_duration(t)));
  }
  fmt::format_to(it,
                 "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#888\"/>"
                 "<line x1=\"{0}\" y1=\"{2}\" x2=\"{3}\" y2=\"{2}\" stroke=\"#888\"/>\n",
                 kLeft, kTop, kH - kBottom, kW - kRight);
  fmt::format_to(it,
                 "<text class=\"axis-title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"12\">"
                 "time since the trace started</text>\n",
                 (kLeft + kW - kRight) / 2, kH - 8);
  fmt::format_to(it,
                 "<text class=\"axis-title\" x=\"14\" y=\"{0}\" text-anchor=\"middle\" font-size=\"12\" "
                 "transform=\"rotate(-90 14 {0})\">live heap</text>\n",
                 (kTop + kH - kBottom) / 2);
  static constexpr std::string_view kColours[] = {"#c0392b", "#2471a3", "#229954", "#b9770e",
                                                  "#7d3c98", "#17a589"};
  for (size_t i = 0; i < processes.size(); ++i) {
    const ProcessTimeline& p = processes[i];
    if (p.points.empty()) continue;
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
                   format_bytes(peak->bytes), format_duration(peak->time_ns));
    fmt::format_to(it, "<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"{}\">process {}: peak {}</text>\n",
                   std::min(x(peak->time_ns) + 8, kW - 200), y(peak->bytes) + 4, colour, p.pid,
                   format_bytes(peak->bytes));
  }
  out += "</svg>\n";
}

// The heading row of the five metrics.
void metric_headings(std::string& out) {
  for (std::string_view m : kMetricNames) fmt::format_to(std::back_inserter(out), "<th class=\"num\">{}</th>", m);
}

// A tree as table rows, depth first; children below 0.1% of every metric's total are
// summed into one "N smaller" row so that large traces stay readable.
void write_tree(std::string& out, std::string_view id, const CallTree& tree) {
  fmt::format_to(std::back_inserter(out), "<table class=\"tree\" id=\"{}\"><thead><tr>", id);
  metric_headings(out);
  out += "<th>function</th></tr></thead><tbody>\n";
  const ViewValues& total = tree.nodes[0].values;
  auto small = [&](const ViewValues& v) {
    for (size_t i = 0; i < kViewMetrics; ++i) {
      if (v[i] * 1000 >= total[i] && v[i] > 0) return false;
    }
    return true;
  };
  struct Item {
    uint32_t node;
    uint32_t depth;
    int64_t parent;
  };
  std::vector<Item> todo{{0, 0, -1}};
  uint64_t more_id = tree.nodes.size();
  while (!todo.empty()) {
    Item item = todo.back();
    todo.pop_back();
    const CallTreeNode& n = tree.nodes[item.node];
    std::vector<uint32_t> kids = n.children;
    std::sort(kids.begin(), kids.end(), [&](uint32_t a, uint32_t b) {
      const ViewValues& va = tree.nodes[a].values;
      const ViewValues& vb = tree.nodes[b].values;
      if (va[1] != vb[1]) return va[1] > vb[1];
      if (va != vb) return va > vb;
      return tree.nodes[a].name < tree.nodes[b].name;
    });
    std::vector<uint32_t> shown;
    ViewValues rest{};
    size_t rest_n = 0;
    for (uint32_t k : kids) {
      if (small(tree.nodes[k].values)) {
        add_values(rest, tree.nodes[k].values);
        ++rest_n;
      } else {
        shown.push_back(k);
      }
    }
    auto it = std::back_inserter(out);
    fmt::format_to(it, "<tr class=\"node\" data-id=\"{}\" data-parent=\"{}\" data-depth=\"{}\" data-open=\"{}\" data-name=\"",
                   item.node, item.parent < 0 ? std::string() : std::to_string(item.parent), item.depth,
                   item.depth < 2 ? 1 : 0);
    append_xml_escaped(out, n.name);
    out += "\">";
    for (size_t i = 0; i < kViewMetrics; ++i) num_cell(out, n.values[i], kMetricIsBytes[i]);
    fmt::format_to(it, "<td class=\"name\" style=\"padding-left:{:.1f}em\"><span class=\"tog\">{}</span>",
                   0.5 + 1.2 * item.depth, kids.empty() ? "" : "\u25b8");
    name_span(out, n.name);
    if (!n.location.empty()) {
      out += " <span class=\"loc\">";
      append_xml_escaped(out, n.location);
      out += "</span>";
    }
    out += "</td></tr>\n";
    if (rest_n > 0) {
      fmt::format_to(it, "<tr class=\"node more\" data-id=\"m{}\" data-parent=\"{}\" data-depth=\"{}\">",
                     more_id++, item.node, item.depth + 1);
      for (size_t i = 0; i < kViewMetrics; ++i) num_cell(out, rest[i], kMetricIsBytes[i]);
      fmt::format_to(it, "<td class=\"name\" style=\"padding-left:{:.1f}em\"><span class=\"tog\"></span>"
                         "{} smaller (each under 0.1%)</td></tr>\n",
                     0.5 + 1.2 * (item.depth + 1), rest_n);
    }
    for (size_t i = shown.size(); i-- > 0;) {
      todo.push_back({shown[i], item.depth + 1, static_cast<int64_t>(item.node)});
    }
  }
  out += "</tbody></table>\n";
}

void write_edges(std::string& out, std::string_view what, const std::map<std::string, ViewValues>& edges) {
  if (edges.empty()) return;
  std::vector<std::pair<std::string, ViewValues>> sorted(edges.begin(), edges.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  fmt::format_to(std::back_inserter(out), "<table class=\"{}\"><thead><tr>", what);
  metric_headings(out);
  fmt::format_to(std::back_inserter(out), "<th>{}</th></tr></thead><tbody>", what == "callers" ? "called by" : "calls");
  for (const auto& [name, v] : sorted) {
    out += "<tr>";
    for (size_t i = 0; i < kViewMetrics; ++i) num_cell(out, v[i], kMetricIsBytes[i]);
    out += "<td>";
    name_span(out, name);
    out += "</td></tr>";
  }
  out += "</tbody></table>";
}

void write_function_table(std::string& out, const std::vector<FunctionTotals>& functions) {
  constexpr size_t kMaxRows = 2000;
  auto it = std::back_inserter(out);
  out += "<table id=\"functions\"><thead><tr><th rowspan=\"2\">function (click for callers and "
         "callees)</th>";
  for (std::string_view m : kMetricNames) fmt::format_to(it, "<th class=\"num\" colspan=\"2\">{}</th>", m);
  out += "</tr><tr>";
  for (size_t i = 0; i < kViewMetrics; ++i) {
    fmt::format_to(it, "<th class=\"num sort\" data-col=\"{}\">incl.</th><th class=\"num sort\" "
                       "data-col=\"{}\">self</th>",
                   1 + 2 * i, 2 + 2 * i);
  }
  out += "</tr></thead><tbody>\n";
  for (size_t k = 0; k < functions.size() && k < kMaxRows; ++k) {
    const FunctionTotals& f = functions[k];
    out += "<tr class=\"fn-row\" data-name=\"";
    append_xml_escaped(out, f.name);
    out += "\"><td><details><summary>";
    name_span(out, f.name);
    out += "</summary>";
    write_edges(out, "callers", f.callers);
    write_edges(out, "callees", f.callees);
    out += "</details></td>";
    for (size_t i = 0; i < kViewMetrics; ++i) {
      num_cell(out, f.inclusive[i], kMetricIsBytes[i], "num incl");
      num_cell(out, f.self[i], kMetricIsBytes[i], "num self");
    }
    out += "</tr>\n";
  }
  out += "</tbody></table>\n";
  if (functions.size() > kMaxRows) {
    fmt::format_to(it, "<p class=\"more\">the first {} of {} functions</p>\n", kMaxRows, functions.size());
  }
}

// The largest groups by one value, as rows: value cells, then the group's title.
void write_top_groups(std::string& out, std::string_view id, const std::vector<const HeapStack*>& stacks,
                      std::span<const std::pair<std::string_view, uint64_t HeapValues::*>> columns,
                      const std::vector<bool>& bytes, size_t top) {
  fmt::format_to(std::back_inserter(out), "<table id=\"{}\"><thead><tr>", id);
  for (const auto& c : columns) fmt::format_to(std::back_inserter(out), "<th class=\"num\">{}</th>", c.first);
  out += "<th>allocated in</th><th></th></tr></thead><tbody>\n";
  for (size_t k = 0; k < stacks.size() && k < top; ++k) {
    out += "<tr class=\"group\">";
    for (size_t i = 0; i < columns.size(); ++i) num_cell(out, stacks[k]->values.*columns[i].second, bytes[i]);
    group_cells(out, stacks[k]->function, stacks[k]->frames);
    out += "</tr>\n";
  }
  out += "</tbody></table>\n";
}

std::vector<const HeapStack*> largest(const HeapStacks& heap, uint64_t HeapValues::*by,
                                      std::function<bool(const HeapStack&)> keep) {
  std::vector<const HeapStack*> out;
  for (const HeapStack& s : heap.stacks) {
    if (s.values.*by > 0 && keep(s)) out.push_back(&s);
  }
  std::stable_sort(out.begin(), out.end(),
                   [by](const HeapStack* a, const HeapStack* b) { return a->values.*by > b->values.*by; });
  return out;
}

std::string percent(uint64_t part, uint64_t whole) {
  return whole ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "0%";
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

  // The heap over time and the sizes.
  HeapTimeline timeline;
  SizeHistogram histogram;
  {
    HeapSession session(diag, options.resolve);
    HeapObserverSet both({&timeline, &histogram});
    auto n = session.replay(options.traces, both, heap_replay_options(options));
    if (!n) return n.error();
  }

  // The stacks of every view.
  auto heap = collect_heap_stacks(options, diag);
  if (!heap) return heap.error();
  ViewValues totals{};
  for (const HeapStack& s : heap->stacks) add_values(totals, view_values(s.values));
  uint64_t temporary_bytes = 0;
  for (const HeapStack& s : heap->stacks) temporary_bytes += s.values.temporary;

  uint64_t peak = 0;
  for (const ProcessTimeline& p : timeline.processes) {
    for (const HeapPoint& h : p.points) peak = std::max(peak, h.bytes);
  }

  std::string html;
  auto it = std::back_inserter(html);
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<title>functracer heap report</title>\n<style>";
  html += kStyle;
  html += "</style>\n</head>\n<body>\n<header><h1>Heap report</h1>";
  for (size_t i = 0; i < options.traces.size(); ++i) {
    if (i) html += ", ";
    html += "<code>";
    append_xml_escaped(html, options.traces[i]);
    html += "</code>";
  }
  html += "\n<nav id=\"views\">";
  static constexpr std::pair<std::string_view, std::string_view> kViews[] = {
      {"summary", "Summary"},       {"leaks", "Leaks"},           {"peak", "Peak"},
      {"temporary", "Temporary"},   {"allocations", "Allocations"}, {"sizes", "Sizes"},
      {"over-time", "Heap over time"}, {"bottom-up", "Bottom-up"}, {"top-down", "Top-down"},
      {"caller-callee", "Caller/callee"}, {"flame-graph", "Flame graph"}};
  for (const auto& [id, title] : kViews) fmt::format_to(it, "<a href=\"#{}\">{}</a>", id, title);
  html += "</nav></header>\n<main>\n";

  // Summary.
  html += "<section class=\"view\" id=\"view-summary\"><h2>Summary</h2>\n<table id=\"summary-table\">\n";
  fmt::format_to(it, "<tr><td>leaked</td><td id=\"leaked-bytes\" data-value=\"{}\" title=\"{}\">{}</td>"
                     "<td id=\"leaked-blocks\" data-value=\"{}\">in {}</td></tr>\n",
                 leaks->leaked_bytes, plural(leaks->leaked_bytes, "byte", "bytes"),
                 format_bytes(leaks->leaked_bytes), leaks->leaked_blocks,
                 plural(leaks->leaked_blocks, "block", "blocks"));
  fmt::format_to(it, "<tr><td>peak</td><td id=\"peak-bytes\" data-value=\"{}\" title=\"{}\">{}</td><td>the "
                     "largest of the processes</td></tr>\n",
                 peak, plural(peak, "byte", "bytes"), format_bytes(peak));
  fmt::format_to(it, "<tr><td>allocated</td><td id=\"allocated-bytes\" data-value=\"{}\" title=\"{}\">{}</td>"
                     "<td id=\"allocation-count\" data-value=\"{}\">in {}</td></tr>\n",
                 totals[1], plural(totals[1], "byte", "bytes"), format_bytes(totals[1]), totals[0],
                 plural(totals[0], "allocation", "allocations"));
  fmt::format_to(it, "<tr><td>temporary</td><td id=\"temporary-count\" data-value=\"{}\">{}</td>"
                     "<td>{} of the allocations, {}</td></tr>\n",
                 totals[2], plural(totals[2], "allocation", "allocations"), percent(totals[2], totals[0]),
                 format_bytes(temporary_bytes));
  fmt::format_to(it, "<tr><td>processes</td><td>{}</td><td></td></tr>\n</table>\n", leaks->processes);
  html += "<p>The views: <b>Leaks</b>, <b>Peak</b>, <b>Temporary</b> and <b>Allocations</b> list the "
          "backtraces that count most, each titled by the first frame of the program's own code; "
          "<b>Bottom-up</b> and <b>Top-down</b> are the backtraces as trees; <b>Caller/callee</b> "
          "totals each function; hover a shortened name for the full one.</p></section>\n";

  // Leaks.
  fmt::format_to(it, "<section class=\"view\" id=\"view-leaks\"><h2>Leaks</h2>\n<p>{} in {} ({})</p>\n",
                 format_bytes(leaks->leaked_bytes), plural(leaks->leaked_blocks, "block", "blocks"),
                 plural(leaks->groups_total, "group", "groups"));
  html += "<table id=\"leak-table\"><thead><tr><th class=\"num\">leaked</th><th class=\"num\">blocks</th>"
          "<th>allocated in</th><th></th></tr></thead><tbody>\n";
  for (const LeakGroup& g : leaks->groups) {
    html += "<tr class=\"group\">";
    num_cell(html, g.bytes, true);
    num_cell(html, g.blocks, false);
    group_cells(html, g.function, g.frames);
    html += "</tr>\n";
  }
  html += "</tbody></table></section>\n";

  constexpr size_t kTop = 20;
  // Peak.
  html += "<section class=\"view\" id=\"view-peak\"><h2>Peak</h2>\n";
  for (const ProcessTimeline& p : timeline.processes) {
    uint64_t bytes = 0, time = 0;
    for (const HeapPoint& h : p.points) {
      if (h.bytes > bytes) {
        bytes = h.bytes;
        time = h.time_ns;
      }
    }
    fmt::format_to(it, "<h3>process {0}</h3><p class=\"peak-process\" data-pid=\"{0}\" data-value=\"{1}\">"
                       "peak {2} at {3}; the largest groups live then:</p>\n",
                   p.pid, bytes, format_bytes(bytes), format_duration(time));
    static constexpr std::pair<std::string_view, uint64_t HeapValues::*> kCols[] = {
        {"bytes", &HeapValues::peak}, {"blocks", &HeapValues::peak_blocks}};
    int64_t pid = p.pid;
    write_top_groups(html, fmt::format("peak-{}", p.pid),
                     largest(*heap, &HeapValues::peak, [pid](const HeapStack& s) { return s.pid == pid; }),
                     kCols, {true, false}, kTop);
  }
  html += "</section>\n";

  // Temporary.
  fmt::format_to(it, "<section class=\"view\" id=\"view-temporary\"><h2>Temporary allocations</h2>\n"
                     "<p>{} of {} ({}), {}: freed by the thread that made them with no other allocation "
                     "in between. The largest groups:</p>\n",
                 plural(totals[2], "allocation", "allocations"), totals[0], percent(totals[2], totals[0]),
                 format_bytes(temporary_bytes));
  {
    static constexpr std::pair<std::string_view, uint64_t HeapValues::*> kCols[] = {
        {"temporary", &HeapValues::temporary_count},
        {"bytes", &HeapValues::temporary},
        {"allocations", &HeapValues::allocations}};
    write_top_groups(html, "temporary-groups",
                     largest(*heap, &HeapValues::temporary_count, [](const HeapStack&) { return true; }), kCols,
                     {false, true, false}, kTop);
  }
  html += "</section>\n";

  // Allocations.
  fmt::format_to(it, "<section class=\"view\" id=\"view-allocations\"><h2>Allocations</h2>\n"
                     "<p>{} of {}. The groups that allocate most often:</p>\n",
                 plural(totals[0], "allocation", "allocations"), format_bytes(totals[1]));
  {
    static constexpr std::pair<std::string_view, uint64_t HeapValues::*> kCols[] = {
        {"allocations", &HeapValues::allocations},
        {"bytes", &HeapValues::allocated},
        {"leaked", &HeapValues::leaked}};
    write_top_groups(html, "allocation-groups",
                     largest(*heap, &HeapValues::allocations, [](const HeapStack&) { return true; }), kCols,
                     {false, true, true}, kTop);
  }
  html += "</section>\n";

  // Sizes.
  html += "<section class=\"view\" id=\"view-sizes\"><h2>Allocation sizes</h2>\n<table id=\"histogram\">"
          "<thead><tr><th>size</th><th class=\"num\">allocations</th><th class=\"num\">bytes</th>"
          "<th class=\"num\">leaked blocks</th><th></th></tr></thead><tbody>\n";
  {
    size_t first = histogram.buckets.size(), last = 0;
    uint64_t most = 1;
    for (size_t k = 0; k < histogram.buckets.size(); ++k) {
      if (histogram.buckets[k].allocations == 0) continue;
      first = std::min(first, k);
      last = k;
      most = std::max(most, histogram.buckets[k].allocations);
    }
    for (size_t k = first; k <= last && first < histogram.buckets.size(); ++k) {
      const SizeBucket& b = histogram.buckets[k];
      uint64_t lo = SizeHistogram::bucket_min(k), hi = SizeHistogram::bucket_max(k);
      html += "<tr class=\"bucket\">";
      // "1 KiB – 2 KiB": from lo up to (not including) hi + 1; the exact bounds on hover.
      std::string label = lo == hi ? format_bytes(lo)
                          : hi == UINT64_MAX
                              ? fmt::format("\u2265 {}", tick_label(format_bytes(lo)))
                              : fmt::format("{} \u2013 {}", tick_label(format_bytes(lo)), tick_label(format_bytes(hi + 1)));
      fmt::format_to(it, "<td data-min=\"{0}\" data-max=\"{1}\" title=\"{0} to {1} bytes\">{2}</td>", lo, hi, label);
      num_cell(html, b.allocations, false);
      num_cell(html, b.bytes, true);
      num_cell(html, b.leaked, false);
      fmt::format_to(it, "<td style=\"width:40%\"><span class=\"bar\" style=\"width:{:.1f}%\"></span></td></tr>\n",
                     100.0 * static_cast<double>(b.allocations) / static_cast<double>(most));
    }
  }
  html += "</tbody></table></section>\n";

  // Heap over time.
  html += "<section class=\"view\" id=\"view-over-time\"><h2>Heap over time</h2>\n";
  write_chart(html, timeline.processes);
  html += "</section>\n";

  // Trees and the caller/callee table.
  html += "<section class=\"view\" id=\"view-bottom-up\"><h2>Bottom-up</h2>\n<p>The code that called the "
          "allocator, then who called it. Click a row to open or close it.</p>\n";
  write_tree(html, "tree-bottom-up", build_call_tree(heap->stacks, true));
  html += "</section>\n<section class=\"view\" id=\"view-top-down\"><h2>Top-down</h2>\n<p>From the "
          "outermost frame to the code that called the allocator.</p>\n";
  write_tree(html, "tree-top-down", build_call_tree(heap->stacks, false));
  html += "</section>\n<section class=\"view\" id=\"view-caller-callee\"><h2>Caller/callee</h2>\n<p>Per "
          "function: the stacks it is in (inclusive) and those in which it called the allocator "
          "(self). Click a heading to sort.</p>\n";
  write_function_table(html, function_totals(heap->stacks));
  html += "</section>\n";

  // The flame graphs.
  constexpr FlameMetric kMetrics[] = {FlameMetric::kAllocated, FlameMetric::kLeaked,
                                      FlameMetric::kPeak, FlameMetric::kTemporary};
  std::vector<FlameGraph> graphs = heap_flame_graphs(*heap, kMetrics);
  html += "<section class=\"view\" id=\"view-flame-graph\"><h2>Flame graph</h2>\n<p><label>metric "
          "<select id=\"metric\">";
  for (FlameMetric m : kMetrics) {
    fmt::format_to(it, "<option value=\"{0}\">{0}</option>", flame_metric_name(m));
  }
  html += "</select></label> <label>search <input id=\"search\" type=\"search\" "
          "placeholder=\"regular expression\"></label></p>\n<div id=\"flame-graphs\">";
  for (size_t i = 0; i < std::size(kMetrics); ++i) {
    FlameGraph::SvgOptions svg;
    FlameMetric m = kMetrics[i];
    svg.id = fmt::format("fg-{}", flame_metric_name(m));
    uint64_t total = graphs[i].total();
    svg.title = fmt::format("{} ({})", flame_metric_name(m), format_bytes(total));
    svg.format_value = [](uint64_t v) { return format_bytes(v); };
    svg.xml_declaration = false;
    svg.fit_parent = true;
    graphs[i].write_svg(html, svg);
  }
  html += "</div></section>\n</main>\n<script>";
  html += kPageScript;
  html += "</script>\n</body>\n</html>\n";
  out.write(html);
  return {};
}

}  // namespace ft::post
