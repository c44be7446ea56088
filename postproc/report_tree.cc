#include "postproc/report_tree.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "common/demangle.h"
#include "common/signal_names.h"
#include "common/trace_record.h"
#include "functracer/call_tree.h"
#include "functracer/schema.h"
#include "postproc/call_model.h"
#include "postproc/call_values.h"
#include "postproc/json_writer.h"
#include "postproc/symbolizer.h"

namespace ft::post {

namespace {

// A note ("<signal SIGSEGV>", "<lost 3 events>", "<exec /bin/ls>") for a record that
// is not a call or a return, or nothing.
std::optional<std::string> note_of(const TraceRecord& r) {
  if (r.type == schema::type::kSignal) {
    std::string text = "<signal ";
    const std::string* name = r.get_str(schema::key::kName);
    if (name && !name->empty()) {
      text += *name;
    } else {
      text += signal_name(static_cast<int>(r.get_int(schema::key::kSignal).value_or(0)));
    }
    return text + ">";
  }
  if (r.type == schema::type::kLost) {
    const std::string* reason = r.get_str(schema::key::kReason);
    return fmt::format("<lost {} events{}{}>", r.get_int(schema::key::kCount).value_or(0), reason ? ": " : "",
                       reason ? *reason : "");
  }
  if (r.type == schema::type::kExec) {
    std::string text = "<exec ";
    if (const std::string* exe = r.get_str(schema::key::kExe)) {
      append_quoted(text, *exe);  // a path may hold any byte, even a newline
    } else {
      text += '?';
    }
    return text + ">";
  }
  return std::nullopt;
}

// The return value as the tree shows it, or nothing (void, unwound).
std::string return_text(const Activation& a, const ActivationEnd& end) {
  std::string v;
  if (!append_return_value(v, a, end)) v.clear();
  return v;
}

class TreeObserver : public CallObserver {
 public:
  TreeObserver(const ReportOptions& options, Output& out, Diagnostics& diag)
      : options_(options), out_(out), style_{options.time, options.time_filter_ns},
        symbolizer_(diag, options.resolve) {}

  void begin_process(const TraceReader& reader) override {
    pid_ = reader.pid();
    symbolizer_.begin_process();
  }

  void on_record(const TraceRecord& r) override {
    if (auto text = note_of(r))
      if (ThreadOut* t = thread(r.tid)) t->layout.note(*text);
    if (r.type == schema::type::kModule || r.type == schema::type::kExec) symbolizer_.observe(r);
  }

  void on_call(int64_t tid, const Activation& a) override {
    ThreadOut* t = thread(tid);
    if (!t) return;
    std::string text = demangler_.short_name(a.function);
    text += '(';
    append_call_args(text, a);
    text += ')';
    t->layout.call(a.level, text, {}, site_of(a));
  }

  void on_end(int64_t tid, const Activation& a, const ActivationEnd& end) override {
    ThreadOut* t = thread(tid);
    if (!t) return;
    uint64_t duration = end.inclusive_ns;
    if (end.kind == EndKind::kReturn)
      t->layout.ret(a.level, return_text(a, end), duration);
    else
      t->layout.unwound(a.level, end.reason, duration);
  }

  void end_process() override {
    for (size_t i = 0; i < threads_.size(); ++i) {
      threads_[i]->layout.finish();
      if (i > 0) write_section_header(threads_[i]->tid);
      out_.write(threads_[i]->text);
    }
    threads_.clear();
    index_.clear();
  }

 private:
  struct ThreadOut {
    ThreadOut(int64_t id, CallTreeStyle style)
        : tid(id), layout(style, [this](std::string_view line) {
            text += line;
            text += '\n';
          }) {}
    int64_t tid;
    std::string text;
    CallTreeLayout layout;
  };

