#include "postproc/report_chrome.h"

#include <algorithm>
#include <iterator>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "common/demangle.h"
#include "common/signal_names.h"
#include "common/trace_record.h"
#include "functracer/schema.h"
#include "postproc/call_model.h"
#include "postproc/call_values.h"
#include "postproc/json_writer.h"
#include "postproc/live_heap.h"

namespace ft::post {

namespace {

namespace key = schema::key;

// Where "ts": 0 is, and what otherData says about the session: the command line and
// executable of the trace that starts first.
struct Session {
  uint64_t zero_ns = 0;
  std::optional<int64_t> zero_realtime_ns;
  std::string command_line;
  std::string executable;
  size_t traces = 0;
};

// The earliest first record among the traces: they share CLOCK_MONOTONIC.
Result<Session> read_session(const std::vector<std::string>& paths) {
  Session s;
  bool first = true;
  for (const std::string& path : paths) {
    CollectingDiagnostics quiet;  // the main pass reports the problems once
    auto reader = TraceReader::open(path, quiet);
    if (!reader) return reader.error();
    const TraceRecord* r = reader->next();
    ++s.traces;
    if (!r) continue;
    const TraceRecord* h = reader->header();
    if (first || r->ts_ns < s.zero_ns) {
      // The process that started first: with -f, the one the user launched.
      s.zero_ns = r->ts_ns;
      s.zero_realtime_ns.reset();
      s.command_line.clear();
      s.executable.clear();
      if (h && h->ts_ns == r->ts_ns) s.zero_realtime_ns = h->get_int(key::kStartRealtimeNs);
      if (const std::string* c = h ? h->get_str(key::kCmdline) : nullptr) s.command_line = *c;
      if (const std::string* e = h ? h->get_str(key::kExe) : nullptr) s.executable = *e;
      first = false;
    }
  }
  return s;
}

std::string_view base_name(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

class ChromeObserver : public CallObserver {
 public:
  ChromeObserver(const ReportOptions& options, Output& out, uint64_t zero_ns)
      : options_(options), out_(out), zero_ns_(zero_ns) {}

  void begin_process(const TraceReader& reader) override {
    pid_ = reader.pid();
    exe_.clear();
    cmdline_.clear();
    threads_.clear();
    others_ = 0;
    heap_.clear();
    pending_.reset();
    memtrace_ = header_lists_plugin(reader.header(), schema::plugin::kMemtrace);
  }

  void on_record(const TraceRecord& r) override {
    bool shown = wanted(r.tid);
    if (shown) thread(r.tid);
    if (heap_.apply(r)) {
      sample(r.ts_ns, heap_.bytes());
    }
    namespace rt = schema::type;
    const std::string& type = r.type;
    // Each instant event carries the record's fields under the record's key names.
    if (type == rt::kHeader) {
      if (const std::string* e = r.get_str(key::kExe)) exe_ = *e;
      if (const std::string* c = r.get_str(key::kCmdline)) cmdline_ = *c;
      if (memtrace_) sample(r.ts_ns, 0);
    } else if (type == rt::kProcess) {
      begin_instant("process start", "process", r, 'p');
      int_field(r, key::kPpid);
      if (auto a = r.get_int(key::kAttached)) int_arg(key::kAttached, *a);
      end_instant();
    } else if (type == rt::kExec) {
      const std::string* e = r.get_str(key::kExe);
      if (e) exe_ = *e;
      begin_instant("exec", "process", r, 'p');
      str_arg(key::kExe, e ? *e : "");
      end_instant();
    } else if (type == rt::kExit) {
      instant_with_field("exit", "process", r, 'p', key::kStatus);
    } else if (type == rt::kKilled) {
      begin_instant("killed by " + signal_name(r), "process", r, 'p');
      int_field(r, key::kSignal);
      if (auto a = r.get_hex(key::kAddress)) str_arg(key::kAddress, fmt::format("{:#x}", *a));
      end_instant();
    } else if (type == rt::kDetach) {
      begin_instant("detach", "process", r, 'p');
      end_instant();
    } else if (!shown) {
      return;
    } else if (type == rt::kThread) {
      instant_with_field("thread start", "thread", r, 't', key::kParent);
    } else if (type == rt::kThreadExit) {
      instant_with_field("thread exit", "thread", r, 't', key::kStatus);
    } else if (type == rt::kSignal) {
      instant_with_field(signal_name(r), "signal", r, 't', key::kSignal);
    } else if (type == rt::kLost) {
      begin_instant("lost events", "thread", r, 't');
      int_field(r, key::kCount);
      const std::string* reason = r.get_str(key::kReason);
      str_arg(key::kReason, reason ? *reason : "");
      end_instant();
    }
  }

  void on_call(int64_t tid, const Activation& a) override {
    if (!wanted(tid)) return;
    ThreadState& t = thread(tid);
    // Keeps the flame chart well formed: a callee starts no earlier than its caller
    // and its previous sibling's end.
    t.frames.resize(a.level);
    uint64_t floor = a.level == 0 ? t.last_end : t.frames.back().children_end;
    uint64_t start = std::max(a.call_ts, floor);
    t.frames.push_back(Frame{start, start});
  }

  void on_end(int64_t tid, const Activation& a, const ActivationEnd& end) override {
    if (!wanted(tid)) return;
    ThreadState& t = thread(tid);
    if (t.frames.size() != a.level + 1) return;  // its call was not seen (cannot happen)
    Frame f = t.frames.back();
    t.frames.pop_back();
    uint64_t finish = std::max(end.ts, f.children_end);
    (t.frames.empty() ? t.last_end : t.frames.back().children_end) = finish;

    begin_event(demangler_.full(a.function), "call", 'X', f.start, tid);
    line_ += ",\"dur\":";
    append_us(finish - f.start);
    line_ += ",\"args\":{\"args\":";
    value_.clear();
    append_call_args(value_, a);
    append_json_string(line_, value_);
    value_.clear();
    if (append_return_value(value_, a, end)) {
      line_ += ",\"return\":";
      append_json_string(line_, value_);
    }
    if (end.kind == EndKind::kUnwound) {
      line_ += ",\"unwound\":";
      append_json_string(line_, end.reason);
    }
    if (end.implicit) line_ += ",\"implicit\":true";
    line_ += '}';
    end_event();
  }

  void end_process() override {
    if (pending_) write_sample();
    line_ = fmt::format("{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"name\":",
                        pid_);
    append_json_string(line_, fmt::format("{} (pid {})", base_name(exe_), pid_));
    line_ += "}";
    end_event();
    if (!cmdline_.empty()) {
      line_ = fmt::format(
          "{{\"name\":\"process_labels\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"labels\":", pid_);
      append_json_string(line_, cmdline_);
      line_ += "}";
      end_event();
    }
  }

  // Closes the traceEvents array and writes what is left of the object.
  void finish(const Session& s) {
    out_.write(first_ ? "{\"traceEvents\":[\n" : "\n");
    first_ = false;
    std::string tail = "],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"command_line\":";
    append_json_string(tail, s.command_line);
    tail += ",\"executable\":";
    append_json_string(tail, s.executable);
    fmt::format_to(std::back_inserter(tail),
                   ",\"traces\":{},\"clock\":\"CLOCK_MONOTONIC\",\"ts_zero_ns\":{}", s.traces,
                   s.zero_ns);
    if (s.zero_realtime_ns) {
      fmt::format_to(std::back_inserter(tail), ",\"ts_zero_realtime_ns\":{}", *s.zero_realtime_ns);
    }
    tail += "}}\n";
    out_.write(tail);
  }

 private:
  struct Frame {
    uint64_t start = 0;
    uint64_t children_end = 0;  // where the next callee may start
  };
  struct ThreadState {
    std::vector<Frame> frames;
    uint64_t last_end = 0;  // end of the last outermost activation
  };

  bool wanted(int64_t tid) const { return !options_.tid || *options_.tid == tid; }

  ThreadState& thread(int64_t tid) {
    auto [it, inserted] = threads_.try_emplace(tid);
    if (inserted) {
      std::string name = tid == pid_ ? "main" : fmt::format("thread {}", ++others_);
      line_ = fmt::format(
          "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":",
          pid_, tid);
      append_json_string(line_, name);
      line_ += "}";
      end_event();
      line_ = fmt::format(
          "{{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":{},\"tid\":{},"
          "\"args\":{{\"sort_index\":{}}}",
          pid_, tid, tid == pid_ ? 0 : others_);
      end_event();
    }
    return it->second;
  }

  // The record's signal name, or the name of its signal number.
  static std::string signal_name(const TraceRecord& r) {
    const std::string* name = r.get_str(key::kName);
    if (name && !name->empty()) return *name;
    return ft::signal_name(static_cast<int>(r.get_int(key::kSignal).value_or(0)));
  }

  void append_us(uint64_t ns) {
    fmt::format_to(std::back_inserter(line_), "{}.{:03}", ns / 1000, ns % 1000);
  }

  void begin_event(std::string_view name, std::string_view cat, char ph, uint64_t ts,
                   std::optional<int64_t> tid) {
    line_ = "{\"name\":";
    append_json_string(line_, name);
    line_ += ",\"cat\":";
    append_json_string(line_, cat);
    fmt::format_to(std::back_inserter(line_), ",\"ph\":\"{}\",\"ts\":", ph);
    append_us(ts >= zero_ns_ ? ts - zero_ns_ : 0);
    fmt::format_to(std::back_inserter(line_), ",\"pid\":{}", pid_);
    if (tid) fmt::format_to(std::back_inserter(line_), ",\"tid\":{}", *tid);
  }

  void begin_instant(std::string_view name, std::string_view cat, const TraceRecord& r,
                     char scope) {
    begin_event(name, cat, 'i', r.ts_ns, r.tid);
    fmt::format_to(std::back_inserter(line_), ",\"s\":\"{}\",\"args\":{{", scope);
    first_arg_ = true;
  }

  void arg_key(std::string_view key) {
    if (!first_arg_) line_ += ',';
    first_arg_ = false;
    append_json_string(line_, key);
    line_ += ':';
  }
  void int_arg(std::string_view key, int64_t v) {
    arg_key(key);
    fmt::format_to(std::back_inserter(line_), "{}", v);
  }
  void str_arg(std::string_view key, std::string_view v) {
    arg_key(key);
    append_json_string(line_, v);
  }

  void end_instant() {
    line_ += '}';  // args
    end_event();
  }
  // The record's integer field `key` (0 when missing) as the argument of that name.
  void int_field(const TraceRecord& r, const char* key) { int_arg(key, r.get_int(key).value_or(0)); }
  // An instant event whose one argument is the record's integer field `key`.
  void instant_with_field(std::string_view name, std::string_view cat, const TraceRecord& r,
                          char scope, const char* key) {
    begin_instant(name, cat, r, scope);
    int_field(r, key);
    end_instant();
  }

  void end_event() {
    line_ += '}';
    out_.write(first_ ? "{\"traceEvents\":[\n" : ",\n");
    first_ = false;
    out_.write(line_);
  }

  void sample(uint64_t ts, uint64_t bytes) {
    if (pending_ && pending_->first != ts) write_sample();
    pending_ = {ts, bytes};
  }

  void write_sample() {
    begin_event("heap", "memory", 'C', pending_->first, std::nullopt);
    fmt::format_to(std::back_inserter(line_), ",\"args\":{{\"live_bytes\":{}}}",
                   pending_->second);
    end_event();
    pending_.reset();
  }

  const ReportOptions& options_;
  Output& out_;
  uint64_t zero_ns_;
  Demangler demangler_;
  bool first_ = true;
  std::string line_;
  std::string value_;
  bool first_arg_ = true;

  int64_t pid_ = 0;
  std::string exe_;
  std::string cmdline_;
  std::unordered_map<int64_t, ThreadState> threads_;
  uint64_t others_ = 0;
  bool memtrace_ = false;
  LiveHeap heap_;
  std::optional<std::pair<uint64_t, uint64_t>> pending_;  // heap sample: ts, bytes
};

}  // namespace

Status report_chrome(const ReportOptions& options, Output& out, Diagnostics& diag) {
  auto session = read_session(options.traces);
  if (!session) return session.error();
  ChromeObserver observer(options, out, session->zero_ns);
  if (Status st = replay_traces(options.traces, observer, diag); !st) return st;
  observer.finish(*session);
  return {};
}

}  // namespace ft::post
