// Tests of the heap reports' parts (moments, size ranges, suppression patterns, the
// stack tree) and of the reports themselves on small traces written here, whose
// expected figures are worked out by hand in the comments.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "postproc/group_filter.h"
#include "postproc/heap_filter.h"
#include "postproc/report.h"
#include "postproc/stack_tree.h"

namespace ft::post {
namespace {

namespace fs = std::filesystem;

TEST(When, Parses) {
  EXPECT_EQ(parse_when("250ms")->value, 250'000'000u);
  EXPECT_EQ(parse_when("1.5s")->value, 1'500'000'000u);
  EXPECT_EQ(parse_when("0.000000001s")->value, 1u);
  EXPECT_EQ(parse_when("40us")->value, 40'000u);
  EXPECT_EQ(parse_when("1200ns")->value, 1200u);
  EXPECT_EQ(parse_when("1200ns")->kind, When::Kind::kTime);
  EXPECT_EQ(parse_when("#17")->value, 17u);
  EXPECT_EQ(parse_when("#17")->kind, When::Kind::kEvent);
  for (const char* bad : {"5", "ms", "1.5", "#", "#x", "1.2345678901s", "-1s", "1.s", "s", "5 ms",
                          "99999999999999999999ns", "20000000000s"}) {
    EXPECT_FALSE(parse_when(bad).ok()) << bad;
  }
  EXPECT_EQ(format_when(*parse_when("250ms")), "250ms");
  EXPECT_EQ(format_when(*parse_when("1.5s")), "1500ms");
  EXPECT_EQ(format_when(*parse_when("#9")), "#9");
}

TEST(When, OrdersEvents) {
  When t = *parse_when("1us");
  EXPECT_FALSE(t.before(1000, 99));
  EXPECT_TRUE(t.before(1001, 1));
  When e = *parse_when("#5");
  EXPECT_FALSE(e.before(1'000'000, 5));
  EXPECT_TRUE(e.before(0, 6));
}

TEST(SizeRange, Parses) {
  auto r = parse_size_range("64");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->contains(64));
  EXPECT_FALSE(r->contains(63));
  EXPECT_FALSE(r->contains(65));
  r = parse_size_range("1k-4k");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->min, 1024u);
  EXPECT_EQ(r->max, 4096u);
  r = parse_size_range("100-");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->contains(UINT64_MAX));
  EXPECT_FALSE(r->contains(99));
  r = parse_size_range("-1M");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->contains(0));
  EXPECT_TRUE(r->contains(1 << 20));
  EXPECT_FALSE(r->contains((1 << 20) + 1));
  EXPECT_EQ(parse_size_range("2G")->min, uint64_t{2} << 30);
  for (const char* bad : {"10-5", "-", "k", "1x", "", "1--2", "-5-", "99999999999999999999G"}) {
    EXPECT_FALSE(parse_size_range(bad).ok()) << bad;
  }
}

TEST(BlockFilter, Accepts) {
  BlockFilter f;
  EXPECT_TRUE(f.empty());
  f.tid = 7;
  f.size = *parse_size_range("10-20");
  f.from = *parse_when("#5");
  f.to = *parse_when("#9");
  EXPECT_TRUE(f.accepts(7, 10, 0, 5));
  EXPECT_TRUE(f.accepts(7, 20, 0, 9));
  EXPECT_FALSE(f.accepts(8, 10, 0, 5));
  EXPECT_FALSE(f.accepts(7, 21, 0, 5));
  EXPECT_FALSE(f.accepts(7, 10, 0, 4));
  EXPECT_FALSE(f.accepts(7, 10, 0, 10));
}

TEST(Suppressions, MatchLikeLeakSanitizer) {
  EXPECT_TRUE(suppression_matches("build", "lk_build_table"));
  EXPECT_FALSE(suppression_matches("^build", "lk_build_table"));
  EXPECT_TRUE(suppression_matches("^lk_", "lk_build_table"));
  EXPECT_TRUE(suppression_matches("table$", "lk_build_table"));
  EXPECT_FALSE(suppression_matches("build$", "lk_build_table"));
  EXPECT_TRUE(suppression_matches("a*c", "xabbcx"));
  EXPECT_TRUE(suppression_matches("^a*c$", "abbc"));
  EXPECT_FALSE(suppression_matches("^a*c$", "abbcx"));
  EXPECT_TRUE(suppression_matches("^*$", ""));
  EXPECT_FALSE(suppression_matches("x", ""));
  EXPECT_TRUE(suppression_matches("libfoo.so", "/usr/lib/libfoo.so.1"));
}

