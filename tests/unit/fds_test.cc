// Tests of the fds report on traces in tests/unit/data/ written by hand
// (tests/unit/data/fds-README.md works out by hand what each leaves open): the replay
// rules of doc/trace-format.md §3.6, grouping, sorting, --tid, --top, the listings,
// the text and JSON outputs, and the warnings.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "json_reader.h"
#include "test_support.h"
#include "postproc/report_fds.h"
#include "postproc/trace_reader.h"

namespace ft::post {
namespace {

using test::read_file;
using test::TempDir;
using test::RunResult;
using test::contains;
using test::data;
using test::split_lines;

namespace fs = std::filesystem;

FdReport fds(const std::vector<std::string>& traces, CollectingDiagnostics& diag,
             FdOptions options = {}) {
  auto r = compute_fds(traces, options, diag);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? std::move(r).value() : FdReport{};
}

FdReport fds(const std::vector<std::string>& traces, FdOptions options = {}) {
  CollectingDiagnostics diag;
  return fds(traces, diag, std::move(options));
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// One line per group, in report order: "KIND COUNT FUNCTION [FRAMES] ENTRY...", an
// entry "FD:PATH" or "STREAM/FD:PATH" ("-" for an unknown fd or a missing path).
std::vector<std::string> summary(const FdReport& r) {
  std::vector<std::string> out;
  for (const FdGroup& g : r.groups) {
    std::string s = std::string(g.kind == FdKind::kFd ? "fd" : "stream") + " " +
                    std::to_string(g.count) + " " + g.mangled + " [";
    for (size_t i = 0; i < g.frames.size(); ++i) s += (i ? "," : "") + hex(g.frames[i].address);
    s += "]";
    for (const OpenEntry& e : g.open) {
      s += " ";
      if (g.kind == FdKind::kStream) s += hex(e.stream) + "/";
      s += (e.fd >= 0 ? std::to_string(e.fd) : std::string("-")) + ":" + e.path.value_or("-");
    }
    out.push_back(s);
  }
  return out;
}

using Lines = std::vector<std::string>;

// ---------------------------------------------------------------------------
// The replay

// fds-basic.trace (README): left open are fds 3, 12 (open, same backtrace), 8, 9
// (pipe), 5 (dup2 onto the open fd 5), 6 (eventfd, replacing the socket whose close
// was not seen), 13 (accept, replacing thread 400's open); streams 0x6000 and 0x8000
// (fopen, same backtrace; 0x8000's fd closed underneath it) and 0x7000 (fdopen).
TEST(FdReplay, OneProcess) {
  CollectingDiagnostics diag;
  FdReport r = fds({data("fds-basic.trace")}, diag);
  EXPECT_EQ(r.open_fds, 7u);
  EXPECT_EQ(r.open_streams, 3u);
  EXPECT_EQ(r.processes, 1u);
  EXPECT_EQ(r.groups_total, 7u);
  EXPECT_EQ(r.groups_shown, 7u);
  EXPECT_EQ(summary(r),
            (Lines{"fd 2 open [0x401200,0x401900] 3:/tmp/a.txt 12:/tmp/b.txt",
                   "stream 2 fopen [0x401700,0x401900] 0x6000/7:/tmp/out.log 0x8000/-:/etc/group",
                   "fd 2 pipe [0x401800] 8:- 9:-", "fd 1 dup2 [0x401350] 5:-",
                   "fd 1 eventfd [0x401450] 6:-", "stream 1 fdopen [0x401810] 0x7000/9:-",
                   "fd 1 accept [0x401b10] 13:-"}));
  EXPECT_TRUE(diag.warnings.empty()) << testing::PrintToString(diag.warnings);
}

TEST(FdReplay, ExecClosesCloexecFdsAndStreamsLeakWithTheOldImage) {
  // fds-exec.trace (README): fds 4 and 5 are closed by the exec; streams 0x5000 and
  // 0x5100 leak at the exec (0x5000's fd was close-on-exec, and the address is used
  // again by a new stream after it); the close of fd 7 in the new image is of nothing
  // open (its stream is gone, the fd was never an fd_open).
  CollectingDiagnostics diag;
  FdReport r = fds({data("fds-exec.trace")}, diag);
  EXPECT_EQ(r.open_fds, 2u);
  EXPECT_EQ(r.open_streams, 3u);
  EXPECT_EQ(summary(r),
            (Lines{"stream 2 fopen [0x401300] 0x5000/6:/etc/hosts 0x5100/7:/etc/passwd",
                   "fd 1 open [0x401200,0x401900] 3:/dev/null", "fd 1 open [0x402000] 4:/tmp/new",
                   "stream 1 fopen [0x402100] 0x5000/5:/tmp/new2"}));
  // The header lists fileops after memtrace: no warning.
  EXPECT_TRUE(diag.warnings.empty()) << testing::PrintToString(diag.warnings);
}

TEST(FdReplay, TwoProcessesShareGroups) {
  FdReport r = fds({data("fds-basic.trace"), data("fds-exec.trace")});
  EXPECT_EQ(r.processes, 2u);
  EXPECT_EQ(r.open_fds, 9u);
  EXPECT_EQ(r.open_streams, 6u);
  EXPECT_EQ(r.groups_total, 10u);
  ASSERT_EQ(r.groups.size(), 10u);
  // Listed in the order they were left open: the first trace's, then the second's.
  EXPECT_EQ(summary(r)[0], "fd 3 open [0x401200,0x401900] 3:/tmp/a.txt 12:/tmp/b.txt 3:/dev/null");
  EXPECT_EQ(summary(r)[1], "stream 2 fopen [0x401300] 0x5000/6:/etc/hosts 0x5100/7:/etc/passwd");
  EXPECT_EQ(summary(r)[9], "stream 1 fopen [0x402100] 0x5000/5:/tmp/new2");
}

TEST(FdReplay, TruncatedTrace) {
  // The cut line would have closed fd 4; it is ignored, with a warning, and so is the
  // missing end record.
  CollectingDiagnostics diag;
  FdReport r = fds({data("fds-truncated.trace")}, diag);
  EXPECT_EQ(summary(r),
            (Lines{"fd 1 open [0x401000] 4:/b", "stream 1 fopen [0x401100] 0x9000/5:/c"}));
  ASSERT_EQ(diag.warnings.size(), 1u) << testing::PrintToString(diag.warnings);
  EXPECT_TRUE(contains(diag.warnings[0], "fds-truncated.trace:8: the last line is incomplete"))
      << diag.warnings[0];
  EXPECT_TRUE(contains(diag.warnings[0], "ends without an exit")) << diag.warnings[0];
}

TEST(FdReplay, TidKeepsWhatThatThreadOpened) {
  FdOptions options;
  options.tid = 401;
  FdReport r = fds({data("fds-basic.trace")}, options);
  EXPECT_EQ(r.open_fds, 3u);
  EXPECT_EQ(r.open_streams, 1u);
  EXPECT_EQ(summary(r),
            (Lines{"fd 2 pipe [0x401800] 8:- 9:-", "stream 1 fdopen [0x401810] 0x7000/9:-",
                   "fd 1 accept [0x401b10] 13:-"}));
  // Thread 400's fd 13 was replaced by thread 401's accept: not left open by 400.
  options.tid = 400;
  r = fds({data("fds-basic.trace")}, options);
  EXPECT_EQ(r.open_fds, 4u);
  EXPECT_EQ(r.open_streams, 2u);
  EXPECT_EQ(summary(r),
            (Lines{"fd 2 open [0x401200,0x401900] 3:/tmp/a.txt 12:/tmp/b.txt",
                   "stream 2 fopen [0x401700,0x401900] 0x6000/7:/tmp/out.log 0x8000/-:/etc/group",
                   "fd 1 dup2 [0x401350] 5:-", "fd 1 eventfd [0x401450] 6:-"}));
  options.tid = 999;
  r = fds({data("fds-basic.trace")}, options);
  EXPECT_EQ(r.open_fds + r.open_streams + r.groups_total, 0u);
}

TEST(FdReplay, TopKeepsTheFirstGroupsAndAllTotals) {
  FdOptions options;
  options.top = 2;
  FdReport r = fds({data("fds-basic.trace")}, options);
  EXPECT_EQ(r.open_fds, 7u);
  EXPECT_EQ(r.open_streams, 3u);
  EXPECT_EQ(r.groups_total, 7u);
  EXPECT_EQ(r.groups_shown, 2u);
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.groups[0].mangled, "open");
  EXPECT_EQ(r.groups[1].mangled, "fopen");
  EXPECT_EQ(split_lines(format_fds_text(r))[0],
            "7 file descriptors and 3 streams left open (7 groups, 1 process; the first 2 shown)");
}

TEST(FdReplay, FunctionAndSuppressions) {
  FdOptions options;
  options.filter.add_function("pipe");
  FdReport r = fds({data("fds-basic.trace")}, options);
  EXPECT_EQ(summary(r), (Lines{"fd 2 pipe [0x401800] 8:- 9:-"}));
  EXPECT_EQ(r.open_fds, 2u);
  EXPECT_EQ(r.open_streams, 0u);

  FdOptions suppress;
  suppress.filter.add_suppression("fopen");
  r = fds({data("fds-basic.trace")}, suppress);
  EXPECT_EQ(r.groups_total, 6u);
  EXPECT_EQ(r.open_fds, 7u);
  EXPECT_EQ(r.open_streams, 1u);
  EXPECT_EQ(r.suppressed_streams, 2u);
  EXPECT_EQ(r.suppressed_fds, 0u);
  EXPECT_EQ(r.suppressed_groups, 1u);
  EXPECT_TRUE(
      contains(format_fds_text(r), "\nsuppressed: 0 file descriptors and 2 streams (1 group)\n"));
}

TEST(FdReplay, ListingIsCapped) {
  CollectingDiagnostics diag;
  FdReport r = fds({data("fds-many.trace")}, diag);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].count, 12u);
  ASSERT_EQ(r.groups[0].open.size(), FdReport::kMaxListed);
  EXPECT_EQ(r.groups[0].open.front().fd, 3);
  EXPECT_EQ(r.groups[0].open.back().fd, 12);
  EXPECT_EQ(split_lines(format_fds_text(r))[2],
            "12 fds opened by open: 3 /tmp/f3, 4 /tmp/f4, 5 /tmp/f5, 6 /tmp/f6, 7 /tmp/f7, "
            "8 /tmp/f8, 9 /tmp/f9, 10 /tmp/f10, 11 /tmp/f11, 12 /tmp/f12 and 2 more");
  ASSERT_EQ(diag.warnings.size(), 1u) << testing::PrintToString(diag.warnings);
  EXPECT_TRUE(contains(diag.warnings[0], "fds-many.trace: 2 events were lost")) << diag.warnings[0];
}

