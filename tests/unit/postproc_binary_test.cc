// The functracer-postproc binary itself, run as users run it: golden outputs on stdout
// and in -o files, a failed report leaving the -o file alone, warnings and errors on
// stderr in one line, exit statuses (0, 1 for bad input, 2 for usage), --help.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "json_checker.h"
#include "test_support.h"

namespace ft::post {
namespace {

using test::contains;
using test::data;
using test::is_valid_json;
using test::read_file;
using test::RunResult;
using test::split_lines;

class Binary : public test::PostprocBinary {
 protected:
  // The report of `args` on recursion.trace equals the golden file, with nothing on stderr.
  void expect_golden(std::vector<std::string> args, const std::string& golden) {
    args.push_back(data("recursion.trace"));
    RunResult r = run(args);
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out, read_file(data(golden)));
    EXPECT_EQ(r.err, "");
  }
};

TEST_F(Binary, CallsJsonGolden) { expect_golden({"calls", "--json"}, "recursion.calls.json"); }

TEST_F(Binary, TreeGolden) { expect_golden({"tree"}, "recursion.tree.txt"); }

TEST_F(Binary, OutputFile) {
  std::string out = tmp_.file("calls.json");
  RunResult r = run({"calls", data("recursion.trace"), "-o", out, "--json"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(read_file(out), read_file(data("recursion.calls.json")));
}

// A report that fails leaves the -o file as it was (no partial output, no temporary
// file next to it); one that succeeds replaces it.
TEST_F(Binary, FailedReportLeavesOutputFileAlone) {
  std::string out = tmp_.write("report.out", "the previous report\n");
  RunResult r = run({"massif", "-o", out, data("leaks-basic.trace"), data("leaks-second.trace")});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(read_file(out), "the previous report\n");
  r = run({"calls", "--json", "-o", out, data("recursion.trace")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_file(out), read_file(data("recursion.calls.json")));
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp_.path())) {
    files += e.path().filename().string().rfind("report.out", 0) == 0;
  }
  EXPECT_EQ(files, 1u) << "a temporary file was left next to the output";
}

TEST_F(Binary, TruncatedTraceWarnsAndReports) {
  RunResult r = run({"tree", data("truncated.trace")});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, read_file(data("truncated.tree.txt")));
  std::vector<std::string> err = split_lines(r.err);
  ASSERT_EQ(err.size(), 1u) << r.err;
  EXPECT_TRUE(contains(err[0], "warning: ")) << err[0];
  EXPECT_TRUE(contains(err[0], "truncated.trace:8: the last line is incomplete")) << err[0];
  EXPECT_TRUE(contains(err[0], "the trace ends without")) << err[0];
}

TEST_F(Binary, MalformedLineWarnsAndReports) {
  RunResult r = run({"calls", "--json", data("malformed.trace")});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(is_valid_json(r.out)) << r.out;
  EXPECT_TRUE(contains(r.err, "malformed.trace:4: malformed record")) << r.err;
}

TEST_F(Binary, NotATraceIsAnError) {
  RunResult r = run({"calls", data("recursion.trace"), data("not_a_trace.txt")});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");  // nothing is reported when an input is not a trace
  EXPECT_EQ(split_lines(r.err).size(), 1u) << r.err;
  EXPECT_TRUE(contains(r.err, "not_a_trace.txt: not a functracer trace")) << r.err;

  r = run({"dump", tmp_.path() + "/does-not-exist.trace"});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.err, "does-not-exist.trace: No such file or directory")) << r.err;
}

TEST_F(Binary, UsageErrors) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {}, {"calls"}, {"bogus", "x"}, {"chrome", "--json", "x"}, {"calls", "--nope", "x"}}) {
    RunResult r = run(args);
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(split_lines(r.err).size(), 1u) << r.err;
    EXPECT_TRUE(contains(r.err, "functracer-postproc: ")) << r.err;
  }
}

TEST_F(Binary, Help) {
  RunResult r = run({"--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(contains(r.out, "Usage: functracer-postproc REPORT [OPTIONS] TRACE..."));
  EXPECT_TRUE(contains(r.out, "calls"));
  EXPECT_TRUE(contains(r.out, "tree"));
  EXPECT_TRUE(contains(r.out, "dump"));
  r = run({"calls", "-h"});
  EXPECT_EQ(r.status, 0);
}

TEST_F(Binary, DumpJsonLinesAreJson) {
  RunResult r = run({"dump", "--json", data("recursion.trace")});
  EXPECT_EQ(r.status, 0);
  std::vector<std::string> lines = split_lines(r.out);
  EXPECT_EQ(lines.size(), 28u);
  for (const std::string& line : lines) EXPECT_TRUE(is_valid_json(line)) << line;
}

// A program quiet for a second that then allocates 300 blocks within a millisecond and
// frees them: massif's snapshots follow the heap's activity, not the clock (snapshots
// evenly spaced over the second would all but two fall before the first allocation).
TEST_F(Binary, MassifSnapshotsFollowABurst) {
  std::string trace =
      "functracer-trace 1\n"
      "1 300 0 header format=1 arch=\"x86_64\" pid=300 exe=\"/bin/burst\" cmdline=\"burst\" "
      "start_realtime_ns=1700000000000000000 plugins=\"memtrace\" backtrace_depth=1\n"
      "2 300 0 process ppid=1\n";
  uint64_t seq = 3, t = 1'000'000'000;
  for (int i = 0; i < 300; ++i, t += 1000)
    trace += fmt::format("{} 300 {} alloc function=\"malloc\" size=10 address={:#x} frames=[0x401234]\n",
                         seq++, t, 0x10000 + i * 0x20);
  for (int i = 0; i < 300; ++i, t += 1000)
    trace += fmt::format("{} 300 {} free function=\"free\" address={:#x}\n", seq++, t,
                         0x10000 + i * 0x20);
  std::string in = tmp_.write("burst.trace", trace);
  RunResult r = run({"massif", in});
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<uint64_t> heap;
  size_t detailed = 0, peak = 0;
  for (const std::string& line : split_lines(r.out)) {
    if (line.rfind("mem_heap_B=", 0) == 0) heap.push_back(std::stoull(line.substr(11)));
    detailed += line == "heap_tree=detailed";
    peak += line == "heap_tree=peak";
  }
  ASSERT_EQ(heap.size(), 100u);  // massif's --max-snapshots
  EXPECT_EQ(peak, 1u);
  EXPECT_GE(detailed, 9u);
  EXPECT_EQ(*std::max_element(heap.begin(), heap.end()), 3000u);
  EXPECT_EQ(heap.back(), 0u);
  // The heap grows by 10 bytes an event and shrinks by 10: each of the 99 regular
  // snapshots is about 6 events (60 bytes) from the one before.
  for (size_t i = 1; i < heap.size(); ++i) {
    uint64_t step = heap[i] > heap[i - 1] ? heap[i] - heap[i - 1] : heap[i - 1] - heap[i];
    EXPECT_LE(step, 70u) << "snapshot " << i;
  }
}

}  // namespace
}  // namespace ft::post
