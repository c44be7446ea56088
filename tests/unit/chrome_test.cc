// The chrome report's parts: LiveHeap (the heap counter's total) and the report on
// small traces written here, whose expected events are worked out by hand in the
// comments. Each event is one line of the output, so lines are searched for the fields.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/trace_record.h"
#include "postproc/live_heap.h"
#include "postproc/report.h"
#include "test_support.h"

namespace ft::post {
namespace {

TraceRecord rec(const std::string& line) {
  auto r = parse_record(line);
  EXPECT_TRUE(r.ok()) << line;
  return r.ok() ? *r : TraceRecord{};
}

TEST(LiveHeap, FollowsBlocks) {
  LiveHeap heap;
  EXPECT_TRUE(heap.apply(rec("3 1 10 alloc function=\"malloc\" size=100 address=0x10")));
  EXPECT_TRUE(heap.apply(rec("4 1 11 alloc function=\"malloc\" size=50 address=0x20")));
  EXPECT_EQ(heap.bytes(), 150u);
  EXPECT_EQ(heap.blocks(), 2u);
  // An alloc at a live address replaces the block: its free was not recorded.
  EXPECT_TRUE(heap.apply(rec("5 1 12 alloc function=\"malloc\" size=70 address=0x20")));
  EXPECT_EQ(heap.bytes(), 170u);
  // A free of an address that is not live (inherited, before an attach) is ignored.
  EXPECT_FALSE(heap.apply(rec("6 1 13 free function=\"free\" address=0x30")));
  EXPECT_FALSE(heap.apply(rec("7 1 14 call function=\"f\" address=0x1 depth=0 args=[]")));
  EXPECT_TRUE(heap.apply(rec("8 1 15 free function=\"free\" address=0x10")));
  EXPECT_EQ(heap.bytes(), 70u);
  EXPECT_FALSE(heap.apply(rec("9 1 16 free function=\"free\" address=0x10")));
  EXPECT_FALSE(heap.apply(rec("10 1 17 alloc function=\"malloc\" size=0 address=0x40")));
  EXPECT_EQ(heap.blocks(), 2u);
  EXPECT_TRUE(heap.apply(rec("11 1 18 exec exe=\"/bin/y\"")));
  EXPECT_EQ(heap.bytes(), 0u);
  EXPECT_EQ(heap.blocks(), 0u);
}

class ChromeReport : public ::testing::Test {
 protected:
  // A trace of process PID with header TS `start`, plugins as given, then `body`.
  std::string write_trace(const std::string& name, int pid, uint64_t start,
                          const std::string& plugins, const std::string& body) {
    std::string p = std::to_string(pid), ts = std::to_string(start);
    return tmp_.write(name, "functracer-trace 1\n1 " + p + " " + ts +
                                " header format=1 arch=\"x86_64\" pid=" + p +
                                " exe=\"/usr/bin/app\" cmdline=\"app 'a b'\" "
                                "start_realtime_ns=5000 plugins=\"" +
                                plugins + "\" backtrace_depth=0\n2 " + p + " " + ts +
                                " process ppid=1\n" + body);
  }

  std::vector<std::string> run(std::vector<std::string> traces, std::optional<int64_t> tid = {}) {
    ReportOptions options;
    options.traces = traces;
    options.tid = tid;
    Output out;
    Status st = find_report("chrome")->run(options, out, diag_);
    EXPECT_TRUE(st.ok());
    text_ = out.text();
    std::vector<std::string> lines;
    size_t pos = 0;
    while (pos < text_.size()) {
      size_t nl = text_.find('\n', pos);
      lines.push_back(text_.substr(pos, nl - pos));
      pos = nl + 1;
    }
    return lines;
  }

  // The one line holding every piece; fails if there is not exactly one.
  static std::string line_with(const std::vector<std::string>& lines,
                               const std::vector<std::string>& pieces) {
    std::vector<std::string> found;
    for (const std::string& l : lines) {
      if (std::all_of(pieces.begin(), pieces.end(),
                      [&](const std::string& p) { return l.find(p) != std::string::npos; }))
        found.push_back(l);
    }
    EXPECT_EQ(found.size(), 1u) << pieces[0] << " in:\n" << testing::PrintToString(lines);
    return found.empty() ? "" : found[0];
  }

