// TraceReader: reads one trace file (doc/trace-format.md) record by record.
//
// Streaming: the file is read through a fixed buffer, one line at a time, so memory
// stays bounded by the longest line however large the trace is, plus, for a format 2
// trace, each distinct call stack once (its `stack` records, which stand for the
// `frames` of the records that refer to them). A trace is one
// process; its pid comes from the header record. The bytes come from a TraceInput
// (trace_input.h): plain or zstd-compressed, from a file, "-" or a pipe; a name the
// tool opened in TraceInputs is read through that one descriptor.
//
// Traces may be cut short (functracer killed, disk full). The reader reports what is
// wrong through Diagnostics and goes on with what it can use: a malformed line is
// skipped, an incomplete last line is ignored, and a trace without an end record
// (exit, detach, killed) gets a warning once it has been read to the end. Only a file
// that is not a trace at all (no magic line) fails to open.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "common/trace_record.h"
#include "postproc/trace_input.h"

namespace ft::post {

// Where warnings go: stderr in the tool, a list in tests.
class Diagnostics {
 public:
  virtual ~Diagnostics() = default;
  virtual void warning(std::string_view message) = 0;
};

class StderrDiagnostics : public Diagnostics {
 public:
  void warning(std::string_view message) override;
};

// Forwards each distinct message once: for reports that read their traces in several
// passes (html: leaks, heap over time, flame graphs), which would repeat every warning.
class OnceDiagnostics : public Diagnostics {
 public:
  explicit OnceDiagnostics(Diagnostics& inner) : inner_(&inner) {}
  void warning(std::string_view message) override {
    if (seen_.emplace(message).second) inner_->warning(message);
  }

 private:
  Diagnostics* inner_;
  std::set<std::string, std::less<>> seen_;
};

class CollectingDiagnostics : public Diagnostics {
 public:
  void warning(std::string_view message) override { warnings.emplace_back(message); }
  std::vector<std::string> warnings;
};

// Checks that `path` can be opened and starts with the magic line; the error names the
// file. Cheap: reads at most the first buffer.
Status check_trace_file(const std::string& path);

// The trace files an argument names: the file itself ("-" and pipes included) or, for
// a directory (functracer -o DIR), the regular files in it whose name ends in ".trace"
// or ".trace.zst", sorted by name. A directory without any is an error naming it.
Result<std::vector<std::string>> trace_files(const std::string& path);

// Whether the `plugins` field of a trace's header (comma-separated names) lists
// `plugin`; false without a header or that field. A report that finds none of its
// records in a trace uses it to tell "nothing happened" from "traced without the
// plugin that writes them", which deserves a warning.
bool header_lists_plugin(const TraceRecord* header, std::string_view plugin);
// The header's `plugins` field as written; nullptr without a header or that field.
const std::string* header_plugins(const TraceRecord* header);

class TraceReader {
 public:
  static Result<TraceReader> open(const std::string& path, Diagnostics& diag);

  TraceReader(TraceReader&&) noexcept = default;
  TraceReader& operator=(TraceReader&&) noexcept = default;
  ~TraceReader() = default;

  // The next well-formed record, or nullptr at the end of the file. The pointer stays
  // valid until the next call. Reaching the end emits the cut-short warnings, and one
  // warning per function the engine could not trace (its `untraced` records): whatever
  // a report counts from this trace misses that function's calls, so every report
  // says its totals are incomplete, here rather than each on its own.
  const TraceRecord* next();

  const std::string& path() const { return path_; }
  // From the header record; when the header is missing, the tid of the first record.
  int64_t pid() const { return pid_; }
  // nullptr when the trace has no header record.
  const TraceRecord* header() const { return header_ ? &*header_ : nullptr; }
  // Line number (1-based, the magic line is 1) of the record last returned.
  uint64_t line_number() const { return record_line_; }
  // Largest timestamp among the records returned so far.
  uint64_t last_ts() const { return last_ts_; }
  // For a report that stops reading before the end (--at): warns now about the
  // untraced functions read so far, as reaching the end would have.
  void stop_early() { warn_untraced(); }
  // After next() returned nullptr: whether the trace ended as a complete trace does
  // (end record present, last line complete, no malformed line).
  bool complete() const { return complete_; }
  // After next() returned nullptr: the trace has its end record (exit, detach or
  // killed). Without one it was cut short, and what it holds ends at the cut.
  bool has_end_record() const { return seen_end_record_; }

 private:
  TraceReader(std::string path, TraceStream stream, Diagnostics& diag);

  enum class LineStatus { kLine, kIncomplete, kEnd };
  LineStatus read_line(std::string& line);
  bool fill();
  const TraceRecord* read_record();
  void warn(uint64_t line, std::string_view message);
  // Format 2: a `stack` record is kept, not returned; a record's `stack=N` field is
  // read as the `frames` list that record holds.
  void keep_stack();
  void resolve_stack();
  void note_untraced(const TraceRecord& r);
  void warn_untraced();
  void finish();

  std::string path_;
  TraceStream stream_;
  Diagnostics* diag_;
  std::vector<char> buf_;
  size_t buf_pos_ = 0;
  size_t buf_len_ = 0;
  bool eof_ = false;
  bool read_error_ = false;

  std::string line_;
  bool line_overlong_ = false;  // the line read last exceeded the limit and was dropped
  uint64_t line_no_ = 0;
  uint64_t record_line_ = 0;
  RecordParser parser_;
  TraceRecord record_;  // parsed into in place, line after line
  std::optional<TraceRecord> pending_;  // first record, read ahead by open()
  uint64_t pending_line_ = 0;
  std::optional<TraceRecord> header_;
  int64_t pid_ = 0;
  int version_ = 0;  // of the format, from the magic line
  std::unordered_map<int64_t, HexList> stacks_;  // id -> frames
  uint64_t last_seq_ = 0;
  uint64_t last_ts_ = 0;
  bool seen_end_record_ = false;
  bool incomplete_line_ = false;
  uint64_t malformed_ = 0;
  uint64_t out_of_order_ = 0;
  std::vector<std::string> untraced_;  // "FUNCTION was not traced (REASON)", each once
  bool untraced_warned_ = false;
  bool finished_ = false;
  bool complete_ = false;
};

// Opens each trace in turn and hands its reader to `replay(TraceReader&)`. Fails only
// when a file cannot be opened or is not a trace (the error names it); problems inside
// a trace are `replay`'s to report.
template <typename Replay>
Status replay_each_trace(const std::vector<std::string>& traces, Diagnostics& diag, Replay&& replay) {
  for (const std::string& path : traces) {
    auto reader = TraceReader::open(path, diag);
    if (!reader) return reader.error();
    replay(*reader);
  }
  return {};
}

}  // namespace ft::post