TEST(Suppressions, FileErrorsNameTheLine) {
  fs::path dir = fs::temp_directory_path() / ("ft-supp-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string good = (dir / "good.supp").string();
  std::ofstream(good) << "# comment\n\n  leak:foo  \nleak:^bar$\n";
  GroupFilter f;
  EXPECT_TRUE(f.add_suppressions(good).ok());
  GroupHead head{0, "malloc", "malloc"};
  ReportFrame frame;
  frame.function = "call_foo_now";
  EXPECT_TRUE(f.suppresses(head, {frame}));
  frame.function = "barn";
  EXPECT_FALSE(f.suppresses(head, {frame}));
  frame.function = "bar";
  EXPECT_TRUE(f.suppresses(head, {frame}));
  frame.function.reset();
  frame.file = "/src/foo.c";
  EXPECT_TRUE(f.suppresses(head, {frame}));

  std::string bad = (dir / "bad.supp").string();
  std::ofstream(bad) << "leak:ok\nrace:nope\n";
  Status st = GroupFilter().add_suppressions(bad);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("bad.supp:2"), std::string::npos) << st.error().message;
  st = GroupFilter().add_suppressions((dir / "missing.supp").string());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("missing.supp"), std::string::npos);
  fs::remove_all(dir);
}

TEST(FunctionFilter, MatchesFramesAndEntryPoint) {
  GroupFilter f;
  f.add_function("parse_*");
  GroupHead head{0, "_Znwm", "operator new(unsigned long)"};
  ReportFrame a, b;
  a.function = "helper";
  b.function = "parse_config";
  EXPECT_TRUE(f.selects(head, {a, b}));
  EXPECT_FALSE(f.selects(head, {a}));
  GroupFilter g;
  g.add_function("operator new*");
  EXPECT_TRUE(g.selects(head, {a}));
  GroupFilter h;
  h.add_function("_Znwm");
  EXPECT_TRUE(h.selects(head, {}));
}

TEST(StackTree, SharesPrefixes) {
  StackTree t;
  using L = Symbolizer::Location;
  // Innermost first: two stacks under main -> run.
  std::vector<L> s1 = {L{0x30, 1}, L{0x20, 1}, L{0x10, 1}};
  std::vector<L> s2 = {L{0x31, 1}, L{0x20, 1}, L{0x10, 1}};
  std::vector<L> s3 = {L{0x20, 1}, L{0x10, 1}};
  StackTree::Id a = t.intern(s1), b = t.intern(s2), c = t.intern(s3);
  EXPECT_NE(a, b);
  EXPECT_EQ(t.intern(s1), a);
  EXPECT_EQ(t.size(), 5u);  // empty, 0x10, 0x20, 0x30, 0x31
  EXPECT_EQ(t.frames(a), s1);
  EXPECT_EQ(t.frames(c), s3);
  EXPECT_EQ(t.depth(b), 3u);
  EXPECT_EQ(t.intern({}), StackTree::kEmpty);
  // The same address in another mapping is another frame.
  EXPECT_NE(t.intern(std::vector<L>{L{0x30, 2}, L{0x20, 1}, L{0x10, 1}}), a);
}

// ---------------------------------------------------------------------------
// Reports on traces written here.

class HeapReports : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ft-heap-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A memtrace trace of process 300 (header TS 1000) with `body` (records from SEQ 3 on).
  std::string write_trace(const std::string& name, const std::string& body) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << "functracer-trace 1\n"
                           "1 300 1000 header format=1 arch=\"x86_64\" pid=300 exe=\"/bin/x\" "
                           "cmdline=\"x\" start_realtime_ns=1 plugins=\"memtrace\" "
                           "backtrace_depth=4\n"
                           "2 300 1000 process ppid=1\n"
                        << body;
    return path;
  }

  std::string run(const char* report, ReportOptions options, std::vector<std::string> traces) {
    options.traces = traces;
    for (const std::string& t : traces) options.inputs.push_back({t});
    const ReportSpec* spec = find_report(report);
    EXPECT_NE(spec, nullptr);
    Output out;
    Status st = spec->run(options, out, diag_);
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
    return out.text();
  }

  fs::path dir_;
  CollectingDiagnostics diag_;
};

