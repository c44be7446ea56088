#include "postproc/report_calls.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "common/demangle.h"
#include "postproc/call_model.h"
#include "postproc/json_writer.h"

namespace ft::post {

namespace {

class CallsObserver : public CallObserver {
 public:
  explicit CallsObserver(std::optional<int64_t> tid) : tid_(tid) {}

  void on_call(int64_t tid, const Activation& a) override {
    if (tid_ && *tid_ != tid) return;
    FunctionStats& s = stats_for(a.function);
    ++s.calls;
    ++active_[tid][a.function];
  }

  void on_end(int64_t tid, const Activation& a, const ActivationEnd& end) override {
    if (tid_ && *tid_ != tid) return;
    FunctionStats& s = stats_for(a.function);
    uint32_t& open = active_[tid][a.function];
    if (open > 0) --open;
    if (open == 0) s.total_ns += end.inclusive_ns;
    s.self_ns += end.self_ns;
    if (end.kind == EndKind::kUnwound) ++s.unwound;
  }

  void end_process() override { active_.clear(); }

  std::vector<FunctionStats> take() {
    Demangler demangler;
    for (FunctionStats& s : stats_) s.name = demangler.full(s.mangled);
    std::sort(stats_.begin(), stats_.end(), [](const FunctionStats& a, const FunctionStats& b) {
      if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
      if (a.calls != b.calls) return a.calls > b.calls;
      if (a.name != b.name) return a.name < b.name;
      return a.mangled < b.mangled;
    });
    return std::move(stats_);
  }

 private:
  FunctionStats& stats_for(const std::string& mangled) {
    auto [it, inserted] = index_.try_emplace(mangled, stats_.size());
    if (inserted) stats_.push_back(FunctionStats{mangled, {}, 0, 0, 0, 0});
    return stats_[it->second];
  }

  std::optional<int64_t> tid_;
  std::vector<FunctionStats> stats_;
  std::unordered_map<std::string, size_t> index_;
  // Open activations per thread and function, to find the outermost one.
  std::unordered_map<int64_t, std::unordered_map<std::string, uint32_t>> active_;
};

}  // namespace

Result<std::vector<FunctionStats>> compute_call_stats(const ReportOptions& options,
                                                      Diagnostics& diag) {
  CallsObserver observer(options.tid);
  Status st = replay_traces(options.traces, observer, diag);
  if (!st) return st.error();
  return observer.take();
}

Status report_calls(const ReportOptions& options, Output& out, Diagnostics& diag) {
  auto stats = compute_call_stats(options, diag);
  if (!stats) return stats.error();

  std::string text;
  if (options.json) {
    JsonWriter w(text, 2);
    w.begin_object().key("functions").begin_array();
    for (const FunctionStats& s : *stats) {
      w.begin_object();
      w.key("name").string(s.name);
      w.key("mangled").string(s.mangled);
      w.key("calls").unsigned_integer(s.calls);
      w.key("total_ns").unsigned_integer(s.total_ns);
      w.key("self_ns").unsigned_integer(s.self_ns);
      w.key("avg_ns").unsigned_integer(s.avg_ns());
      w.key("unwound").unsigned_integer(s.unwound);
      w.end_object();
    }
    w.end_array().end_object();
    text += '\n';
    out.write(text);
    return {};
  }

  auto row = [&](std::string_view calls, std::string_view total, std::string_view self,
                 std::string_view avg, std::string_view name) {
    fmt::format_to(std::back_inserter(text), "{:>10}  {:>12}  {:>12}  {:>12}  {}\n", calls,
                   total, self, avg, name);
  };
  row("Calls", "Total time", "Self time", "Avg time", "Function");
  row("==========", "============", "============", "============", "========");
  for (const FunctionStats& s : *stats) {
    std::string name = s.name;
    if (s.unwound > 0) name += fmt::format("  ({} unwound)", s.unwound);
    row(fmt::format("{}", s.calls), format_duration(s.total_ns), format_duration(s.self_ns),
        format_duration(s.avg_ns()), name);
    out.write_when_large(text);
  }
  out.write(text);
  return {};
}

}  // namespace ft::post