TEST(FdReplay, ListingIsCappedOverTheSitesOfAGroup) {
  // The same code in two processes that mapped its module at different addresses: two
  // sites, one group. Each process leaves 6 fds open from it; the group lists 10.
  TempDir tmp;
  auto trace = [&](int pid, uint64_t base) {
    std::string t =
        "functracer-trace 1\n"
        "1 " +
        std::to_string(pid) + " 100 header format=1 arch=\"x86_64\" pid=" + std::to_string(pid) +
        " exe=\"/bin/m\" cmdline=\"m\" start_realtime_ns=0 "
        "plugins=\"fileops\" backtrace_depth=4\n"
        "2 " +
        std::to_string(pid) + " 100 module base=" + hex(base) + " end=" + hex(base + 0x10000) +
        " offset=0x0 path=\"/nonexistent/libfds.so\" build_id=\"\"\n";
    for (int fd = 3; fd < 9; ++fd) {
      t += std::to_string(fd) + " " + std::to_string(pid) + " " + std::to_string(100 + fd) +
           " fd_open function=\"socket\" fd=" + std::to_string(fd) + " frames=[" +
           hex(base + 0x1234) + "]\n";
    }
    t += "9 " + std::to_string(pid) + " 200 exit status=0\n";
    return tmp.write(std::to_string(pid) + ".trace", t);
  };
  std::string a = trace(460, 0x7f0000000000);
  std::string b = trace(461, 0x7f1000000000);
  FdReport r = fds({a, b});
  EXPECT_EQ(r.open_fds, 12u);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].count, 12u);
  ASSERT_EQ(r.groups[0].open.size(), FdReport::kMaxListed);
  std::vector<int64_t> listed;
  for (const OpenEntry& e : r.groups[0].open) listed.push_back(e.fd);
  EXPECT_EQ(listed, (std::vector<int64_t>{3, 4, 5, 6, 7, 8, 3, 4, 5, 6}));
  EXPECT_TRUE(
      contains(format_fds_text(r), "opened by socket: 3, 4, 5, 6, 7, 8, 3, 4, 5, 6 and 2 more\n"))
      << format_fds_text(r);
}

