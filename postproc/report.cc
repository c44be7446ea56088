#include "postproc/report.h"

#include <cerrno>

#include <fmt/format.h>

#include "postproc/report_calls.h"
#include "postproc/report_dump.h"
#include "postproc/report_leaks.h"
#include "postproc/report_tree.h"

namespace ft::post {

namespace {

constexpr std::string_view kLeakSortKeys[] = {"bytes", "blocks"};

constexpr ReportSpec kReports[] = {
    {"leaks", "heap blocks never freed, grouped by backtrace, with file:line", true, false, false,
     report_leaks, kLeakSortKeys, true},
    {"calls", "per-function call counts, total and self time", true, false, true, report_calls, {},
     false},
    {"tree", "call tree per thread with arguments and return values", false, true, true,
     report_tree, {}, false},
    {"dump", "every record of the traces, as text or JSON lines", true, false, true, report_dump,
     {}, false},
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

std::span<const ReportSpec> all_reports() { return kReports; }

const ReportSpec* find_report(std::string_view name) {
  for (const ReportSpec& r : kReports) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

std::string format_duration(uint64_t ns) {
  if (ns < 1000) return fmt::format("{} ns", ns);
  if (ns < 1000'000) return fmt::format("{}.{:03} us", ns / 1000, ns % 1000);
  if (ns < 1000'000'000) return fmt::format("{}.{:03} ms", ns / 1000'000, ns / 1000 % 1000);
  return fmt::format("{}.{:03} s", ns / 1000'000'000, ns / 1000'000 % 1000);
}

}  // namespace ft::post
