#include "postproc/report_tree.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "common/demangle.h"
#include "common/signal_names.h"
#include "common/trace_record.h"
#include "functracer/schema.h"
#include "postproc/call_model.h"
#include "postproc/call_values.h"
#include "postproc/symbolizer.h"

namespace ft::post {

namespace {

class TreeObserver : public CallObserver {
 public:
  TreeObserver(const ReportOptions& options, Output& out, Diagnostics& diag)
      : options_(options), out_(out), symbolizer_(diag, options.resolve) {}

  void begin_process(const TraceReader& reader) override {
    pid_ = reader.pid();
    symbolizer_.begin_process();
  }

  void on_record(const TraceRecord& r) override {
    if (r.type == schema::type::kModule) {
      symbolizer_.observe(r);
    } else if (r.type == schema::type::kSignal) {
      std::string text = "<signal ";
      const std::string* name = r.get_str(schema::key::kName);
      if (name && !name->empty()) {
        text += *name;
      } else {
        text += signal_name(static_cast<int>(r.get_int(schema::key::kSignal).value_or(0)));
      }
      annotate(r.tid, text + ">");
    } else if (r.type == schema::type::kLost) {
      const std::string* reason = r.get_str(schema::key::kReason);
      annotate(r.tid, fmt::format("<lost {} events{}{}>", r.get_int(schema::key::kCount).value_or(0),
                                  reason ? ": " : "", reason ? *reason : ""));
    } else if (r.type == schema::type::kExec) {
      std::string text = "<exec ";
      if (const std::string* exe = r.get_str(schema::key::kExe)) {
        append_quoted(text, *exe);  // a path may hold any byte, even a newline
      } else {
        text += '?';
      }
      annotate(r.tid, text + ">");
      symbolizer_.observe(r);
    }
  }

  void on_call(int64_t tid, const Activation& a) override {
    ThreadOut* t = thread(tid);
    if (!t) return;
    open_brace(*t);
    indent(*t, a.level);
    t->text += demangler_.short_name(a.function);
    t->text += '(';
    append_call_args(t->text, a);
    t->text += ')';
    t->site = site_of(a);
    t->line_open = true;
    t->level = a.level + 1;
  }

  void on_end(int64_t tid, const Activation& a, const ActivationEnd& end) override {
    ThreadOut* t = thread(tid);
    if (!t) return;
    bool leaf = t->line_open;
    if (!t->line_open) {
      indent(*t, a.level);
      t->text += '}';
    }
    t->line_open = false;
    if (end.kind == EndKind::kReturn) {
      size_t mark = t->text.size();
      t->text += " = ";
      if (!append_return_value(t->text, a, end)) t->text.resize(mark);
    } else {
      t->text += " <unwound: ";
      t->text += end.reason;
      t->text += '>';
    }
    if (options_.time) t->text += " <" + format_duration(end.inclusive_ns) + ">";
    if (leaf) t->text += t->site;
    t->text += '\n';
    t->level = a.level;
  }

  void end_process() override {
    for (size_t i = 0; i < threads_.size(); ++i) {
      if (i > 0) write_section_header(threads_[i].tid);
      out_.write(threads_[i].text);
    }
    threads_.clear();
    index_.clear();
  }

 private:
  struct ThreadOut {
    int64_t tid = 0;
    std::string text;
    bool line_open = false;  // a call line waits to learn whether it has callees
    std::string site;        // " [file.c:LINE]" of that call, or empty
    size_t level = 0;        // current nesting
  };

  // Sections come out in order of the threads' first appearance, so the first
  // thread's section is written as it grows; only the others are held back until the
  // end of the process.
  ThreadOut* thread(int64_t tid) {
    if (options_.tid && *options_.tid != tid) return nullptr;
    auto [it, inserted] = index_.try_emplace(tid, threads_.size());
    if (inserted) {
      if (threads_.empty()) write_section_header(tid);
      threads_.push_back(ThreadOut{tid, {}, false, {}, 0});
    }
    ThreadOut* t = &threads_[it->second];
    if (it->second == 0 && t->text.size() >= kStreamBytes) {
      out_.write(t->text);
      t->text.clear();
    }
    return t;
  }

  void write_section_header(int64_t tid) {
    if (!first_section_) out_.write("\n");
    first_section_ = false;
    out_.write(fmt::format("== pid {} tid {} ==\n", pid_, tid));
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

  static void open_brace(ThreadOut& t) {
    if (t.line_open) {
      t.text += " {";
      t.text += t.site;
      t.text += '\n';
      t.line_open = false;
    }
  }

  static void indent(ThreadOut& t, size_t level) { t.text.append(level * 2, ' '); }

  void annotate(int64_t tid, const std::string& text) {
    ThreadOut* t = thread(tid);
    if (!t) return;
    open_brace(*t);
    indent(*t, t->level);
    t->text += text;
    t->text += '\n';
  }

  static constexpr size_t kStreamBytes = 1 << 16;

  const ReportOptions& options_;
  Output& out_;
  Symbolizer symbolizer_;
  Demangler demangler_;
  int64_t pid_ = 0;
  bool first_section_ = true;
  std::vector<ThreadOut> threads_;
  std::unordered_map<int64_t, size_t> index_;
};

}  // namespace

Status report_tree(const ReportOptions& options, Output& out, Diagnostics& diag) {
  TreeObserver observer(options, out, diag);
  return replay_traces(options.traces, observer, diag);
}

}  // namespace ft::post