  // Sections come out in order of the threads' first appearance, so the first
  // thread's section is written as it grows; only the others are held back until the
  // end of the process.
  ThreadOut* thread(int64_t tid) {
    if (options_.tid && *options_.tid != tid) return nullptr;
    auto [it, inserted] = index_.try_emplace(tid, threads_.size());
    if (inserted) {
      if (threads_.empty()) write_section_header(tid);
      threads_.push_back(std::make_unique<ThreadOut>(tid, style_));
    }
    ThreadOut* t = threads_[it->second].get();
    if (it->second == 0 && t->text.size() >= kStreamBytes) {
      out_.write(t->text);
      t->text.clear();
    }
    return t;
  }

  // " [file.c:LINE]": the source line of the call instruction, the one before the
  // return address (innermost frame: the line in inlined code, if the call is there).
  std::string site_of(const Activation& a) {
    if (!options_.callsite || !a.callsite || *a.callsite == 0) return {};
    const ResolvedAddress& r = symbolizer_.resolve(symbolizer_.locate(*a.callsite), true);
    const SourceFrame& f = r.frames.front();
    if (!f.file || !f.line) return {};
    size_t slash = f.file->rfind('/');
    std::string_view name = slash == std::string::npos ? std::string_view(*f.file)
                                                       : std::string_view(*f.file).substr(slash + 1);
    return fmt::format(" [{}:{}]", name, *f.line);
  }

  void write_section_header(int64_t tid) {
    if (!first_section_) out_.write("\n");
    first_section_ = false;
    // A negative TID is a Go goroutine's calls (doc/trace-format.md).
    if (tid < 0)
      out_.write(fmt::format("== pid {} goroutine {} ==\n", pid_, -tid));
    else
      out_.write(fmt::format("== pid {} tid {} ==\n", pid_, tid));
  }

  static constexpr size_t kStreamBytes = 1 << 16;

  const ReportOptions& options_;
  Output& out_;
  CallTreeStyle style_;
  Symbolizer symbolizer_;
  Demangler demangler_;
  int64_t pid_ = 0;
  bool first_section_ = true;
  std::vector<std::unique_ptr<ThreadOut>> threads_;
  std::unordered_map<int64_t, size_t> index_;
};

// tree --json (doc/functracer-postproc.1): the same tree as nested objects,
//   {"processes": [{"pid": N, "threads": [{"tid": N, "calls": [CALL...]}]}]}
//   CALL: {"function": short name, "name": as recorded, "args": "text as in the tree",
//          "arglist": [{"value": "text of one argument", "type": "i4"}...] ("type" when
//          the trace says),
//          "start_ns": N, "calls": [CALL or {"note": "<signal SIGSEGV>"}...],
//          "return": "text" or null, "unwound": reason (only when unwound),
//          "duration_ns": N}
// Each thread's calls are written as they end; --time-filter leaves out the calls that
// lasted less (their callees with them).
class TreeJsonObserver : public CallObserver {
 public:
  // The opening is written with the first process: a file that is not a trace gives
  // no output at all, only its error.
  TreeJsonObserver(const ReportOptions& options, Output& out) : options_(options), out_(out) {}


  void begin_process(const TraceReader& reader) override {
    pid_ = reader.pid();
    open();
  }

  void on_record(const TraceRecord& r) override {
    auto text = note_of(r);
    if (!text) return;
    Thread* t = thread(r.tid);
    if (!t) return;
    std::string obj = "{\"note\": ";
    append_json_string(obj, *text);
    obj += '}';
    add(*t, std::move(obj));
  }

  void on_call(int64_t tid, const Activation& a) override {
    Thread* t = thread(tid);
    if (!t) return;
    std::string args;
    append_call_args(args, a);
    std::string head = "{\"function\": ";
    append_json_string(head, demangler_.short_name(a.function));
    head += ", \"name\": ";
    append_json_string(head, a.function);
    head += ", \"args\": ";
    append_json_string(head, args);
    head += ", \"arglist\": [";
    bool first = true;
    for (const CallArg& arg : call_args(a)) {
      head += first ? "{\"value\": " : ", {\"value\": ";
      first = false;
      append_json_string(head, arg.value);
      if (!arg.type.empty()) {
        head += ", \"type\": ";
        append_json_string(head, arg.type);
      }
      head += '}';
    }
    head += ']';
    head += fmt::format(", \"start_ns\": {}, \"calls\": [", a.call_ts);
    t->open.push_back(Frame{std::move(head), {}});
  }