// Live bytes after each record: 100, 150 (peak 1), 50, 170 (peak 2: B 50 + C 120),
// 120, 130, 140; D and E are at the first site again, after peak 2, so at the peak that
// site held nothing (A was freed before it).
constexpr const char* kPeakTrace =
    "3 300 2000 alloc function=\"malloc\" size=100 address=0xa0 frames=[0x1000]\n"
    "4 300 3000 alloc function=\"malloc\" size=50 address=0xb0 frames=[0x2000]\n"
    "5 300 4000 free function=\"free\" address=0xa0\n"
    "6 300 5000 alloc function=\"calloc\" size=120 address=0xc0 frames=[0x3000]\n"
    "7 300 6000 free function=\"free\" address=0xb0\n"
    "8 300 7000 alloc function=\"malloc\" size=10 address=0xd0 frames=[0x1000]\n"
    "9 300 8000 alloc function=\"malloc\" size=10 address=0xe0 frames=[0x1000]\n"
    "10 300 9000 exit status=0\n";

TEST_F(HeapReports, PeakIsTheHighestLiveHeapAndWhatHeldIt) {
  std::string t = write_trace("p.trace", kPeakTrace);
  std::string text = run("peak", {}, {t});
  EXPECT_EQ(text,
            "process 300 (" + t + "): peak heap 170 bytes in 2 blocks at 4.000 us (event #6; 2 groups)\n"
            "\n120 bytes in 1 block allocated by calloc\n  #0 0x3000 ??\n"
            "\n50 bytes in 1 block allocated by malloc\n  #0 0x2000 ??\n");
}

TEST_F(HeapReports, LeaksAtAMoment) {
  std::string t = write_trace("p.trace", kPeakTrace);
  ReportOptions o;
  o.at = *parse_when("#6");
  EXPECT_EQ(run("leaks", o, {t}),
            "170 bytes in 2 blocks live at #6 (2 groups, 1 process)\n"
            "\n120 bytes in 1 block allocated by calloc\n  #0 0x3000 ??\n"
            "\n50 bytes in 1 block allocated by malloc\n  #0 0x2000 ??\n");
  o.at = *parse_when("2999ns");  // before the free at TS 4000 (3000 ns after the header)
  EXPECT_EQ(run("leaks", o, {t}).substr(0, 49), "150 bytes in 2 blocks live at 2999ns (2 groups, 1");
  o.at = *parse_when("3us");  // the free at exactly 3000 ns is in
  EXPECT_EQ(run("leaks", o, {t}).substr(0, 40), "50 bytes in 1 block live at 3us (1 group");
  ReportOptions end;
  EXPECT_EQ(run("leaks", end, {t}).substr(0, 40), "140 bytes in 3 blocks leaked (2 groups, ");
}

TEST_F(HeapReports, EveryHeapReportSaysAFunctionWasNotTraced) {
  // calloc could not be traced (a uprobe's int3 was on it): whatever a report counts
  // from this trace misses its calls, and each report says so, once.
  std::string t = write_trace("u.trace",
                              "3 300 1500 untraced function=\"calloc\" address=0x7f0000001000 "
                              "reason=\"int3: a breakpoint is already there\"\n"
                              "4 300 2000 alloc function=\"malloc\" size=100 address=0xa0 frames=[0x1000]\n"
                              "5 300 9000 exit status=0\n");
  for (const char* report : {"leaks", "peak", "allocators", "temporary", "histogram"}) {
    diag_.warnings.clear();
    run(report, {}, {t});
    size_t said = 0;
    for (const std::string& w : diag_.warnings)
      if (w.find("calloc was not traced (int3: a breakpoint is already there): the totals are incomplete") !=
          std::string::npos)
        ++said;
    EXPECT_EQ(said, 1u) << report;
  }
}

