#include "postproc/report_massif.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "functracer/schema.h"
#include "postproc/heap_session.h"
#include "postproc/peak_tracker.h"

namespace ft::post {

namespace {

constexpr size_t kMaxSnapshots = 100;  // massif's --max-snapshots default
constexpr size_t kDetailedFreq = 10;   // massif's --detailed-freq default
constexpr double kThreshold = 1.0;     // percent, massif's --threshold default
constexpr std::string_view kRootLabel =
    "(heap allocation functions) malloc/new/new[], --alloc-fns, etc.";

struct TreeNode {
  uint64_t bytes = 0;
  std::string label;
  std::map<std::string, size_t> children;  // label -> index in the node vector
};

void append_node(std::string& out, const std::vector<TreeNode>& nodes, size_t index, size_t depth,
                 uint64_t total) {
  const TreeNode& node = nodes[index];
  std::vector<size_t> kids;
  for (const auto& [label, child] : node.children) kids.push_back(child);
  std::stable_sort(kids.begin(), kids.end(),
                   [&](size_t a, size_t b) { return nodes[a].bytes > nodes[b].bytes; });
  std::vector<size_t> shown;
  uint64_t below_bytes = 0;
  size_t below = 0;
  for (size_t k : kids) {
    bool significant = total != 0 && static_cast<double>(nodes[k].bytes) * 100.0 /
                                             static_cast<double>(total) >=
                                         kThreshold;
    if (significant) {
      shown.push_back(k);
    } else {
      below_bytes += nodes[k].bytes;
      ++below;
    }
  }
  auto it = std::back_inserter(out);
  fmt::format_to(it, "{:{}}n{}: {} {}\n", "", depth, shown.size() + (below > 0 ? 1 : 0),
                 node.bytes, node.label);
  for (size_t k : shown) append_node(out, nodes, k, depth + 1, total);
  if (below > 0) {
    fmt::format_to(it, "{:{}}n0: {} in {} place{}, {}below massif's threshold ({:.2f}%)\n", "",
                   depth + 1, below_bytes, below, below == 1 ? "" : "s",
                   below == 1 ? "" : "all ", kThreshold);
  }
}

// "0x4011A6: build_table (/src/heapshape.c:101)", as valgrind labels a code location.
std::string frame_label(const ReportFrame& f) {
  std::string label = fmt::format("0x{:X}: {}", f.address, f.function ? *f.function : "???");
  if (f.file && f.line) {
    label += fmt::format(" ({}:{})", *f.file, *f.line);
  } else if (f.module) {
    label += fmt::format(" (in {})", *f.module);
  }
  // A newline would end the tree line early; massif's readers know no escapes.
  std::replace(label.begin(), label.end(), '\n', ' ');
  return label;
}

// The first pass: where the peak is, how many heap events there are and when the
// last one happened.
class SpanObserver : public HeapObserver {
 public:
  void on_alloc(const Block& b) override {
    tracker_.alloc(b);
    seen(b.time_ns);
  }
  void on_free(const Block& b, const Moment& when) override {
    tracker_.release(b);
    seen(when.time_ns);
  }
  void on_discard(const Block& b, const Moment& when) override {
    tracker_.release(b);
    seen(when.time_ns);
  }
  void end_process(const TraceReader& /*reader*/) override {
    peak_seq = tracker_.peak().blocks > 0 ? std::optional(tracker_.peak_seq()) : std::nullopt;
  }

  uint64_t last_ns = 0;
  uint64_t events = 0;
  std::optional<uint64_t> peak_seq;

 private:
  void seen(uint64_t time_ns) {
    last_ns = std::max(last_ns, time_ns);
    ++events;
  }
  PeakTracker tracker_;
};

enum class TreeKind { kEmpty, kDetailed, kPeak };

struct Snapshot {
  uint64_t time_ns = 0;
  uint64_t heap_bytes = 0;
  TreeKind tree = TreeKind::kEmpty;
  std::vector<std::pair<SiteId, LiveCount>> per_site;  // detailed and peak
};

// The second pass: the snapshots, spread evenly over the heap events rather than
// over the clock. A program's heap events often come in bursts (and the tracer's
// start-up, or a program that spends its time computing, makes the clock longer
// than the heap's activity): snapshots evenly spaced in time would then fall on
// moments without a change and show the heap's shape in two or three points.
class SnapshotObserver : public HeapObserver {
 public:
  SnapshotObserver(uint64_t last_ns, uint64_t events, std::optional<uint64_t> peak_seq)
      : last_ns_(last_ns), events_(events), peak_seq_(peak_seq) {}

  void on_alloc(const Block& b) override {
    tracker_.alloc(b);
    bool peak = peak_seq_ && b.seq == *peak_seq_;
    if (peak) take(b.time_ns, true);
    after_event(b.time_ns, peak);
  }
  void on_free(const Block& b, const Moment& when) override {
    tracker_.release(b);
    after_event(when.time_ns, false);
  }
  // The heap at the end stays in the last snapshot; an exec empties it.
  void on_discard(const Block& b, const Moment& when) override {
    tracker_.release(b);
    after_event(when.time_ns, false);
  }
  void end_process(const TraceReader& /*reader*/) override {
    if (snapshots.empty()) take(last_ns_, false);
  }

