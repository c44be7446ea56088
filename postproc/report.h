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

#include "common/result.h"
#include "postproc/group_filter.h"
#include "postproc/heap_filter.h"
#include "postproc/heap_replay.h"
#include "postproc/symbolizer.h"
#include "postproc/trace_reader.h"

namespace ft::post {

struct ReportOptions {
  bool json = false;             // --json
  bool time = false;             // --time
  bool callsite = true;          // false with --no-callsite
  uint64_t time_filter_ns = 0;   // --time-filter DUR (tree): only calls lasting DUR
  std::optional<int64_t> tid;    // --tid N: only this thread
  std::string sort;              // --sort KEY (empty: the report's default)
  std::string metric;            // --metric KEY (empty: the report's default)
  bool svg = false;              // --svg
  std::optional<int64_t> top;    // --top N: only the first N entries
  // Trace files, with the directories given (functracer -o DIR) expanded to the
  // *.trace files in them; `inputs` keeps them per argument (diff compares two).
  std::vector<std::string> traces;
  std::vector<std::vector<std::string>> inputs;

  // Heap and descriptor reports.
  SizeRange size;                         // --size RANGE
  std::optional<When> from, to;           // --from WHEN, --to WHEN
  std::optional<When> at;                 // --at WHEN
  std::vector<std::string> functions;     // --function GLOB
  std::vector<std::string> suppressions;  // --suppressions FILE
  ResolveOptions resolve;                 // --sysroot DIR, --debug-dir DIR
  std::string leak_kinds;                 // --kinds LIST (leaks)
  std::optional<int64_t> error_exitcode;  // --error-exitcode N (leaks)
};

// The block filters and --at of a heap report.
HeapReplayOptions heap_replay_options(const ReportOptions& options);
// --function and --suppressions; the error names a suppressions file that cannot be used.
Result<GroupFilter> group_filter(const ReportOptions& options);

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
  // For reports that build their text row by row: writes `text` and clears it once it
  // has grown past the flush size, so that memory stays bounded.
  void write_when_large(std::string& text) {
    if (text.size() < kFlushBytes) return;
    write(text);
    text.clear();
  }
  // Flushes to the stream; the error names what failed (e.g. a full disk).
  Status finish();
  const std::string& text() const { return buf_; }
  // The exit status the report asks for once written (leaks --error-exitcode).
  void set_exit_status(int status) { exit_status_ = status; }
  int exit_status() const { return exit_status_; }

 private:
  static constexpr size_t kFlushBytes = 1 << 16;
  void flush();

  std::FILE* file_ = nullptr;
  std::string buf_;
  bool failed_ = false;
  int errno_ = 0;
  int exit_status_ = 0;
};

using ReportFn = Status (*)(const ReportOptions&, Output&, Diagnostics&);

// The options a report accepts (ReportSpec::accepts); any other is a usage error.
enum ReportAccepts : uint32_t {
  kAcceptsJson = 1 << 0,          // --json
  kAcceptsTime = 1 << 1,          // --time
  kAcceptsTid = 1 << 2,           // --tid
  kAcceptsTop = 1 << 3,           // --top
  kAcceptsBlockFilters = 1 << 4,  // --size, --from, --to
  kAcceptsGroupFilters = 1 << 5,  // --function, --suppressions
  kAcceptsAt = 1 << 6,            // --at
  kAcceptsResolve = 1 << 7,       // --sysroot, --debug-dir
  kAcceptsSvg = 1 << 8,           // --svg
  kAcceptsLeakKinds = 1 << 9,     // --kinds, --error-exitcode
  kAcceptsCallsite = 1 << 10,     // --no-callsite
  kAcceptsTimeFilter = 1 << 11,   // --time-filter
};

struct ReportSpec {
  std::string_view name;
  std::string_view summary;  // one line for --help
  ReportFn run = nullptr;
  uint32_t accepts = 0;      // ReportAccepts
  std::span<const std::string_view> sort_keys;  // accepted by --sort, the default first
  size_t inputs = 0;         // exactly this many TRACE arguments (0: one or more)
  // Accepted by --metric (what a report measures), the default first unless the report
  // documents a default that depends on the traces.
  std::span<const std::string_view> metric_keys = {};
  // A binary file format: written to this file when -o is not given (never to the
  // terminal), and main says on stderr where it went.
  std::string_view default_output = {};
};

std::span<const ReportSpec> all_reports();
const ReportSpec* find_report(std::string_view name);

// "850 ns", "12.345 us", "1.500 ms", "2.000 s": three decimals, truncated.
std::string format_duration(uint64_t ns);
// "512 B", "1.50 KiB", "12.3 MiB", "140 GiB": binary units, three significant digits.
std::string format_bytes(uint64_t bytes);

}  // namespace ft::post
