#include "postproc/report_flamegraph.h"

#include <functional>
#include <unordered_map>

#include <fmt/format.h>

#include "functracer/schema.h"
#include "common/demangle.h"
#include "postproc/call_model.h"
#include "postproc/heap_stacks.h"
#include "postproc/site_groups.h"

namespace ft::post {

namespace {

// Builds the call-metric graphs: mirrors the CallModel's stack of each thread with the
// graphs' nodes. Both graphs get the same child() calls in the same order, so a node
// has the same id in both.
class FlameCallObserver : public CallObserver {
 public:
  FlameCallObserver(std::optional<int64_t> tid, FlameGraph& time, FlameGraph& calls)
      : tid_(tid), time_(time), calls_(calls) {}

  void begin_process(const TraceReader& /*reader*/) override { stacks_.clear(); }
  void on_record(const TraceRecord& r) override {
    if (r.type == schema::type::kCall) ++call_records;
  }

  void on_call(int64_t tid, const Activation& a) override {
    if (tid_ && *tid_ != tid) return;
    std::vector<FlameGraph::NodeId>& stack = stacks_[tid];
    FlameGraph::NodeId parent = stack.empty() ? FlameGraph::kRoot : stack.back();
    const std::string& name = demangler_.full(a.function);
    FlameGraph::NodeId node = time_.child(parent, name);
    calls_.child(parent, name);
    calls_.add(node, 1);
    stack.push_back(node);
  }

  void on_end(int64_t tid, const Activation& /*a*/, const ActivationEnd& end) override {
    if (tid_ && *tid_ != tid) return;
    std::vector<FlameGraph::NodeId>& stack = stacks_[tid];
    if (stack.empty()) return;
    time_.add(stack.back(), end.self_ns);
    stack.pop_back();
  }

  uint64_t call_records = 0;