  std::vector<Snapshot> snapshots;

 private:
  static constexpr size_t kRegular = kMaxSnapshots - 1;  // the peak is the other one

  // The number of heap events after which regular snapshot k is due: the last one
  // after the last event, one after every event when there are fewer than kRegular.
  uint64_t due(size_t k) const {
    auto n = static_cast<unsigned __int128>(events_) * (k + 1);
    return static_cast<uint64_t>((n + kRegular - 1) / kRegular);
  }
  void after_event(uint64_t time_ns, bool peak_taken) {
    ++seen_;
    bool is_due = false;
    while (next_ < kRegular && due(next_) <= seen_) {
      ++next_;
      is_due = true;
    }
    // The peak snapshot already shows the heap after this event.
    if (is_due && !peak_taken) take(time_ns, false);
  }
  void take(uint64_t time_ns, bool peak) {
    Snapshot s;
    s.time_ns = time_ns;
    s.heap_bytes = tracker_.now().bytes;
    if (peak) {
      s.tree = TreeKind::kPeak;
    } else if (snapshots.size() % kDetailedFreq == kDetailedFreq - 1) {
      s.tree = TreeKind::kDetailed;
    }
    if (s.tree != TreeKind::kEmpty) s.per_site = tracker_.live_now();
    snapshots.push_back(std::move(s));
  }

  uint64_t last_ns_;
  uint64_t events_;
  std::optional<uint64_t> peak_seq_;
  PeakTracker tracker_;
  uint64_t seen_ = 0;
  size_t next_ = 0;
};

}  // namespace

void append_massif_tree(std::string& out, const std::vector<MassifStack>& stacks, uint64_t total) {
  std::vector<TreeNode> nodes(1);
  nodes[0].label = kRootLabel;
  for (const MassifStack& s : stacks) {
    nodes[0].bytes += s.bytes;
    size_t at = 0;
    for (const std::string& label : s.labels) {
      auto [it, inserted] = nodes[at].children.try_emplace(label, nodes.size());
      size_t child = it->second;
      if (inserted) nodes.push_back(TreeNode{0, label, {}});
      nodes[child].bytes += s.bytes;
      at = child;
    }
  }
  append_node(out, nodes, 0, 0, total);
}

Status report_massif(const ReportOptions& options, Output& out, Diagnostics& diag) {
  if (options.traces.size() != 1) {
    return Error::msg(fmt::format(
        "the massif report writes one process per file: give it one trace, not {} "
        "(run it once per trace file)",
        options.traces.size()));
  }
  HeapReplayOptions replay = heap_replay_options(options);

  CollectingDiagnostics first_pass_diag;  // the second pass says the same again
  HeapSession first(first_pass_diag, options.resolve);
  SpanObserver span;
  if (auto r = first.replay(options.traces, span, replay); !r) return r.error();

  HeapSession session(diag, options.resolve);
  SnapshotObserver observer(span.last_ns, span.events, span.peak_seq);
  if (auto r = session.replay(options.traces, observer, replay); !r) return r.error();

  std::string cmd = options.traces[0];
  int64_t pid = 0;
  if (auto reader = TraceReader::open(options.traces[0], first_pass_diag); reader) {
    pid = reader->pid();
    if (const TraceRecord* h = reader->header()) {
      if (const std::string* c = h->get_str(schema::key::kCmdline)) cmd = *c;
    }
  }

  std::string text;
  auto it = std::back_inserter(text);
  fmt::format_to(it, "desc: functracer trace {} (pid {}{})\n", options.traces[0], pid,
                 options.tid ? fmt::format(", thread {}", *options.tid) : std::string());
  std::replace(text.begin(), text.end() - 1, '\n', ' ');
  std::replace(cmd.begin(), cmd.end(), '\n', ' ');
  fmt::format_to(it, "cmd: {}\ntime_unit: ms\n", cmd);

  std::unordered_map<SiteId, std::vector<std::string>> labels;
  for (size_t i = 0; i < observer.snapshots.size(); ++i) {
    const Snapshot& s = observer.snapshots[i];
    fmt::format_to(it,
                   "#-----------\nsnapshot={}\n#-----------\ntime={}\nmem_heap_B={}\n"
                   "mem_heap_extra_B=0\nmem_stacks_B=0\nheap_tree={}\n",
                   i, s.time_ns / 1000'000, s.heap_bytes,
                   s.tree == TreeKind::kEmpty      ? "empty"
                   : s.tree == TreeKind::kDetailed ? "detailed"
                                                   : "peak");
    if (s.tree != TreeKind::kEmpty) {
      std::vector<MassifStack> stacks;
      for (const auto& [site, live] : s.per_site) {
        auto [l, inserted] = labels.try_emplace(site);
        if (inserted) {
          for (const ReportFrame& f : session.grouper().resolve(site))
            l->second.push_back(frame_label(f));
        }
        stacks.push_back(MassifStack{l->second, live.bytes});
      }
      append_massif_tree(text, stacks, s.heap_bytes);
    }
    out.write_when_large(text);
  }
  out.write(text);
  return {};
}

}  // namespace ft::post
