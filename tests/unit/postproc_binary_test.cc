// The functracer-postproc binary itself, run as users run it: golden outputs on stdout
// and in -o files, a failed report leaving the -o file alone, warnings and errors on
// stderr in one line, exit statuses (0, 1 for bad input, 2 for usage), --help.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ft::post
