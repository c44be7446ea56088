#include "postproc/report_speedscope.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "common/demangle.h"
#include "functracer/schema.h"
#include "postproc/call_model.h"
#include "postproc/heap_stacks.h"
#include "postproc/json_writer.h"

namespace ft::post {

namespace {

// speedscope's shared frame table: one entry per distinct (name, file, line).
class FrameTable {
 public:
  uint32_t index(const std::string& name, const std::optional<std::string>& file = std::nullopt,
                 std::optional<int64_t> line = std::nullopt) {
    Key k{name, file.value_or(""), line.value_or(-1)};
    auto [it, added] = index_.emplace(std::move(k), static_cast<uint32_t>(order_.size()));
    if (added) order_.push_back(&it->first);
    return it->second;
  }
  void write(JsonWriter& w) const {
    w.begin_array();
    for (const Key* k : order_) {
      w.begin_object();
      w.key("name").string(std::get<0>(*k));
      if (!std::get<1>(*k).empty()) w.key("file").string(std::get<1>(*k));
      if (std::get<2>(*k) >= 0) w.key("line").integer(std::get<2>(*k));
      w.end_object();
    }
    w.end_array();
  }

 private:
  using Key = std::tuple<std::string, std::string, int64_t>;
  std::map<Key, uint32_t> index_;
  std::vector<const Key*> order_;
};

struct FrameEvent {
  bool open = false;
  uint32_t frame = 0;
  uint64_t at = 0;  // trace clock, ns
};

struct ThreadEvents {
  std::string name;
  std::vector<FrameEvent> events;
  uint64_t last = 0;
};

class EventedObserver : public CallObserver {
 public:
  EventedObserver(std::optional<int64_t> tid, FrameTable& frames) : tid_(tid), frames_(frames) {}

  void begin_process(const TraceReader& reader) override {
    pid_ = reader.pid();
    const TraceRecord* h = reader.header();
    const std::string* exe = h ? h->get_str(schema::key::kExe) : nullptr;
    std::string_view e = exe ? std::string_view(*exe) : std::string_view("process");
    if (size_t slash = e.rfind('/'); slash != std::string_view::npos) e.remove_prefix(slash + 1);
    exe_ = std::string(e);
    calltrace = calltrace || header_lists_plugin(h, schema::plugin::kCalltrace);
    memtrace = memtrace || header_lists_plugin(h, schema::plugin::kMemtrace);
    current_.clear();
  }

  void on_record(const TraceRecord& r) override {
    // A trace cut before its header still shows what it recorded.
    if (r.type == schema::type::kAlloc) memtrace = true;
  }

  void on_call(int64_t tid, const Activation& a) override {
    if (tid_ && *tid_ != tid) return;
    ThreadEvents& t = thread(tid);
    add(t, true, frames_.index(demangler_.full(a.function)), a.call_ts);
  }

  void on_end(int64_t tid, const Activation& a, const ActivationEnd& end) override {
    if (tid_ && *tid_ != tid) return;
    ThreadEvents& t = thread(tid);
    add(t, false, frames_.index(demangler_.full(a.function)), end.ts);
  }

  std::vector<ThreadEvents> threads;  // in order of first call
  bool calltrace = false, memtrace = false;

 private:
  ThreadEvents& thread(int64_t tid) {
    auto [it, added] = current_.emplace(tid, threads.size());
    if (added) {
      threads.emplace_back();
      threads.back().name = fmt::format("{} pid {} tid {}", exe_, pid_, tid);
    }
    return threads[it->second];
  }
  static void add(ThreadEvents& t, bool open, uint32_t frame, uint64_t at) {
    at = std::max(at, t.last);
    t.last = at;
    t.events.push_back({open, frame, at});
  }

