#include "postproc/flame_graph.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "postproc/markup.h"

namespace ft::post {

namespace {

// The frame's fill: FNV-1a of the name picks a colour in flamegraph.pl's "hot" range.
std::string frame_colour(std::string_view name) {
  uint32_t h = 2166136261u;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  unsigned r = 205 + h % 51;
  unsigned g = (h >> 8) % 231;
  unsigned b = (h >> 16) % 56;
  return fmt::format("rgb({},{},{})", r, g, b);
}

std::string folded_name(std::string_view name) {
  std::string s(name);
  for (char& c : s) {
    if (c == ';') c = ',';
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

std::string percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "0%";
  return fmt::format("{:.2f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

// The script of every flame graph; @ID@ and the numbers are filled in. Written
// without '<' and '&' outside the CDATA section's needs so that it reads the same
// in XML and HTML.
constexpr std::string_view kScript = R"JS(
(function () {
  var svg = document.getElementById("@ID@");
  var PAD = @PAD@, PLOTW = @PLOTW@, FIT = @FIT@, CW = @CW@, MINW = @MINW@, MATCH = "rgb(230,0,230)";
  var reset = document.getElementById("@ID@-reset");
  var searchBtn = document.getElementById("@ID@-search");
  var matched = document.getElementById("@ID@-matched");
  var details = document.getElementById("@ID@-details");
  var frames = [];
  var gs = document.getElementById("@ID@-frames").children;
  for (var i = 0; i < gs.length; ++i) {
    var g = gs[i], t = g.querySelector("title").textContent, r = g.querySelector("rect");
    frames.push({g: g, rect: r, text: g.querySelector("text"), tip: t,
                 name: t.substring(0, t.lastIndexOf(" (")), fill: r.getAttribute("fill"),
                 o: +g.getAttribute("data-o"), v: +g.getAttribute("data-v"),
                 d: +g.getAttribute("data-d")});
    g.ftIndex = i;
  }
  var root = frames[0], zoomed = root, term = null;
  function label(name, w) {
    var n = Math.floor((w - 6) / CW);
    if (n < 3) return "";
    if (name.length <= n) return name;
    return name.substring(0, n - 2) + "..";
  }
  function zoom(z) {
    zoomed = z;
    frames.forEach(function (f) {
      var x, w, dim = false;
      if (f.d >= z.d && f.o >= z.o && f.o + f.v <= z.o + z.v) {
        x = PAD + (f.o - z.o) / z.v * PLOTW;
        w = f.v / z.v * PLOTW;
      } else if (f.d < z.d && f.o <= z.o && f.o + f.v >= z.o + z.v) {
        x = PAD;
        w = PLOTW;
        dim = true;
      } else {
        f.g.style.display = "none";
        return;
      }
      f.g.style.display = w < MINW ? "none" : "";
      f.g.style.opacity = dim ? "0.5" : "";
      f.rect.setAttribute("x", x.toFixed(2));
      f.rect.setAttribute("width", w.toFixed(2));
      f.text.setAttribute("x", (x + 3).toFixed(2));
      f.text.textContent = label(f.name, w);
    });
    reset.style.display = z === root ? "none" : "";
  }
  function search(re) {
    term = re || null;
    var spans = [];
    var regex = null;
    if (term) {
      try { regex = new RegExp(term); } catch (e) { term = null; }
    }
    frames.forEach(function (f) {
      var hit = regex !== null && regex.test(f.name);
      f.rect.setAttribute("fill", hit ? MATCH : f.fill);
      if (hit) spans.push([f.o, f.o + f.v]);
    });
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var covered = 0, end = -1;
    spans.forEach(function (s) {
      if (s[0] >= end) { covered += s[1] - s[0]; end = s[1]; }
      else if (s[1] > end) { covered += s[1] - end; end = s[1]; }
    });
    matched.textContent = term ? "Matched: " + (100 * covered / root.v).toFixed(2) + "%" : "";
    searchBtn.textContent = term ? "Reset Search" : "Search";
    svg.setAttribute("data-matched", term ? String(covered) : "");
  }
  document.getElementById("@ID@-frames").addEventListener("click", function (e) {
    var g = e.target.closest("g");
    if (g && g.ftIndex !== undefined) zoom(frames[g.ftIndex]);
  });
  document.getElementById("@ID@-frames").addEventListener("mouseover", function (e) {
    var g = e.target.closest("g");
    if (g && g.ftIndex !== undefined) details.textContent = frames[g.ftIndex].tip;
  });
  reset.addEventListener("click", function () { zoom(root); });
  searchBtn.addEventListener("click", function () {
    if (term) { search(null); return; }
    var re = window.prompt("Search frames (regular expression)", "");
    if (re) search(re);
  });
  function resize(w) {
    w = Math.max(200, Math.floor(w));
    var h = svg.getAttribute("height");
    svg.setAttribute("width", w);
    svg.setAttribute("viewBox", "0 0 " + w + " " + h);
    document.getElementById("@ID@-bg").setAttribute("width", w);
    document.getElementById("@ID@-title").setAttribute("x", w / 2);
    searchBtn.setAttribute("x", w - PAD);
    matched.setAttribute("x", w - PAD);
    PLOTW = w - 2 * PAD;
    zoom(zoomed);
  }
  function fit() {
    var p = svg.parentNode;
    if (p && p.clientWidth > 0) resize(p.clientWidth);
  }
  svg.flameResize = function (w) { if (w) resize(w); else fit(); };
  if (FIT) {
    window.addEventListener("resize", fit);
    fit();
  }
  svg.flameZoom = function (i) { zoom(frames[i] || root); };
  svg.flameSearch = search;
  var m = /[#&]search=([^&]*)/.exec(window.location.hash);
  if (m) search(decodeURIComponent(m[1]));
})();
)JS";

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
}

}  // namespace

FlameGraph::FlameGraph() { nodes_.push_back(Node{"all", kRoot, 0, 0, {}}); }

FlameGraph::NodeId FlameGraph::child(NodeId parent, std::string_view name) {
  std::string key(reinterpret_cast<const char*>(&parent), sizeof parent);
  key.append(name);
  auto [it, inserted] = index_.try_emplace(std::move(key), static_cast<NodeId>(nodes_.size()));
  if (inserted) {
    nodes_.push_back(Node{std::string(name), parent, nodes_[parent].depth + 1, 0, {}});
    nodes_[parent].children.push_back(it->second);
  }
  return it->second;
}

void FlameGraph::add_stack(std::span<const std::string> frames, uint64_t value) {
  NodeId node = kRoot;
  for (const std::string& f : frames) node = child(node, f);
  add(node, value);
}

uint64_t FlameGraph::total() const {
  uint64_t t = 0;
  for (const Node& n : nodes_) t += n.self;
  return t;
}

std::vector<uint64_t> FlameGraph::inclusive() const {
  // Children always come after their parent, so one backward pass sums them up.
  std::vector<uint64_t> v(nodes_.size());
  for (size_t i = nodes_.size(); i-- > 0;) {
    v[i] += nodes_[i].self;
    if (i != kRoot) v[nodes_[i].parent] += v[i];
  }
  return v;
}

std::vector<FlameGraph::NodeId> FlameGraph::sorted_children(NodeId id) const {
  std::vector<NodeId> c = nodes_[id].children;
  std::sort(c.begin(), c.end(),
            [&](NodeId a, NodeId b) { return nodes_[a].name < nodes_[b].name; });
  return c;
}

void FlameGraph::write_folded(std::string& out) const {
  std::vector<std::string> path;
  // Iterative depth-first walk: deep recursion (10000 frames) must not overflow.
  struct Item {
    NodeId id;
    bool leave;
  };
  std::vector<Item> todo;
  for (NodeId c : [&] { auto v = sorted_children(kRoot); std::reverse(v.begin(), v.end()); return v; }())
    todo.push_back({c, false});
  std::string line;
  while (!todo.empty()) {
    Item it = todo.back();
    todo.pop_back();
    if (it.leave) {
      path.pop_back();
      continue;
    }
    const Node& n = nodes_[it.id];
    path.push_back(folded_name(n.name));
    if (n.self > 0) {
      line.clear();
      for (size_t i = 0; i < path.size(); ++i) {
        if (i > 0) line += ';';
        line += path[i];
      }
      fmt::format_to(std::back_inserter(out), "{} {}\n", line, n.self);
    }
    todo.push_back({it.id, true});
    std::vector<NodeId> c = sorted_children(it.id);
    for (size_t i = c.size(); i-- > 0;) todo.push_back({c[i], false});
  }
}

std::string flame_label(std::string_view name, double width) {
  double fit = std::floor((width - 6) / FlameGraph::kCharWidth);
  if (fit < 3) return {};
  auto n = static_cast<size_t>(fit);
  if (name.size() <= n) return std::string(name);
  return std::string(utf8_prefix(name, n - 2)) + "..";
}

void FlameGraph::write_svg(std::string& out, const SvgOptions& options) const {
  std::vector<uint64_t> value = inclusive();
  const uint64_t total = value[kRoot];
  const double width = options.width;
  const double plot = width - 2 * kPad;
  auto format_value = [&](uint64_t v) {
    return options.format_value ? options.format_value(v) : fmt::format("{}", v);
  };

  // Layout: offsets (in value units) of the frames wide enough to draw, preorder.
  struct Placed {
    NodeId id;
    uint64_t offset;
  };
  std::vector<Placed> placed;
  uint32_t max_depth = 0;
  std::vector<Placed> todo{{kRoot, 0}};
  while (!todo.empty()) {
    Placed p = todo.back();
    todo.pop_back();
    double w = total ? static_cast<double>(value[p.id]) / static_cast<double>(total) * plot : plot;
    if (p.id != kRoot && w < kMinWidth) continue;
    placed.push_back(p);
    max_depth = std::max(max_depth, nodes_[p.id].depth);
    std::vector<NodeId> c = sorted_children(p.id);
    uint64_t off = p.offset;
    std::vector<Placed> kids;
    for (NodeId k : c) {
      kids.push_back({k, off});
      off += value[k];
    }
    for (size_t i = kids.size(); i-- > 0;) todo.push_back(kids[i]);
  }

  const double height = kTop + (max_depth + 1) * kFrameHeight + kBottom;
  const std::string& id = options.id;
  auto it = std::back_inserter(out);
  if (options.xml_declaration) out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  fmt::format_to(it,
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"{0}\" class=\"ft-flamegraph\" "
                 "width=\"{1}\" height=\"{2}\" viewBox=\"0 0 {1} {2}\" "
                 "font-family=\"monospace\" font-size=\"12\" data-total=\"{3}\">\n",
                 id, width, height, total);
  fmt::format_to(it,
                 "<style>#{0} .f {{ cursor: pointer; }} #{0} .f:hover rect {{ stroke: #000; "
                 "stroke-width: 0.5; }} #{0} .f text {{ pointer-events: none; }} "
                 "#{0} .btn {{ cursor: pointer; fill: #36c; }}</style>\n",
                 id);
  fmt::format_to(it, "<rect id=\"{}-bg\" x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#fafaf2\"/>\n",
                 id, width, height);
  out += fmt::format("<text id=\"{}-title\" x=\"{}\" y=\"24\" text-anchor=\"middle\" "
                     "font-size=\"16\">",
                     id, width / 2);
  append_xml_escaped(out, options.title);
  out += "</text>\n";
  fmt::format_to(it,
                 "<text id=\"{0}-reset\" class=\"btn\" x=\"{1}\" y=\"24\" "
                 "style=\"display:none\">Reset Zoom</text>\n"
                 "<text id=\"{0}-search\" class=\"btn\" x=\"{2}\" y=\"24\" "
                 "text-anchor=\"end\">Search</text>\n"
                 "<text id=\"{0}-matched\" x=\"{2}\" y=\"{3}\" text-anchor=\"end\"></text>\n"
                 "<text id=\"{0}-details\" x=\"{1}\" y=\"{3}\"> </text>\n",
                 id, kPad, width - kPad, height - 10);
  fmt::format_to(it, "<g id=\"{}-frames\">\n", id);
  for (const Placed& p : placed) {
    const Node& n = nodes_[p.id];
    double x = kPad + (total ? static_cast<double>(p.offset) / static_cast<double>(total) * plot : 0);
    double w = total ? static_cast<double>(value[p.id]) / static_cast<double>(total) * plot : plot;
    double y = height - kBottom - (n.depth + 1) * kFrameHeight;
    fmt::format_to(it, "<g class=\"f\" data-o=\"{}\" data-v=\"{}\" data-d=\"{}\"><title>", p.offset,
                   value[p.id], n.depth);
    append_xml_escaped(out, n.name);
    out += " (";
    append_xml_escaped(out, format_value(value[p.id]));
    out += ", " + percent(value[p.id], total) + ")</title>";
    fmt::format_to(it,
                   "<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\" "
                   "rx=\"2\"/><text x=\"{:.2f}\" y=\"{}\">",
                   x, y, w, kFrameHeight - 1, frame_colour(n.name), x + 3, y + 11.5);
    append_xml_escaped(out, flame_label(n.name, w));
    out += "</text></g>\n";
  }
  out += "</g>\n<script><![CDATA[";
  std::string script(kScript);
  replace_all(script, "@ID@", id);
  replace_all(script, "@PAD@", fmt::format("{}", kPad));
  replace_all(script, "@PLOTW@", fmt::format("{}", plot));
  replace_all(script, "@CW@", fmt::format("{}", kCharWidth));
  replace_all(script, "@MINW@", fmt::format("{}", kMinWidth));
  replace_all(script, "@FIT@", options.fit_parent ? "true" : "false");
  out += script;
  out += "]]></script>\n</svg>\n";
}

}  // namespace ft::post