TEST(FdReplay, AGroupOfBothKindsIsShownAsTwoEntries) {
  TempDir tmp;
  std::string path =
      tmp.write("mixed.trace",
                "functracer-trace 1\n"
                "1 450 100 header format=1 arch=\"x86_64\" pid=450 exe=\"/bin/m\" cmdline=\"m\" "
                "start_realtime_ns=0 plugins=\"fileops\" backtrace_depth=4\n"
                "2 450 200 fd_open function=\"mine\" fd=3 frames=[0x401000]\n"
                "3 450 300 file_open function=\"mine\" stream=0x7000 fd=-1 frames=[0x401000]\n"
                "4 450 400 exit status=0\n");
  FdReport r = fds({path});
  EXPECT_EQ(r.groups_total, 1u);
  EXPECT_EQ(r.groups_shown, 1u);
  EXPECT_EQ(summary(r), (Lines{"fd 1 mine [0x401000] 3:-", "stream 1 mine [0x401000] 0x7000/-:-"}));
  EXPECT_EQ(split_lines(format_fds_text(r))[0],
            "1 file descriptor and 1 stream left open (1 group, 1 process)");
}

TEST(FdReplay, WarnsAboutATraceWithoutFileops) {
  // leaks-basic.trace: memtrace only. fds-none.trace: fileops in the header, nothing
  // recorded. fds-exec.trace: fileops second in the list.
  CollectingDiagnostics diag;
  FdReport r =
      fds({data("leaks-basic.trace"), data("fds-none.trace"), data("fds-exec.trace")}, diag);
  EXPECT_EQ(r.processes, 3u);
  ASSERT_EQ(diag.warnings.size(), 1u) << testing::PrintToString(diag.warnings);
  EXPECT_TRUE(contains(diag.warnings[0],
                       "leaks-basic.trace: traced without fileops (plugins: memtrace), so it "
                       "has no descriptor records"))
      << diag.warnings[0];
}