  static size_t count(const std::vector<std::string>& lines, const std::string& piece) {
    return std::count_if(lines.begin(), lines.end(),
                         [&](const std::string& l) { return l.find(piece) != std::string::npos; });
  }

  test::TempDir tmp_;
  CollectingDiagnostics diag_;
  std::string text_;
};

TEST_F(ChromeReport, CallsAsCompleteEvents) {
  // Process 7 starts at 1'000'000 ns: ts are microseconds from there.
  std::string t = write_trace(
      "a.trace", 7, 1'000'000, "calltrace",
      "3 7 1001234 call function=\"_Z5outeri\" address=0x10 depth=0 args=[0x5,0x0] nargs=1 "
      "types=\"i4>i4\"\n"
      "4 7 1002000 call function=\"puts\" address=0x20 depth=1 args=[0x99] nargs=1 "
      "str0=\"hi \\\"x\\\"\"\n"
      "5 7 1002500 return function=\"puts\" address=0x20 depth=1 retval=0x6\n"
      "6 7 1003000 call function=\"_Z5voidfv\" address=0x30 depth=1 args=[] nargs=0 types=\">v\"\n"
      "7 7 1003001 unwound function=\"_Z5voidfv\" address=0x30 depth=1 reason=\"exception\"\n"
      "8 7 1004000 return function=\"_Z5outeri\" address=0x10 depth=0 retval=0xfffffffffffffffe\n"
      "9 7 1005000 exit status=0\n");
  auto lines = run({t});
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.front(), "{\"traceEvents\":[");
  line_with(lines, {"\"name\":\"outer(int)\"", "\"ph\":\"X\"", "\"ts\":1.234,", "\"dur\":2.766,",
                    "\"pid\":7,\"tid\":7", "\"args\":{\"args\":\"5\",\"return\":\"-2\"}"});
  line_with(lines, {"\"name\":\"puts\"", "\"ts\":2.000,", "\"dur\":0.500,",
                    "\"args\":{\"args\":\"\\\"hi \\\\\\\"x\\\\\\\"\\\"\",\"return\":\"0x6\"}"});
  line_with(lines, {"\"name\":\"voidf()\"", "\"dur\":0.001,",
                    "\"args\":{\"args\":\"\",\"unwound\":\"exception\"}}"});
  line_with(lines, {"\"name\":\"exit\"", "\"ph\":\"i\"", "\"ts\":5.000,", "\"s\":\"p\"",
                    "\"args\":{\"status\":0}"});
  line_with(lines, {"\"name\":\"process start\"", "\"ts\":0.000,", "\"args\":{\"ppid\":1}"});
  line_with(lines, {"\"name\":\"process_name\"", "\"ph\":\"M\"", "\"name\":\"app (pid 7)\""});
  line_with(lines, {"\"name\":\"process_labels\"", "\"labels\":\"app 'a b'\""});
  line_with(lines, {"\"name\":\"thread_name\"", "\"tid\":7", "\"name\":\"main\""});
  EXPECT_EQ(count(lines, "\"ph\":\"C\""), 0u);  // no memtrace
  line_with(lines, {"\"displayTimeUnit\":\"ns\""});
  line_with(lines, {"\"otherData\":{\"command_line\":\"app 'a b'\"", "\"ts_zero_ns\":1000000,",
                    "\"ts_zero_realtime_ns\":5000}"});
  EXPECT_EQ(lines.back(), "\"otherData\":{\"command_line\":\"app 'a b'\","
                          "\"executable\":\"/usr/bin/app\",\"traces\":1,\"clock\":"
                          "\"CLOCK_MONOTONIC\",\"ts_zero_ns\":1000000,\"ts_zero_realtime_ns\":5000}}");
}

TEST_F(ChromeReport, NestingHoldsWhenRecordsDoNot) {
  // Thread 8's frame is closed by the process's exit record, whose TS is earlier
  // than the frame's call: it ends where it starts. In thread 7, the callee's return
  // is later than the caller's: the caller is stretched to hold it.
  std::string t = write_trace(
      "a.trace", 7, 0, "calltrace",
      "3 7 100 call function=\"outer\" address=0x10 depth=0 args=[]\n"
      "4 7 200 call function=\"inner\" address=0x20 depth=1 args=[]\n"
      "5 8 500 thread parent=7\n"
      "6 8 600 call function=\"worker\" address=0x30 depth=0 args=[]\n"
      "7 7 300 return function=\"inner\" address=0x20 depth=1 retval=0x0\n"
      "8 7 250 return function=\"outer\" address=0x10 depth=0 retval=0x0\n"
      "9 7 400 exit status=0\n");
  auto lines = run({t});
  line_with(lines, {"\"name\":\"outer\"", "\"ts\":0.100,", "\"dur\":0.200,"});
  line_with(lines, {"\"name\":\"inner\"", "\"ts\":0.200,", "\"dur\":0.100,"});
  line_with(lines, {"\"name\":\"worker\"", "\"ts\":0.600,", "\"dur\":0.000,", "\"tid\":8",
                    "\"unwound\":\"exit\",\"implicit\":true"});
  line_with(lines, {"\"name\":\"thread_name\"", "\"tid\":8", "\"name\":\"thread 1\""});
  line_with(lines, {"\"name\":\"thread start\"", "\"s\":\"t\"", "\"args\":{\"parent\":7}"});

  // --tid 8: the calls and thread events of thread 8, the process events.
  lines = run({t}, 8);
  EXPECT_EQ(count(lines, "\"ph\":\"X\""), 1u);
  EXPECT_EQ(count(lines, "\"name\":\"thread_name\""), 1u);
  line_with(lines, {"\"name\":\"exit\""});
}

TEST_F(ChromeReport, HeapCounterAndProcesses) {
  // Two processes; the second starts first, so its header is ts 0. Two allocations
  // at one TS make one sample with the total after both.
  std::string a = write_trace(
      "a.trace", 7, 2000, "memtrace",
      "3 7 3000 alloc function=\"malloc\" size=100 address=0x10\n"
      "4 7 3000 alloc function=\"malloc\" size=20 address=0x20\n"
      "5 7 4000 free function=\"free\" address=0x10\n"
      "6 7 4500 free function=\"free\" address=0x99\n"
      "7 7 5000 signal signal=10 name=\"SIGUSR1\"\n"
      "8 7 6000 killed signal=11 name=\"SIGSEGV\" address=0x0\n");
  std::string b = write_trace("b.trace", 9, 1000, "calltrace", "3 9 1500 exit status=3\n");
  auto lines = run({a, b});
  line_with(lines, {"\"name\":\"heap\"", "\"ph\":\"C\"", "\"ts\":1.000,", "\"pid\":7,",
                    "{\"live_bytes\":0}"});
  line_with(lines, {"\"name\":\"heap\"", "\"ts\":2.000,", "{\"live_bytes\":120}"});
  line_with(lines, {"\"name\":\"heap\"", "\"ts\":3.000,", "{\"live_bytes\":20}"});
  EXPECT_EQ(count(lines, "\"ph\":\"C\""), 3u);
  line_with(lines, {"\"name\":\"SIGUSR1\"", "\"cat\":\"signal\"", "\"s\":\"t\"", "\"ts\":4.000,"});
  line_with(lines, {"\"name\":\"killed by SIGSEGV\"", "\"s\":\"p\"",
                    "\"args\":{\"signal\":11,\"address\":\"0x0\"}"});
  line_with(lines, {"\"name\":\"exit\"", "\"pid\":9,", "\"ts\":0.500,", "{\"status\":3}"});
  EXPECT_EQ(count(lines, "\"name\":\"process_name\""), 2u);
  line_with(lines, {"\"traces\":2,", "\"ts_zero_ns\":1000,"});
}

}  // namespace
}  // namespace ft::post