  std::optional<int64_t> tid_;
  FrameTable& frames_;
  Demangler demangler_;
  int64_t pid_ = 0;
  std::string exe_;
  std::unordered_map<int64_t, size_t> current_;  // tid -> threads index, this process
};

struct SampledProfile {
  std::string_view name;
  std::string_view unit;
  uint64_t HeapValues::*value;
};

constexpr SampledProfile kHeapProfiles[] = {
    {"allocated", "bytes", &HeapValues::allocated},
    {"allocations", "none", &HeapValues::allocations},
    {"leaked", "bytes", &HeapValues::leaked},
    {"leaked blocks", "none", &HeapValues::leaked_blocks},
    {"peak", "bytes", &HeapValues::peak},
    {"temporary", "bytes", &HeapValues::temporary},
    {"temporary allocations", "none", &HeapValues::temporary_count},
};

}  // namespace

Status report_speedscope(const ReportOptions& options, Output& out, Diagnostics& all_diag) {
  OnceDiagnostics diag(all_diag);  // the traces are read twice
  FrameTable frames;
  EventedObserver calls(options.tid, frames);
  if (Status st = replay_traces(options.traces, calls, diag); !st) return st.error();
  if (!calls.calltrace && !calls.memtrace && calls.threads.empty()) {
    // Still a valid file, with no profile: a trace cut short may not have reached its
    // first record.
    diag.warning("the traces hold no call records (calltrace) or heap records (memtrace): "
                 "the speedscope file has no profile");
  }

  // Heap stacks as speedscope samples: frame indices, outermost first.
  std::vector<std::vector<uint32_t>> samples;
  std::vector<HeapValues> values;
  if (calls.memtrace) {
    auto heap = collect_heap_stacks(options, diag);
    if (!heap) return heap.error();
    for (const HeapStack& s : heap->stacks) {
      std::vector<uint32_t> stack;
      for (size_t i = s.frames.size(); i-- > 0;) {
        const ReportFrame& f = s.frames[i];
        stack.push_back(frames.index(frame_name(f), f.file, f.line));
      }
      stack.push_back(frames.index(s.function));
      samples.push_back(std::move(stack));
      values.push_back(s.values);
    }
  }

  uint64_t zero = std::numeric_limits<uint64_t>::max();
  for (const ThreadEvents& t : calls.threads) {
    if (!t.events.empty()) zero = std::min(zero, t.events.front().at);
  }

  std::string text;
  JsonWriter w(text, 0);
  w.begin_object();
  w.key("$schema").string("https://www.speedscope.app/file-format-schema.json");
  w.key("exporter").string("functracer-postproc speedscope");
  w.key("name").string("functracer");
  w.key("activeProfileIndex").unsigned_integer(0);
  w.key("shared").begin_object().key("frames");
  frames.write(w);
  w.end_object();
  w.key("profiles").begin_array();
  for (const ThreadEvents& t : calls.threads) {
    w.begin_object();
    w.key("type").string("evented");
    w.key("name").string(t.name);
    w.key("unit").string("nanoseconds");
    w.key("startValue").unsigned_integer(t.events.front().at - zero);
    w.key("endValue").unsigned_integer(t.events.back().at - zero);
    w.key("events").begin_array();
    for (const FrameEvent& e : t.events) {
      w.begin_object();
      w.key("type").string(e.open ? "O" : "C");
      w.key("frame").unsigned_integer(e.frame);
      w.key("at").unsigned_integer(e.at - zero);
      w.end_object();
      out.write_when_large(text);
    }
    w.end_array();
    w.end_object();
  }
  for (const SampledProfile& p : kHeapProfiles) {
    uint64_t total = 0;
    for (const HeapValues& v : values) total += v.*p.value;
    if (total == 0) continue;
    w.begin_object();
    w.key("type").string("sampled");
    w.key("name").string(p.name);
    w.key("unit").string(p.unit);
    w.key("startValue").unsigned_integer(0);
    w.key("endValue").unsigned_integer(total);
    w.key("samples").begin_array();
    for (size_t i = 0; i < samples.size(); ++i) {
      if (values[i].*p.value == 0) continue;
      w.begin_array();
      for (uint32_t f : samples[i]) w.unsigned_integer(f);
      w.end_array();
      out.write_when_large(text);
    }
    w.end_array();
    w.key("weights").begin_array();
    for (const HeapValues& v : values) {
      if (v.*p.value != 0) w.unsigned_integer(v.*p.value);
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  text += '\n';
  out.write(text);
  return {};
}

}  // namespace ft::post
