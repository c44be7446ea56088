#include "postproc/report_dot.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "common/demangle.h"
#include "functracer/schema.h"
#include "postproc/call_model.h"
#include "postproc/heap_counts.h"
#include "postproc/heap_session.h"

namespace ft::post {

namespace {

enum class Metric { kCalls, kTime, kBytes };

struct Node {
  std::string name;  // demangled
  uint64_t calls = 0;
  uint64_t self = 0;   // ns, or bytes
  uint64_t total = 0;  // ns, or bytes
};

struct Edge {
  uint64_t count = 0;   // calls, or allocations
  uint64_t weight = 0;  // ns of those calls, or bytes
};

struct Graph {
  std::vector<Node> nodes;
  std::map<std::pair<size_t, size_t>, Edge> edges;  // (caller, callee)
  std::unordered_map<std::string, size_t> index;    // key -> node

  size_t node(const std::string& key, const std::string& name) {
    auto [it, inserted] = index.try_emplace(key, nodes.size());
    if (inserted) nodes.push_back(Node{name, 0, 0, 0});
    return it->second;
  }
};

class CallGraphObserver : public CallObserver {
 public:
  CallGraphObserver(Graph& graph, std::optional<int64_t> tid) : graph_(graph), tid_(tid) {}

  void on_call(int64_t tid, const Activation& a) override {
    if (tid_ && *tid_ != tid) return;
    size_t n = graph_.node(a.function, demangler_.full(a.function));
    ++graph_.nodes[n].calls;
    std::vector<size_t>& stack = stacks_[tid];
    stack.resize(a.level);
    stack.push_back(n);
    ++open_[tid][n];
  }

  void on_end(int64_t tid, const Activation& a, const ActivationEnd& end) override {
    if (tid_ && *tid_ != tid) return;
    std::vector<size_t>& stack = stacks_[tid];
    if (stack.size() <= a.level) return;  // not seen starting
    size_t n = stack[a.level];
    Node& node = graph_.nodes[n];
    node.self += end.self_ns;
    uint32_t& open = open_[tid][n];
    if (open > 0) --open;
    if (open == 0) node.total += end.inclusive_ns;  // recursion: the outermost only
    if (a.level > 0) {
      Edge& e = graph_.edges[{stack[a.level - 1], n}];
      ++e.count;
      if (open == 0) e.weight += end.inclusive_ns;  // recursion: the outermost only
    }
    stack.resize(a.level);
  }

  void end_process() override {
    stacks_.clear();
    open_.clear();
  }

 private:
  Graph& graph_;
  std::optional<int64_t> tid_;
  Demangler demangler_;
  std::unordered_map<int64_t, std::vector<size_t>> stacks_;
  std::unordered_map<int64_t, std::unordered_map<size_t, uint32_t>> open_;
};

Status heap_graph(const ReportOptions& options, Graph& graph, Diagnostics& diag) {
  HeapSession session(diag, options.resolve);
  SiteCounter counter;
  if (auto r = session.replay(options.traces, counter, heap_replay_options(options)); !r) {
    return r.error();
  }
  Demangler demangler;
  for (const auto& [site, counts] : counter.per_site()) {
    if (counts.allocations == 0) continue;
    // Outermost first, the allocator last.
    std::vector<size_t> path;
    std::vector<ReportFrame> frames = session.grouper().resolve(site);
    for (auto f = frames.rbegin(); f != frames.rend(); ++f) {
      std::string name = f->function ? *f->function : fmt::format("{:#x}", f->address);
      path.push_back(graph.node(name, name));
    }
    const std::string& allocator = session.sites().function(site);
    std::string name = demangler.full(allocator);
    path.push_back(graph.node(name, name));

    std::vector<size_t> seen;
    for (size_t i = 0; i < path.size(); ++i) {
      if (std::find(seen.begin(), seen.end(), path[i]) == seen.end()) {
        seen.push_back(path[i]);
        graph.nodes[path[i]].total += counts.allocated_bytes;
      }
    }
    Node& leaf = graph.nodes[path.back()];
    leaf.self += counts.allocated_bytes;
    leaf.calls += counts.allocations;
    std::vector<std::pair<size_t, size_t>> edges;
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      std::pair<size_t, size_t> e{path[i], path[i + 1]};
      if (std::find(edges.begin(), edges.end(), e) != edges.end()) continue;
      edges.push_back(e);
      Edge& edge = graph.edges[e];
      edge.count += counts.allocations;
      edge.weight += counts.allocated_bytes;
    }
  }
  return {};
}

// Blue (light) to red (heavy), as graphviz's "H S V" colours.
std::string colour(double f) { return fmt::format("{:.3f} 0.850 0.800", 0.650 * (1.0 - f)); }

std::string amount(Metric metric, uint64_t v) {
  return metric == Metric::kBytes ? plural(v, "byte", "bytes") : format_duration(v);
}

}  // namespace

