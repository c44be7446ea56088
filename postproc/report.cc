#include "postproc/report.h"

#include <cerrno>

#include <fmt/format.h>

#include "functracer/call_tree.h"
#include "postproc/report_allocators.h"
#include "postproc/report_callgrind.h"
#include "postproc/report_calls.h"
#include "postproc/report_chrome.h"
#include "postproc/report_diff.h"
#include "postproc/report_dot.h"
#include "postproc/report_dump.h"
#include "postproc/report_fds.h"
#include "postproc/report_flamegraph.h"
#include "postproc/report_gprof.h"
#include "postproc/report_histogram.h"
#include "postproc/report_html.h"
#include "postproc/report_leaks.h"
#include "postproc/report_massif.h"
#include "postproc/report_peak.h"
#include "postproc/report_speedscope.h"
#include "postproc/report_temporary.h"
#include "postproc/report_tree.h"

namespace ft::post {

namespace {

constexpr std::string_view kLeakSortKeys[] = {"bytes", "blocks"};
constexpr std::string_view kAllocatorSortKeys[] = {"count", "bytes"};
constexpr std::string_view kTemporarySortKeys[] = {"count", "bytes"};
constexpr std::string_view kDiffSortKeys[] = {"bytes", "blocks", "count"};
// The dot report's default follows the traces: calls for calltrace, bytes for memtrace.
constexpr std::string_view kDotMetrics[] = {"calls", "time", "bytes"};

constexpr uint32_t kHeap = kAcceptsJson | kAcceptsTid | kAcceptsBlockFilters |
                           kAcceptsGroupFilters | kAcceptsResolve;

constexpr ReportSpec kReports[] = {
    {"leaks", "heap blocks never freed, grouped by backtrace, with file:line", report_leaks,
     kHeap | kAcceptsTop | kAcceptsAt | kAcceptsLeakKinds, kLeakSortKeys},
    {"peak", "the highest live heap of each process, when, and what held it", report_peak,
     kHeap | kAcceptsTop, {}},
    {"temporary", "allocations freed right after being made, by backtrace", report_temporary,
     kHeap | kAcceptsTop, kTemporarySortKeys},
    {"allocators", "backtraces that allocate most often (or most bytes)", report_allocators,
     kHeap | kAcceptsTop, kAllocatorSortKeys},
    {"histogram", "allocation sizes in power-of-two buckets", report_histogram,
     kAcceptsJson | kAcceptsTid | kAcceptsBlockFilters, {}},
    {"diff", "leaks and allocations of two runs compared, by function and line", report_diff,
     kHeap | kAcceptsTop, kDiffSortKeys, 2},
    {"fds", "file descriptors and FILE streams left open, by backtrace", report_fds,
     kAcceptsJson | kAcceptsTid | kAcceptsTop | kAcceptsGroupFilters | kAcceptsResolve, {}},
    {"massif", "the heap over time as a massif.out file, for ms_print and massif-visualizer",
     report_massif, kAcceptsTid | kAcceptsResolve, {}},
    {"calls", "per-function call counts, total and self time", report_calls,
     kAcceptsJson | kAcceptsTid, {}},
    {"tree", "call tree per thread with arguments and return values", report_tree,
     kAcceptsJson | kAcceptsTime | kAcceptsTimeFilter | kAcceptsTid | kAcceptsCallsite | kAcceptsResolve, {}},
    {"chrome", "Chrome trace-event JSON for Perfetto, chrome://tracing, speedscope",
     report_chrome, kAcceptsTid, {}},
    {"speedscope", "a speedscope profile: time per thread, and each heap metric by backtrace",
     report_speedscope,
     kAcceptsTid | kAcceptsBlockFilters | kAcceptsGroupFilters | kAcceptsResolve, {}},
    {"flamegraph", "folded stacks or an SVG flame graph of time, calls or heap bytes",
     report_flamegraph,
     kAcceptsTid | kAcceptsBlockFilters | kAcceptsGroupFilters | kAcceptsResolve | kAcceptsSvg, {},
     0, kFlameMetricNames},
    {"html", "one HTML page: leaks, heap over time and flame graphs of memtrace traces",
     report_html,
     kAcceptsTid | kAcceptsBlockFilters | kAcceptsGroupFilters | kAcceptsResolve | kAcceptsTop, {}},
    {"dot", "call graph (or allocation backtraces by bytes) for graphviz", report_dot,
     kAcceptsTid | kAcceptsResolve, {}, 0, kDotMetrics},
    {"callgrind", "a callgrind profile of the traced calls (KCachegrind, callgrind_annotate)",
     report_callgrind, kAcceptsTid | kAcceptsResolve, {}},
    {"gprof", "a gmon.out of the executable's traced calls, for gprof PROGRAM gmon.out",
     report_gprof, kAcceptsTid | kAcceptsResolve, {}, 0, {}, "gmon.out"},
    {"dump", "every record of the traces, as text or JSON lines", report_dump,
     kAcceptsJson | kAcceptsTid, {}},
};

}  // namespace

void Output::flush() {
  if (!file_ || buf_.empty()) return;
  if (!failed_ && std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) {
    failed_ = true;
    errno_ = errno;
  }
  buf_.clear();
}

Status Output::finish() {
  if (!file_) return {};
  flush();
  if (!failed_ && std::fflush(file_) != 0) {
    failed_ = true;
    errno_ = errno;
  }
  if (failed_) return Error::from_errno(errno_ ? errno_ : EIO, "writing the report");
  return {};
}

HeapReplayOptions heap_replay_options(const ReportOptions& options) {
  HeapReplayOptions h;
  h.filter.tid = options.tid;
  h.filter.size = options.size;
  h.filter.from = options.from;
  h.filter.to = options.to;
  h.stop = options.at;
  return h;
}

Result<GroupFilter> group_filter(const ReportOptions& options) {
  GroupFilter filter;
  for (const std::string& glob : options.functions) filter.add_function(glob);
  for (const std::string& path : options.suppressions) {
    if (Status st = filter.add_suppressions(path); !st) return st.error();
  }
  return filter;
}

std::span<const ReportSpec> all_reports() { return kReports; }

const ReportSpec* find_report(std::string_view name) {
  for (const ReportSpec& r : kReports) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

std::string format_duration(uint64_t ns) { return format_duration_ns(ns); }

std::string format_bytes(uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  if (v < 10) return fmt::format("{:.2f} {}", v, kUnits[unit]);
  if (v < 100) return fmt::format("{:.1f} {}", v, kUnits[unit]);
  return fmt::format("{:.0f} {}", v, kUnits[unit]);
}

}  // namespace ft::post
