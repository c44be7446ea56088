// What every report shares: its options, where its output goes, and the table of
// reports that main dispatches on. A report is one file (report_NAME.cc) with one entry
// point; adding a report means adding that file and one line to the table in report.cc.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "postproc/trace_reader.h"

namespace ft::post {

struct ReportOptions {
  bool json = false;             // --json
  bool time = false;             // --time
  std::optional<int64_t> tid;    // --tid N: only this thread
  std::string sort;              // --sort KEY (empty: the report's default)
  std::optional<int64_t> top;    // --top N: only the first N entries
  std::vector<std::string> traces;
};

// Report output: a stdio stream (stdout or the -o file), or a string for tests.
// Writes are buffered here and handed to the stream in large pieces.
class Output {
 public:
  Output() = default;                            // collects into text()
  explicit Output(std::FILE* file) : file_(file) {}  // not owned
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  void write(std::string_view s) {
    buf_.append(s);
    if (file_ && buf_.size() >= kFlushBytes) flush();
  }
  // Flushes to the stream; the error names what failed (e.g. a full disk).
  Status finish();
  const std::string& text() const { return buf_; }

 private:
  static constexpr size_t kFlushBytes = 1 << 16;
  void flush();

  std::FILE* file_ = nullptr;
  std::string buf_;
  bool failed_ = false;
  int errno_ = 0;
};

using ReportFn = Status (*)(const ReportOptions&, Output&, Diagnostics&);

struct ReportSpec {
  std::string_view name;
  std::string_view summary;  // one line for --help
  bool json = false;         // accepts --json
  bool time = false;         // accepts --time
  bool tid = false;          // accepts --tid
  ReportFn run = nullptr;
  std::span<const std::string_view> sort_keys;  // accepted by --sort, the default first
  bool top = false;                             // accepts --top
};

std::span<const ReportSpec> all_reports();
const ReportSpec* find_report(std::string_view name);

// "850 ns", "12.345 us", "1.500 ms", "2.000 s": three decimals, truncated.
std::string format_duration(uint64_t ns);

}  // namespace ft::post