TEST(HeaderListsPlugin, CommaSeparatedNames) {
  auto header = [](const std::string& plugins) {
    TraceRecord r;
    r.type = "header";
    r.add("plugins", plugins);
    return r;
  };
  TraceRecord h = header("memtrace,fileops,calltrace");
  EXPECT_TRUE(header_lists_plugin(&h, "memtrace"));
  EXPECT_TRUE(header_lists_plugin(&h, "fileops"));
  EXPECT_TRUE(header_lists_plugin(&h, "calltrace"));
  EXPECT_FALSE(header_lists_plugin(&h, "file"));
  EXPECT_FALSE(header_lists_plugin(&h, "fileops,calltrace"));
  h = header("fileopsx");
  EXPECT_FALSE(header_lists_plugin(&h, "fileops"));
  h = header("");
  EXPECT_FALSE(header_lists_plugin(&h, "fileops"));
  TraceRecord none;
  none.type = "header";
  EXPECT_FALSE(header_lists_plugin(&none, "fileops"));
  EXPECT_FALSE(header_lists_plugin(nullptr, "fileops"));
}

// ---------------------------------------------------------------------------
// Outputs

// fds-basic.trace as text, written out by hand from the README.
constexpr const char* kBasicText =
    "7 file descriptors and 3 streams left open (7 groups, 1 process)\n"
    "\n"
    "2 fds opened by open: 3 /tmp/a.txt, 12 /tmp/b.txt\n"
    "  #0 0x401200 ??\n"
    "  #1 0x401900 ??\n"
    "\n"
    "2 streams opened by fopen: 0x6000 (fd 7) /tmp/out.log, 0x8000 (fd ?) /etc/group\n"
    "  #0 0x401700 ??\n"
    "  #1 0x401900 ??\n"
    "\n"
    "2 fds opened by pipe: 8, 9\n"
    "  #0 0x401800 ??\n"
    "\n"
    "1 fd opened by dup2: 5\n"
    "  #0 0x401350 ??\n"
    "\n"
    "1 fd opened by eventfd: 6\n"
    "  #0 0x401450 ??\n"
    "\n"
    "1 stream opened by fdopen: 0x7000 (fd 9)\n"
    "  #0 0x401810 ??\n"
    "\n"
    "1 fd opened by accept: 13\n"
    "  #0 0x401b10 ??\n";

TEST(FdOutput, Text) { EXPECT_EQ(format_fds_text(fds({data("fds-basic.trace")})), kBasicText); }