TEST_F(HeapReports, AtIgnoresBlocksLeftBehindByAnEarlierExec) {
  std::string t = write_trace("e.trace",
                              "3 300 2000 alloc function=\"malloc\" size=7 address=0xa0\n"
                              "4 300 3000 exec exe=\"/bin/y\"\n"
                              "5 300 4000 alloc function=\"malloc\" size=9 address=0xa0\n"
                              "6 300 5000 exit status=0\n");
  ReportOptions o;
  o.at = *parse_when("#5");
  EXPECT_EQ(run("leaks", o, {t}).substr(0, 36), "9 bytes in 1 block live at #5 (1 gro");
  EXPECT_EQ(run("leaks", {}, {t}).substr(0, 32), "9 bytes in 1 block leaked (1 gro");
}

// The exec discards the first image's 100 bytes: the new image's peak (110 bytes) is
// the process's, and only its blocks are leaked.
TEST_F(HeapReports, ExecDiscardsTheHeap) {
  std::string t = write_trace("x.trace",
                              "3 300 2000 alloc function=\"malloc\" size=100 address=0xa0 frames=[0x1000]\n"
                              "4 300 3000 exec exe=\"/bin/y\"\n"
                              "5 300 4000 alloc function=\"malloc\" size=60 address=0xb0 frames=[0x2000]\n"
                              "6 300 5000 alloc function=\"malloc\" size=50 address=0xc0 frames=[0x3000]\n"
                              "7 300 6000 exit status=0\n");
  std::string p = run("peak", {}, {t});
  EXPECT_NE(p.find("): peak heap 110 bytes in 2 blocks at 4.000 us (event #6;"), std::string::npos) << p;
  EXPECT_EQ(run("leaks", {}, {t}).substr(0, 34), "110 bytes in 2 blocks leaked (2 gr");
  std::string a = run("allocators", {}, {t});
  EXPECT_NE(a.find("\n1 allocation of 100 bytes by malloc\n"), std::string::npos) << a;
  ReportOptions json;
  json.json = true;
  std::string h = run("histogram", json, {t});
  EXPECT_NE(h.find("\"leaked_blocks\": 2"), std::string::npos) << h;
}

TEST_F(HeapReports, TemporaryIsPerThread) {
  // tid 300: X then free X with tid 301's Y in between: temporary (per thread).
  // tid 301: Y, Z, free Y: not temporary (Z came after Y); free Z: temporary.
  // tid 300: W freed by tid 301: not temporary.
  std::string t = write_trace("t.trace",
                              "3 300 2000 alloc function=\"malloc\" size=8 address=0x10 frames=[0x100]\n"
                              "4 301 2100 alloc function=\"malloc\" size=16 address=0x20 frames=[0x200]\n"
                              "5 300 2200 free function=\"free\" address=0x10\n"
                              "6 301 2300 alloc function=\"malloc\" size=32 address=0x30 frames=[0x300]\n"
                              "7 301 2400 free function=\"free\" address=0x20\n"
                              "8 301 2500 free function=\"free\" address=0x30\n"
                              "9 300 2600 alloc function=\"malloc\" size=64 address=0x40 frames=[0x400]\n"
                              "10 301 2700 free function=\"free\" address=0x40\n"
                              "11 300 9000 exit status=0\n");
  EXPECT_EQ(run("temporary", {}, {t}),
            "2 allocations of 4 (50.0%) are temporary, 40 bytes (2 groups, 1 process)\n"
            "\n1 temporary of 1 allocation (100.0%), 32 bytes, by malloc\n  #0 0x300 ??\n"
            "\n1 temporary of 1 allocation (100.0%), 8 bytes, by malloc\n  #0 0x100 ??\n");
}

