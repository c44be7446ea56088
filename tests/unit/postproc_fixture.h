// What the tests of the post-processor's reports share: options naming a list of traces,
// one trace record from its text, and a report run through the library with its output
// and warnings collected.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "common/trace_record.h"
#include "postproc/report.h"
#include "postproc/trace_reader.h"
#include "test_support.h"

namespace ft::test {

inline post::ReportOptions options_for(std::vector<std::string> traces) {
  post::ReportOptions o;
  o.traces = std::move(traces);
  return o;
}

// One record parsed from its line in a trace; a line that does not parse fails the test.
inline TraceRecord rec(const std::string& line) {
  auto r = parse_record(line);
  EXPECT_TRUE(r.ok()) << line << ": " << r.error().message;
  return r.ok() ? *r : TraceRecord{};
}

// A report's output through the library (report_calls, report_tree, ...); a report that
// fails fails the test. Warnings go to `diag`.
template <typename ReportFn>
std::string report_text(ReportFn report, const post::ReportOptions& options,
                        post::CollectingDiagnostics& diag) {
  post::Output out;
  auto status = report(options, out, diag);
  EXPECT_TRUE(status.ok()) << (status.ok() ? "" : status.error().message);
  return out.text();
}

// The same for tests that expect no warnings.
template <typename ReportFn>
std::string report_text(ReportFn report, const post::ReportOptions& options) {
  post::CollectingDiagnostics diag;
  std::string text = report_text(report, options, diag);
  EXPECT_TRUE(diag.warnings.empty()) << diag.warnings.front();
  return text;
}

}  // namespace ft::test