TEST(FdOutput, JsonShape) {
  std::string text = format_fds_json(fds({data("fds-basic.trace")}));
  std::optional<Json> j = JsonParser(text).parse();
  ASSERT_TRUE(j.has_value()) << text;
  EXPECT_EQ(j->keys(), (std::vector<std::string>{"open_fds", "open_streams", "processes",
                                                 "groups_total", "groups"}));
  EXPECT_EQ(j->get("open_fds")->number, 7);
  EXPECT_EQ(j->get("open_streams")->number, 3);
  EXPECT_EQ(j->get("processes")->number, 1);
  EXPECT_EQ(j->get("groups_total")->number, 7);
  const Json& groups = *j->get("groups");
  ASSERT_EQ(groups.items.size(), 7u);
  for (const Json& g : groups.items) {
    ASSERT_EQ(g.keys(),
              (std::vector<std::string>{"kind", "count", "function", "mangled", "open", "frames"}));
  }
  const Json& open = groups.items[0];
  EXPECT_EQ(open.get("kind")->string, "fd");
  EXPECT_EQ(open.get("count")->number, 2);
  EXPECT_EQ(open.get("function")->string, "open");
  EXPECT_EQ(open.get("mangled")->string, "open");
  const Json& entries = *open.get("open");
  ASSERT_EQ(entries.items.size(), 2u);
  ASSERT_EQ(entries.items[0].keys(), (std::vector<std::string>{"fd", "path"}));
  EXPECT_EQ(entries.items[0].get("fd")->number, 3);
  EXPECT_EQ(entries.items[0].get("path")->string, "/tmp/a.txt");
  EXPECT_EQ(entries.items[1].get("fd")->number, 12);
  const Json& frames = *open.get("frames");
  ASSERT_EQ(frames.items.size(), 2u);
  EXPECT_EQ(frames.items[0].get("address")->string, "0x401200");
  EXPECT_EQ(frames.items[0].get("function")->type, Json::Type::kNull);
  EXPECT_EQ(frames.items[1].get("address")->string, "0x401900");

  const Json& streams = groups.items[1];
  EXPECT_EQ(streams.get("kind")->string, "stream");
  EXPECT_EQ(streams.get("function")->string, "fopen");
  const Json& s = *streams.get("open");
  ASSERT_EQ(s.items.size(), 2u);
  for (const Json& e : s.items)
    ASSERT_EQ(e.keys(), (std::vector<std::string>{"fd", "path", "stream"}));
  EXPECT_EQ(s.items[0].get("fd")->number, 7);
  EXPECT_EQ(s.items[0].get("stream")->string, "0x6000");
  EXPECT_EQ(s.items[1].get("fd")->type, Json::Type::kNull);  // closed underneath
  EXPECT_EQ(s.items[1].get("path")->string, "/etc/group");
  EXPECT_EQ(s.items[1].get("stream")->string, "0x8000");

  const Json& pipe = groups.items[2];
  ASSERT_EQ(pipe.get("open")->items.size(), 2u);
  for (const Json& e : pipe.get("open")->items)
    ASSERT_EQ(e.keys(), (std::vector<std::string>{"fd", "path"}));
  EXPECT_EQ(pipe.get("open")->items[0].get("path")->type, Json::Type::kNull);
  const Json& fdopen = groups.items[5];
  EXPECT_EQ(fdopen.get("kind")->string, "stream");
  EXPECT_EQ(fdopen.get("count")->number, 1);
  ASSERT_EQ(fdopen.get("open")->items.size(), 1u);
  ASSERT_EQ(fdopen.get("open")->items[0].keys(),
            (std::vector<std::string>{"fd", "path", "stream"}));
  EXPECT_EQ(fdopen.get("open")->items[0].get("fd")->number, 9);
  EXPECT_EQ(fdopen.get("open")->items[0].get("path")->type, Json::Type::kNull);
}

// ---------------------------------------------------------------------------
// Through the functracer-postproc binary

class Binary : public test::PostprocBinary {};

TEST_F(Binary, FdsTextAndJson) {
  RunResult r = run({"fds", data("fds-basic.trace")});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, kBasicText);
  EXPECT_EQ(r.err, "");
  r = run({"fds", "--json", data("fds-basic.trace")});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, format_fds_json(fds({data("fds-basic.trace")})));
  EXPECT_TRUE(JsonParser(r.out).parse().has_value()) << r.out;
}

TEST_F(Binary, FdsOptions) {
  RunResult r = run({"fds", "--tid=401", "--top", "1", data("fds-basic.trace")});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out,
            "3 file descriptors and 1 stream left open (3 groups, 1 process; the first 1 shown)\n"
            "\n"
            "2 fds opened by pipe: 8, 9\n"
            "  #0 0x401800 ??\n");
  r = run({"fds", "--function", "dup*", data("fds-basic.trace")});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(contains(r.out, "1 file descriptor and 0 streams left open (1 group, 1 process)\n"))
      << r.out;
  r = run({"fds", data("leaks-basic.trace")});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(contains(r.err, "warning: " + data("leaks-basic.trace") + ": traced without fileops"))
      << r.err;
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"fds", "--sort=count", data("fds-basic.trace")},
                                             {"fds", "--size=1-10", data("fds-basic.trace")},
                                             {"fds", "--time", data("fds-basic.trace")},
                                             {"fds", "--top=0", data("fds-basic.trace")}}) {
    r = run(args);
    EXPECT_EQ(r.status, 2) << args[1];
    EXPECT_EQ(r.out, "") << args[1];
  }
}

}  // namespace
}  // namespace ft::post
