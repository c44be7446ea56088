// The tree report (postproc/report_tree.h): the indented call tree per thread against
// golden files, --tid and --time, arguments and return values typed from the trace's
// type codes, string arguments and annotations (lost events, exec), and a large trace of
// interleaved threads, streamed.
#include <gtest/gtest.h>

#include <string>

#include "postproc/report_tree.h"
#include "postproc_fixture.h"

namespace ft::post {
namespace {

using test::data;
using test::options_for;
using test::read_file;
using test::report_text;
using test::TempDir;

TEST(TreeReport, Golden) {
  EXPECT_EQ(report_text(report_tree, options_for({data("recursion.trace")})),
            read_file(data("recursion.tree.txt")));
}

TEST(TreeReport, TruncatedGolden) {
  CollectingDiagnostics diag;
  EXPECT_EQ(report_text(report_tree, options_for({data("truncated.trace")}), diag),
            read_file(data("truncated.tree.txt")));
}

TEST(TreeReport, TidFilterAndTime) {
  ReportOptions o = options_for({data("recursion.trace")});
  o.tid = 101;
  o.time = true;
  EXPECT_EQ(report_text(report_tree, o),
            "== pid 100 tid 101 ==\n"
            "Worker::run(0x7f0000001000) {\n"
            "  fact(0x2) {\n"
            "    fact(0x1) = 0x1 <10 ns>\n"
            "  } = 0x2 <50 ns>\n"
            "  parse(0x5) {\n"
            "    lex() <unwound: exception> <150 ns>\n"
            "  } <unwound: exception> <200 ns>\n"
            "} = 0x0 <600 ns>\n");
}

TEST(TreeReport, TypedArgumentsAndReturns) {
  // types: f(int8 -1 from 0xff, const char*, unsigned short) returns int32 -2;
  // g(long) returns nothing (void).
  TempDir tmp;
  std::string path = tmp.write(
      "t.trace",
      "functracer-trace 1\n"
      "1 7 1 header format=1 arch=\"x86_64\" pid=7 exe=\"/a\" cmdline=\"a\" "
      "start_realtime_ns=0 plugins=\"calltrace\" backtrace_depth=0\n"
      "2 7 2 call function=\"f\" address=0x10 depth=0 args=[0x12345ff,0x4000,0x1ffff,0x0,0x0,0x0] nargs=3 "
      "types=\"i1,s,u2>i4\" str1=\"hi\"\n"
      "3 7 3 call function=\"g\" address=0x20 depth=1 args=[0xfffffffffffffffd,0x0,0x0,0x0,0x0,0x0] nargs=1 "
      "types=\"i8>v\"\n"
      "4 7 4 return function=\"g\" address=0x20 depth=1 retval=0x77\n"
      "5 7 5 return function=\"f\" address=0x10 depth=0 retval=0xfffffffe\n"
      "6 7 6 call function=\"h\" address=0x30 depth=0 args=[0x1,0x2,0x0,0x0,0x0,0x0] nargs=2 "
      "types=\"bogus\"\n"
      "7 7 7 return function=\"h\" address=0x30 depth=0 retval=0x5\n"
      "8 7 8 call function=\"m\" address=0x40 depth=0 args=[0x7,0x0,0x0,0x0,0x0,0x0] "
      "fargs=[0x3ff8000000000000,0xc0200000] nargs=3 types=\"f8,i4,f4>f8\"\n"
      "9 7 9 return function=\"m\" address=0x40 depth=0 retval=0x0 fretval=0x4004000000000000\n"
      "10 7 10 exit status=0\n");
  CollectingDiagnostics diag;
  EXPECT_EQ(report_text(report_tree, options_for({path}), diag),
            "== pid 7 tid 7 ==\n"
            "f(-1, \"hi\", 65535) {\n"
            "  g(-3)\n"
            "} = -2\n"
            "h(0x1, 0x2) = 0x5\n"
            "m(1.5, 7, -2.5) = 2.5\n");
}

TEST(TreeReport, ArgumentsAndAnnotations) {
  TempDir tmp;
  std::string path = tmp.write(
      "a.trace",
      "functracer-trace 1\n"
      "1 7 1 header format=1 arch=\"x86_64\" pid=7 exe=\"/a\" cmdline=\"a\" "
      "start_realtime_ns=0 plugins=\"calltrace\" backtrace_depth=0\n"
      "2 7 2 call function=\"open\" address=0x10 depth=0 args=[0x1000,0x241,0x1a4] nargs=3 "
      "str0=\"/tmp/x y\\n\\xff\"\n"
      "3 7 3 lost count=4 reason=\"buffer full\"\n"
      "4 7 4 return function=\"open\" address=0x10 depth=0 retval=0xffffffffffffffff\n"
      "5 7 5 call function=\"f\" address=0x20 depth=0 args=[0x1] nargs=2\n"
      "6 7 6 return function=\"f\" address=0x20 depth=0 retval=0x0\n"
      "7 7 7 exec exe=\"/bin/b\"\n"
      "8 7 8 exit status=0\n");
  EXPECT_EQ(report_text(report_tree, options_for({path})),
            "== pid 7 tid 7 ==\n"
            "open(\"/tmp/x y\\n\\xff\", 0x241, 0x1a4) {\n"
            "  <lost 4 events: buffer full>\n"
            "} = 0xffffffffffffffff\n"
            "f(0x1, ?) = 0x0\n"
            "<exec \"/bin/b\">\n");
}

// Large output: the first thread's section is streamed, the second held back; the
// result must be the same as if both were built whole.
TEST(TreeReport, LargeInterleavedThreads) {
  TempDir tmp;
  std::string text = "functracer-trace 1\n1 1 0 header pid=1\n";
  uint64_t seq = 2;
  const int kCalls = 20000;
  for (int i = 0; i < kCalls; ++i) {
    for (int tid : {1, 2}) {
      text += std::to_string(seq++) + " " + std::to_string(tid) +
              " 5 call function=\"_Z1fi\" address=0x1 depth=0 args=[0x" + std::to_string(i) +
              "] nargs=1\n";
      text += std::to_string(seq++) + " " + std::to_string(tid) +
              " 6 return function=\"_Z1fi\" address=0x1 depth=0 retval=0x0\n";
    }
  }
  text += std::to_string(seq) + " 1 7 exit status=0\n";
  std::string expected;
  for (int tid : {1, 2}) {
    if (tid == 2) expected += "\n";
    expected += "== pid 1 tid " + std::to_string(tid) + " ==\n";
    for (int i = 0; i < kCalls; ++i) expected += "f(0x" + std::to_string(i) + ") = 0x0\n";
  }
  EXPECT_EQ(report_text(report_tree, options_for({tmp.write("big.trace", text)})), expected);
}

}  // namespace
}  // namespace ft::post