  void on_end(int64_t tid, const Activation& a, const ActivationEnd& end) override {
    Thread* t = thread(tid);
    if (!t || t->open.empty()) return;
    Frame f = std::move(t->open.back());
    t->open.pop_back();
    uint64_t duration = end.inclusive_ns;
    if (options_.time_filter_ns && duration < options_.time_filter_ns) {
      for (auto& note : f.body) add(*t, std::move(note));
      return;
    }
    std::string obj = std::move(f.head);
    for (size_t i = 0; i < f.body.size(); ++i) obj += (i ? ", " : "") + f.body[i];
    obj += "], \"return\": ";
    std::string value = return_text(a, end);
    if (end.kind == EndKind::kReturn && !value.empty())
      append_json_string(obj, value);
    else
      obj += "null";
    if (end.kind == EndKind::kUnwound) {
      obj += ", \"unwound\": ";
      append_json_string(obj, end.reason);
    }
    obj += fmt::format(", \"duration_ns\": {}}}", duration);
    add(*t, std::move(obj));
  }

  void end_process() override {
    std::string proc = fmt::format("{}{{\"pid\": {}, \"threads\": [", processes_++ ? ", " : "", pid_);
    for (size_t i = 0; i < threads_.size(); ++i) {
      Thread& t = threads_[i];
      while (!t.open.empty()) {  // frames the model never closed: shown as they are
        Frame f = std::move(t.open.back());
        t.open.pop_back();
        std::string obj = std::move(f.head);
        for (size_t j = 0; j < f.body.size(); ++j) obj += (j ? ", " : "") + f.body[j];
        obj += "]}";
        add(t, std::move(obj));
      }
      proc += fmt::format("{}{{\"tid\": {}, \"calls\": [", i ? ", " : "", t.tid);
      for (size_t j = 0; j < t.top.size(); ++j) proc += (j ? ", " : "") + t.top[j];
      proc += "]}";
    }
    proc += "]}";
    out_.write(proc);
    threads_.clear();
    index_.clear();
  }

  void finish() {
    open();
    out_.write("]}\n");
  }

 private:
  struct Frame {
    std::string head;               // the call's object up to its "calls": [
    std::vector<std::string> body;  // its callees and notes, as JSON
  };
  struct Thread {
    int64_t tid = 0;
    std::vector<Frame> open;
    std::vector<std::string> top;
  };

  Thread* thread(int64_t tid) {
    if (options_.tid && *options_.tid != tid) return nullptr;
    auto [it, inserted] = index_.try_emplace(tid, threads_.size());
    if (inserted) threads_.push_back(Thread{tid, {}, {}});
    return &threads_[it->second];
  }

  static void add(Thread& t, std::string obj) {
    (t.open.empty() ? t.top : t.open.back().body).push_back(std::move(obj));
  }

  const ReportOptions& options_;
  Output& out_;
  Demangler demangler_;
  int64_t pid_ = 0;
  size_t processes_ = 0;
  bool opened_ = false;

  void open() {
    if (opened_) return;
    opened_ = true;
    out_.write("{\"processes\": [");
  }
  std::vector<Thread> threads_;
  std::unordered_map<int64_t, size_t> index_;
};

}  // namespace

Status report_tree(const ReportOptions& options, Output& out, Diagnostics& diag) {
  if (options.json) {
    TreeJsonObserver observer(options, out);
    Status st = replay_traces(options.traces, observer, diag);
    if (st) observer.finish();
    return st;
  }
  TreeObserver observer(options, out, diag);
  return replay_traces(options.traces, observer, diag);
}

}  // namespace ft::post
