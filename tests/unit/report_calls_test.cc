// The calls report (postproc/report_calls.h): per-function calls, total, self and
// average time worked out by hand from the timestamps of tests/unit/data/recursion.trace,
// the --json golden file, --tid, traces cut short, several processes, the text table and
// the durations it prints.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "json_checker.h"
#include "postproc/report_calls.h"
#include "postproc_fixture.h"

namespace ft::post {
namespace {

using test::data;
using test::is_valid_json;
using test::options_for;
using test::read_file;
using test::report_text;
using test::split_lines;

std::vector<FunctionStats> call_stats(const ReportOptions& options) {
  CollectingDiagnostics diag;
  auto stats = compute_call_stats(options, diag);
  EXPECT_TRUE(stats.ok()) << (stats.ok() ? "" : stats.error().message);
  EXPECT_TRUE(diag.warnings.empty()) << diag.warnings.front();
  return stats.ok() ? *stats : std::vector<FunctionStats>{};
}

ReportOptions json_options(const std::string& trace) {
  ReportOptions o = options_for({data(trace)});
  o.json = true;
  return o;
}

// recursion.trace, by hand (ns):
//  tid 100: main [2000,4000]=2000, callees fact(3) 700 + puts 100 -> self 1200
//           fact(3) [2100,2800]=700 > fact(2) [2200,2500]=300 > fact(1) [2300,2350]=50
//           puts@plt [2900,3000]=100
//  tid 101: Worker::run [3200,3800]=600, callees fact(2) 50 + parse 200 -> self 350
//           fact(2) [3250,3300]=50 > fact(1) [3260,3270]=10
//           parse [3400,3600]=200 unwound, lex [3450,3600]=150 unwound -> parse self 50
//  fact(int): 5 calls; total = outermost only = 700 + 50 = 750;
//             self = (700-300) + (300-50) + 50 + (50-10) + 10 = 750; avg 150.
TEST(CallsReport, NumbersWorkedOutByHand) {
  std::vector<FunctionStats> stats = call_stats(options_for({data("recursion.trace")}));
  std::map<std::string, FunctionStats> by_name;
  for (const FunctionStats& s : stats) by_name[s.name] = s;
  ASSERT_EQ(stats.size(), 6u);
  const FunctionStats& fact = by_name["fact(int)"];
  EXPECT_EQ(fact.mangled, "_Z4facti");
  EXPECT_EQ(fact.calls, 5u);
  EXPECT_EQ(fact.total_ns, 750u);
  EXPECT_EQ(fact.self_ns, 750u);
  EXPECT_EQ(fact.avg_ns(), 150u);
  EXPECT_EQ(by_name["main"].self_ns, 1200u);
  EXPECT_EQ(by_name["Worker::run()"].self_ns, 350u);
  EXPECT_EQ(by_name["parse(int)"].unwound, 1u);
  EXPECT_EQ(by_name["parse(int)"].self_ns, 50u);
  EXPECT_EQ(stats[0].name, "main");
  EXPECT_EQ(stats[5].name, "puts@plt");
}

TEST(CallsReport, JsonGolden) {
  std::string text = report_text(report_calls, json_options("recursion.trace"));
  EXPECT_EQ(text, read_file(data("recursion.calls.json")));
  EXPECT_TRUE(is_valid_json(text));
}

TEST(CallsReport, TidFilter) {
  ReportOptions o = options_for({data("recursion.trace")});
  o.tid = 101;
  std::vector<FunctionStats> stats = call_stats(o);
  ASSERT_EQ(stats.size(), 4u);
  EXPECT_EQ(stats[0].name, "Worker::run()");
  EXPECT_EQ(stats[1].name, "parse(int)");
  EXPECT_EQ(stats[2].name, "lex()");
  EXPECT_EQ(stats[3].name, "fact(int)");
  EXPECT_EQ(stats[3].calls, 2u);
  EXPECT_EQ(stats[3].total_ns, 50u);
}

// truncated.trace: main [1100, cut], work [1200,1500]=300, work [1600, cut].
// Last timestamp 1600: main 500 (self 500-300-0=200), second work 0.
TEST(CallsReport, TruncatedTraceGolden) {
  CollectingDiagnostics diag;
  EXPECT_EQ(report_text(report_calls, json_options("truncated.trace"), diag),
            read_file(data("truncated.calls.json")));
  EXPECT_EQ(diag.warnings.size(), 1u);
}

TEST(CallsReport, SeveralProcesses) {
  CollectingDiagnostics diag;
  auto stats =
      compute_call_stats(options_for({data("recursion.trace"), data("truncated.trace")}), diag);
  ASSERT_TRUE(stats.ok());
  ASSERT_EQ(stats->size(), 7u);
  EXPECT_EQ((*stats)[0].name, "main");
  EXPECT_EQ((*stats)[0].calls, 2u);
  EXPECT_EQ((*stats)[0].total_ns, 2500u);
  EXPECT_EQ((*stats)[0].self_ns, 1400u);
  EXPECT_EQ((*stats)[0].unwound, 1u);
}

TEST(CallsReport, TextTable) {
  std::vector<std::string> lines =
      split_lines(report_text(report_calls, options_for({data("recursion.trace")})));
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_EQ(lines[0], "     Calls    Total time     Self time      Avg time  Function");
  EXPECT_EQ(lines[2], "         1      2.000 us      1.200 us      2.000 us  main");
  EXPECT_EQ(lines[3], "         5        750 ns        750 ns        150 ns  fact(int)");
  EXPECT_EQ(lines[5], "         1        200 ns         50 ns        200 ns  parse(int)  (1 unwound)");
}

TEST(Report, FormatDuration) {
  EXPECT_EQ(format_duration(0), "0 ns");
  EXPECT_EQ(format_duration(999), "999 ns");
  EXPECT_EQ(format_duration(1000), "1.000 us");
  EXPECT_EQ(format_duration(12345), "12.345 us");
  EXPECT_EQ(format_duration(1500000), "1.500 ms");
  EXPECT_EQ(format_duration(999999999), "999.999 ms");
  EXPECT_EQ(format_duration(61000000001), "61.000 s");
}

}  // namespace
}  // namespace ft::post