 private:
  std::optional<int64_t> tid_;
  FlameGraph& time_;
  FlameGraph& calls_;
  Demangler demangler_;
  std::unordered_map<int64_t, std::vector<FlameGraph::NodeId>> stacks_;
};

Result<std::vector<FlameGraph>> heap_graphs(const ReportOptions& options,
                                            std::span<const FlameMetric> metrics,
                                            Diagnostics& diag) {
  auto heap = collect_heap_stacks(options, diag);
  if (!heap) return heap.error();
  return heap_flame_graphs(*heap, metrics);
}

Result<std::vector<FlameGraph>> call_graphs(const ReportOptions& options,
                                            std::span<const FlameMetric> metrics,
                                            Diagnostics& diag) {
  FlameGraph time, calls;
  FlameCallObserver observer(options.tid, time, calls);
  if (Status st = replay_traces(options.traces, observer, diag); !st) return st.error();
  if (observer.call_records == 0) diag.warning("the traces hold no call records");
  std::vector<FlameGraph> graphs;
  for (FlameMetric m : metrics) graphs.push_back(m == FlameMetric::kTime ? time : calls);
  return graphs;
}

}  // namespace

std::vector<FlameGraph> heap_flame_graphs(const HeapStacks& heap, std::span<const FlameMetric> metrics) {
  std::vector<FlameGraph> graphs(metrics.size());
  std::vector<std::string> stack;
  for (const HeapStack& s : heap.stacks) {
    stack.clear();
    for (size_t i = s.frames.size(); i-- > 0;) stack.push_back(frame_name(s.frames[i]));
    stack.push_back(s.function);
    for (size_t i = 0; i < metrics.size(); ++i) {
      uint64_t v = s.values.of(metrics[i]);
      if (v > 0) graphs[i].add_stack(stack, v);
    }
  }
  return graphs;
}

std::optional<FlameMetric> parse_flame_metric(std::string_view name) {
  for (size_t i = 0; i < std::size(kFlameMetricNames); ++i) {
    if (kFlameMetricNames[i] == name) return static_cast<FlameMetric>(i);
  }
  return std::nullopt;
}

std::string_view flame_metric_name(FlameMetric metric) {
  return kFlameMetricNames[static_cast<size_t>(metric)];
}

bool is_heap_metric(FlameMetric metric) {
  return metric != FlameMetric::kTime && metric != FlameMetric::kCalls;
}

std::string format_flame_value(FlameMetric metric, uint64_t value) {
  switch (metric) {
    case FlameMetric::kTime: return format_duration(value);
    case FlameMetric::kCalls: return plural(value, "call", "calls");
    case FlameMetric::kAllocations: return plural(value, "allocation", "allocations");
    default: return plural(value, "byte", "bytes");
  }
}

Result<FlameMetric> choose_flame_metric(const ReportOptions& options, Diagnostics& diag) {
  bool calls = false, heap = false;
  std::string plugins;
  std::string unnamed;  // traces without a header naming their plugins (cut short?)
  for (const std::string& path : options.traces) {
    auto reader = TraceReader::open(path, diag);
    if (!reader) return reader.error();
    const TraceRecord* h = reader->header();
    calls = calls || header_lists_plugin(h, schema::plugin::kCalltrace);
    heap = heap || header_lists_plugin(h, schema::plugin::kMemtrace);
    const std::string* p = header_plugins(h);
    if (p == nullptr) unnamed += (unnamed.empty() ? "" : ", ") + path;
    if (plugins.empty() && p != nullptr) plugins = *p + " (" + path + ")";
  }
  std::string recorded = !plugins.empty()
                             ? "the traces were recorded with plugins " + plugins
                             : "no header record names the plugins in " + unnamed;
  if (options.metric.empty()) {
    if (calls) return FlameMetric::kTime;
    if (heap) return FlameMetric::kAllocated;
    return Error::msg("the flamegraph report needs call records (calltrace) or heap records "
                      "(memtrace), and " + recorded);
  }
  auto metric = parse_flame_metric(options.metric);
  if (!metric) return Error::msg("unknown flamegraph metric '" + options.metric + "'");
  if (is_heap_metric(*metric) && !heap) {
    return Error::msg("--metric " + options.metric + " needs heap records (functracer -e memtrace), and " +
                      recorded);
  }
  if (!is_heap_metric(*metric) && !calls) {
    return Error::msg("--metric " + options.metric +
                      " needs call records (functracer -e calltrace), and " + recorded);
  }
  return *metric;
}

Result<std::vector<FlameGraph>> build_flame_graphs(const ReportOptions& options,
                                                   std::span<const FlameMetric> metrics,
                                                   Diagnostics& diag) {
  if (metrics.empty()) return std::vector<FlameGraph>{};
  bool heap = is_heap_metric(metrics[0]);
  for (FlameMetric m : metrics) {
    if (is_heap_metric(m) != heap) return Error::msg("heap and call metrics are built apart");
  }
  return heap ? heap_graphs(options, metrics, diag) : call_graphs(options, metrics, diag);
}

Status report_flamegraph(const ReportOptions& options, Output& out, Diagnostics& all_diag) {
  OnceDiagnostics diag(all_diag);  // the traces are opened twice
  auto metric = choose_flame_metric(options, diag);
  if (!metric) return metric.error();
  if (!is_heap_metric(*metric)) {
    bool heap_filters = options.size.min != 0 || options.size.max != UINT64_MAX || options.from || options.to ||
                        !options.functions.empty() || !options.suppressions.empty();
    if (heap_filters) {
      return Error::msg("--size, --from, --to, --function and --suppressions apply to the heap "
                        "metrics, not to --metric " + std::string(flame_metric_name(*metric)));
    }
  }
  FlameMetric m = *metric;
  auto graphs = build_flame_graphs(options, std::span(&m, 1), diag);
  if (!graphs) return graphs.error();
  const FlameGraph& graph = graphs->front();
  std::string text;
  if (options.svg) {
    FlameGraph::SvgOptions svg;
    svg.title = fmt::format("Flame Graph: {} ({})", flame_metric_name(m),
                            format_flame_value(m, graph.total()));
    svg.format_value = [m](uint64_t v) { return format_flame_value(m, v); };
    graph.write_svg(text, svg);
  } else {
    graph.write_folded(text);
  }
  out.write(text);
  return {};
}

}  // namespace ft::post