TEST_F(HeapReports, AllocatorsAndHistogram) {
  std::string t = write_trace("a.trace",
                              "3 300 2000 alloc function=\"malloc\" size=0 address=0x10 frames=[0x100]\n"
                              "4 300 2100 alloc function=\"malloc\" size=3 address=0x20 frames=[0x100]\n"
                              "5 300 2200 alloc function=\"malloc\" size=4 address=0x30 frames=[0x100]\n"
                              "6 300 2300 alloc function=\"malloc\" size=1000 address=0x40 frames=[0x200]\n"
                              "7 300 2400 free function=\"free\" address=0x20\n"
                              "8 300 9000 exit status=0\n");
  ReportOptions by_bytes;
  by_bytes.sort = "bytes";
  by_bytes.top = 1;
  EXPECT_EQ(run("allocators", by_bytes, {t}),
            "4 allocations of 1007 bytes (2 groups, 1 process; the first 1 shown)\n"
            "\n1 allocation of 1000 bytes by malloc (1 leaked)\n  #0 0x200 ??\n");
  EXPECT_EQ(run("allocators", {}, {t}),
            "4 allocations of 1007 bytes (2 groups, 1 process)\n"
            "\n3 allocations of 7 bytes by malloc (2 leaked)\n  #0 0x100 ??\n"
            "\n1 allocation of 1000 bytes by malloc (1 leaked)\n  #0 0x200 ??\n");
  ReportOptions json;
  json.json = true;
  std::string h = run("histogram", json, {t});
  // Buckets 0, 1, 2-3, 4-7, ... 512-1023: size 0 -> [0,0], 3 -> [2,3], 4 -> [4,7],
  // 1000 -> [512,1023]; the ones between are listed empty.
  EXPECT_NE(h.find("\"allocations\": 4"), std::string::npos) << h;
  EXPECT_NE(h.find("\"min\": 0,\n      \"max\": 0,\n      \"allocations\": 1"), std::string::npos) << h;
  EXPECT_NE(h.find("\"min\": 2,\n      \"max\": 3,\n      \"allocations\": 1,\n      \"bytes\": 3,\n      \"leaked_blocks\": 0"),
            std::string::npos) << h;
  EXPECT_NE(h.find("\"min\": 512,\n      \"max\": 1023,\n      \"allocations\": 1,\n      \"bytes\": 1000,\n      \"leaked_blocks\": 1"),
            std::string::npos) << h;
  EXPECT_NE(h.find("\"min\": 1,\n      \"max\": 1,\n      \"allocations\": 0"), std::string::npos) << h;
}

TEST_F(HeapReports, DiffMatchesAndSubtracts) {
  std::string a = write_trace("a.trace",
                              "3 300 2000 alloc function=\"malloc\" size=8 address=0x10 frames=[0x100]\n"
                              "4 300 2100 alloc function=\"malloc\" size=8 address=0x20 frames=[0x100]\n"
                              "5 300 2200 alloc function=\"malloc\" size=5 address=0x30 frames=[0x200]\n"
                              "6 300 9000 exit status=0\n");
  std::string b = write_trace("b.trace",
                              "3 300 2000 alloc function=\"malloc\" size=8 address=0x10 frames=[0x100]\n"
                              "4 300 2100 free function=\"free\" address=0x10\n"
                              "5 300 2200 alloc function=\"malloc\" size=5 address=0x30 frames=[0x200]\n"
                              "6 300 9000 exit status=0\n");
  EXPECT_EQ(run("diff", {}, {a, b}),
            "leaked: 21 bytes in 3 blocks -> 5 bytes in 1 block (-16 bytes, -2 blocks)\n"
            "allocated: 3 allocations of 21 bytes -> 2 allocations of 13 bytes (-1 allocations, -8 bytes)\n"
            "1 group changed\n"
            "\nleaked -16 bytes, -2 blocks (16 -> 0 bytes); allocations -1 (2 -> 1) by malloc\n"
            "  #0 0x100 ??\n");
}

TEST_F(HeapReports, WarnsAboutTracesWithoutMemtrace) {
  std::string path = (dir_ / "c.trace").string();
  std::ofstream(path) << "functracer-trace 1\n"
                         "1 300 1000 header format=1 arch=\"x86_64\" pid=300 exe=\"/bin/x\" "
                         "cmdline=\"x\" start_realtime_ns=1 plugins=\"calltrace\" backtrace_depth=0\n"
                         "2 300 9000 exit status=0\n";
  EXPECT_EQ(run("leaks", {}, {path}), "0 bytes in 0 blocks leaked (0 groups, 1 process)\n");
  ASSERT_EQ(diag_.warnings.size(), 1u);
  EXPECT_NE(diag_.warnings[0].find("traced without memtrace"), std::string::npos);
}

}  // namespace
}  // namespace ft::post