std::string dot_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

Status report_dot(const ReportOptions& options, Output& out, Diagnostics& diag) {
  Metric metric = Metric::kCalls;
  if (options.metric == "time") {
    metric = Metric::kTime;
  } else if (options.metric == "bytes") {
    metric = Metric::kBytes;
  } else if (options.metric.empty()) {
    bool calltrace = false;
    for (const std::string& path : options.traces) {
      CollectingDiagnostics quiet;
      auto reader = TraceReader::open(path, quiet);
      if (!reader) return reader.error();
      calltrace = calltrace || header_lists_plugin(reader->header(), schema::plugin::kCalltrace);
    }
    if (!calltrace) metric = Metric::kBytes;
  }

  Graph graph;
  if (metric == Metric::kBytes) {
    if (Status st = heap_graph(options, graph, diag); !st) return st;
  } else {
    CallGraphObserver observer(graph, options.tid);
    if (Status st = replay_traces(options.traces, observer, diag); !st) return st;
  }

  if (graph.nodes.empty()) {
    diag.warning(metric == Metric::kBytes
                     ? "no allocations in the traces: the graph is empty (trace with memtrace)"
                     : "no calls in the traces: the graph is empty (trace with calltrace, or "
                       "use --metric=bytes for memtrace traces)");
  }
  auto node_weight = [&](const Node& n) { return metric == Metric::kCalls ? n.calls : n.total; };
  auto edge_weight = [&](const Edge& e) { return metric == Metric::kCalls ? e.count : e.weight; };
  uint64_t max_node = 1, max_edge = 1;
  for (const Node& n : graph.nodes) max_node = std::max(max_node, node_weight(n));
  for (const auto& [key, e] : graph.edges) max_edge = std::max(max_edge, edge_weight(e));
  auto fraction = [](uint64_t v, uint64_t max) {
    return static_cast<double>(v) / static_cast<double>(max);
  };

  std::string text;
  auto it = std::back_inserter(text);
  text += "digraph functracer {\n";
  fmt::format_to(it, "  graph [label=\"{}\", labelloc=t];\n",
                 dot_escape(metric == Metric::kBytes ? "functracer: allocated bytes by backtrace"
                            : metric == Metric::kTime ? "functracer: call graph, by time"
                                                      : "functracer: call graph, by calls"));
  text += "  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n";
  text += "  edge [fontname=\"Helvetica\"];\n";
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& n = graph.nodes[i];
    std::string label = n.name + "\n";
    if (metric == Metric::kBytes) {
      label += fmt::format("total {}\nself {}", amount(metric, n.total), amount(metric, n.self));
      if (n.calls > 0) label += "\n" + plural(n.calls, "allocation", "allocations");
    } else {
      label += fmt::format("total {}\nself {}\n{}", format_duration(n.total),
                           format_duration(n.self), plural(n.calls, "call", "calls"));
    }
    double f = fraction(node_weight(n), max_node);
    fmt::format_to(it, "  f{} [label=\"{}\", penwidth={:.2f}, color=\"{}\"];\n", i,
                   dot_escape(label), 1.0 + 3.0 * f, colour(f));
  }
  for (const auto& [key, e] : graph.edges) {
    std::string label;
    if (metric == Metric::kBytes) {
      label = plural(e.weight, "byte", "bytes") + "\n" +
              plural(e.count, "allocation", "allocations");
    } else if (metric == Metric::kTime) {
      label = format_duration(e.weight) + "\n" + plural(e.count, "call", "calls");
    } else {
      label = plural(e.count, "call", "calls");
    }
    double f = fraction(edge_weight(e), max_edge);
    fmt::format_to(it, "  f{} -> f{} [label=\"{}\", penwidth={:.2f}, color=\"{}\"];\n",
                   key.first, key.second, dot_escape(label), 1.0 + 4.0 * f, colour(f));
  }
  text += "}\n";
  out.write(text);
  return {};
}

}  // namespace ft::post
