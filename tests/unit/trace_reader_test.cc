// The trace reader (postproc/trace_reader.h): complete, truncated and malformed traces,
// files that are not traces, records out of order, lines longer than its read buffer.
// The warnings name the file and line.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/trace_record.h"
#include "postproc/trace_reader.h"
#include "test_support.h"

namespace ft::post {
namespace {

using test::contains;
using test::data;
using test::TempDir;

// Reads every record; the number read.
int count_records(TraceReader& reader) {
  int n = 0;
  while (reader.next()) ++n;
  return n;
}

TEST(TraceReader, ReadsCompleteTrace) {
  CollectingDiagnostics diag;
  auto reader = TraceReader::open(data("recursion.trace"), diag);
  ASSERT_TRUE(reader.ok()) << reader.error().message;
  EXPECT_EQ(reader->pid(), 100);
  ASSERT_NE(reader->header(), nullptr);
  EXPECT_EQ(*reader->header()->get_str("arch"), "x86_64");
  std::vector<std::string> types;
  uint64_t expected_seq = 1;
  while (const TraceRecord* r = reader->next()) {
    EXPECT_EQ(r->seq, expected_seq++);
    EXPECT_EQ(reader->line_number(), r->seq + 1);
    types.push_back(r->type);
  }
  EXPECT_EQ(types.size(), 28u);
  EXPECT_EQ(types.front(), "header");
  EXPECT_EQ(types.back(), "stats");
  EXPECT_EQ(reader->last_ts(), 4100u);
  EXPECT_TRUE(reader->complete());
  EXPECT_TRUE(diag.warnings.empty()) << diag.warnings.front();
  EXPECT_EQ(reader->next(), nullptr);  // stays at the end
}

TEST(TraceReader, TruncatedTraceWarnsWithLine) {
  CollectingDiagnostics diag;
  auto reader = TraceReader::open(data("truncated.trace"), diag);
  ASSERT_TRUE(reader.ok()) << reader.error().message;
  EXPECT_EQ(count_records(*reader), 6);  // the cut seventh record is ignored
  EXPECT_FALSE(reader->complete());
  ASSERT_EQ(diag.warnings.size(), 1u);  // one line says it all
  EXPECT_TRUE(contains(diag.warnings[0], "truncated.trace:8: the last line is incomplete"))
      << diag.warnings[0];
  EXPECT_TRUE(contains(diag.warnings[0], "the trace ends without an exit"))
      << diag.warnings[0];
}

TEST(TraceReader, MalformedLineIsSkipped) {
  CollectingDiagnostics diag;
  auto reader = TraceReader::open(data("malformed.trace"), diag);
  ASSERT_TRUE(reader.ok());
  std::vector<uint64_t> seqs;
  while (const TraceRecord* r = reader->next()) seqs.push_back(r->seq);
  EXPECT_EQ(seqs, (std::vector<uint64_t>{1, 2, 4, 5, 6}));
  EXPECT_FALSE(reader->complete());
  ASSERT_EQ(diag.warnings.size(), 1u);
  EXPECT_TRUE(contains(diag.warnings[0], "malformed.trace:4: malformed record"))
      << diag.warnings[0];
  EXPECT_TRUE(contains(diag.warnings[0], "field 'retval'")) << diag.warnings[0];
}

TEST(TraceReader, NotATrace) {
  CollectingDiagnostics diag;
  auto reader = TraceReader::open(data("not_a_trace.txt"), diag);
  ASSERT_FALSE(reader.ok());
  EXPECT_TRUE(contains(reader.error().message, "not_a_trace.txt: not a functracer trace"))
      << reader.error().message;
  EXPECT_FALSE(check_trace_file(data("not_a_trace.txt")).ok());
  EXPECT_TRUE(check_trace_file(data("recursion.trace")).ok());
}

TEST(TraceReader, OpenErrors) {
  TempDir tmp;
  CollectingDiagnostics diag;
  // Each file that cannot be read, and what its error must say ("" when any error will do).
  struct Case {
    std::string path;
    std::string message;
  };
  std::vector<Case> cases = {
      {tmp.path() + "/missing.trace", "missing.trace: No such file"},
      {tmp.write("empty.trace", ""), "empty.trace: not a functracer trace"},
      {tmp.write("v3.trace", "functracer-trace 3\n"), "unsupported trace format version '3'"},
      {tmp.write("v0.trace", "functracer-trace 0\n"), "reads versions 1 to 2"},
      {tmp.path(), ""},
      {tmp.write("bin", std::string(100000, '\x7f')), "not a functracer trace"},
  };
  for (const Case& c : cases) {
    auto reader = TraceReader::open(c.path, diag);
    ASSERT_FALSE(reader.ok()) << c.path;
    EXPECT_TRUE(contains(reader.error().message, c.message)) << reader.error().message;
  }
}

// Format 2: a `stack` record is not returned; a later `stack=N` reads as the frames
// of stack N (the last record of that id); a reference to no earlier stack is read
// without frames and warned about. In a version 1 trace, `stack` means nothing.
TEST(TraceReader, StackReferencesReadAsFrames) {
  TempDir tmp;
  const std::string text = test::read_file(data("stacks.trace"));
  ASSERT_EQ(text.rfind("functracer-trace 2\n", 0), 0u);
  const std::string records = text.substr(text.find('\n') + 1);
  CollectingDiagnostics diag;
  auto reader = TraceReader::open(data("stacks.trace"), diag);
  ASSERT_TRUE(reader.ok()) << reader.error().message;
  std::vector<const char*> want_types = {"header", "alloc", "alloc", "free", "alloc", "exit"};
  std::vector<HexList> want_frames = {{}, {0x10, 0x20}, {0x11}, {0x10, 0x20}, {}, {}};
  size_t i = 0;
  while (const TraceRecord* r = reader->next()) {
    ASSERT_LT(i, want_types.size());
    EXPECT_EQ(r->type, want_types[i]);
    const HexList* frames = r->get_list("frames");
    EXPECT_EQ(frames ? *frames : HexList{}, want_frames[i]) << "record " << r->seq;
    EXPECT_EQ(r->get("stack"), nullptr) << "record " << r->seq;
    ++i;
  }
  EXPECT_EQ(i, want_types.size());
  ASSERT_EQ(diag.warnings.size(), 1u);
  EXPECT_TRUE(contains(diag.warnings[0], "stacks.trace:8: the record refers to a call stack")) << diag.warnings[0];
  EXPECT_FALSE(reader->complete());

  CollectingDiagnostics v1diag;
  auto v1 = TraceReader::open(tmp.write("v1.trace", "functracer-trace 1\n" + records), v1diag);
  ASSERT_TRUE(v1.ok());
  size_t stacks = 0, refs = 0;
  while (const TraceRecord* r = v1->next()) {
    stacks += r->type == "stack";
    refs += r->get_int("stack").has_value();
  }
  EXPECT_EQ(stacks, 2u);
  EXPECT_EQ(refs, 4u);
  EXPECT_TRUE(v1diag.warnings.empty());
}

// A stack record longer than a reader takes (kMaxStackFrames) is skipped as malformed,
// so that no short record can stand for a list of any size; its references read
// without frames.
TEST(TraceReader, OverlongStackRecordIsSkipped) {
  TempDir tmp;
  auto frames = [](size_t n) {
    std::string list = "[";
    for (size_t i = 0; i < n; ++i) list += (i ? ",0x" : "0x") + std::to_string(10 + i % 10);
    return list + "]";
  };
  const std::string text = "functracer-trace 2\n"
                           "1 7 1 header pid=7\n"
                           "2 7 2 stack id=1 frames=" + frames(kMaxStackFrames) + "\n"
                           "3 7 3 stack id=2 frames=" + frames(kMaxStackFrames + 1) + "\n"
                           "4 7 4 alloc function=\"malloc\" size=8 address=0x100 stack=1\n"
                           "5 7 5 alloc function=\"malloc\" size=8 address=0x200 stack=2\n"
                           "6 7 6 exit status=0\n";
  CollectingDiagnostics diag;
  auto reader = TraceReader::open(tmp.write("long.trace", text), diag);
  ASSERT_TRUE(reader.ok());
  std::vector<size_t> sizes;
  while (const TraceRecord* r = reader->next()) {
    if (r->type != "alloc") continue;
    const HexList* f = r->get_list("frames");
    sizes.push_back(f ? f->size() : 0);
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{kMaxStackFrames, 0}));
  ASSERT_EQ(diag.warnings.size(), 2u);
  EXPECT_TRUE(contains(diag.warnings[0], "long.trace:4: malformed stack record (more than 4096 frames)")) << diag.warnings[0];
  EXPECT_TRUE(contains(diag.warnings[1], "long.trace:6: the record refers to a call stack")) << diag.warnings[1];
}

TEST(TraceReader, MissingHeaderAndDisorder) {
  TempDir tmp;
  std::string path = tmp.write("h.trace",
                               "functracer-trace 1\n"
                               "1 77 5 process ppid=1\n"
                               "3 77 6 signal signal=2 name=\"SIGINT\"\n"
                               "2 77 7 exit status=0\n");
  CollectingDiagnostics diag;
  auto reader = TraceReader::open(path, diag);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(reader->pid(), 77);
  EXPECT_EQ(reader->header(), nullptr);
  EXPECT_EQ(count_records(*reader), 3);
  ASSERT_EQ(diag.warnings.size(), 2u);
  EXPECT_TRUE(contains(diag.warnings[0], "h.trace:2: the first record is 'process'"));
  EXPECT_TRUE(contains(diag.warnings[1], "h.trace:4: sequence number 2 does not follow 3"));
  EXPECT_TRUE(reader->complete());
}

TEST(TraceReader, OnlyMagicLine) {
  TempDir tmp;
  CollectingDiagnostics diag;
  auto reader = TraceReader::open(tmp.write("m.trace", "functracer-trace 1\n"), diag);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(reader->next(), nullptr);
  ASSERT_EQ(diag.warnings.size(), 1u);
  EXPECT_TRUE(contains(diag.warnings[0], "m.trace:1: the trace ends without"));
}

TEST(TraceReader, LongLinesAcrossBuffers) {
  // A string field far larger than the read buffer, and many records.
  TempDir tmp;
  std::string big(300000, 'x');
  big[1234] = '\n';
  big[200000] = '\xff';
  std::string text = "functracer-trace 1\n";
  uint64_t seq = 1;
  auto append = [&](uint64_t ts, const char* type, const char* key, TraceValue value) {
    TraceRecord r;
    r.seq = seq++;
    r.tid = 9;
    r.ts_ns = ts;
    r.type = type;
    r.add(key, std::move(value));
    text += format_record(r) + "\n";
  };
  append(0, "header", "pid", int64_t{9});
  append(0, "blob", "data", big);
  for (int i = 0; i < 5000; ++i) append(static_cast<uint64_t>(i), "tick", "i", int64_t{i});
  append(0, "exit", "status", int64_t{0});

  CollectingDiagnostics diag;
  auto reader = TraceReader::open(tmp.write("long.trace", text), diag);
  ASSERT_TRUE(reader.ok());
  uint64_t n = 0;
  while (const TraceRecord* r = reader->next()) {
    ++n;
    if (r->type == "blob") {
      EXPECT_EQ(*r->get_str("data"), big);
    }
  }
  EXPECT_EQ(n, seq - 1);
  EXPECT_EQ(n, 5003u);
  EXPECT_TRUE(reader->complete());
  EXPECT_TRUE(diag.warnings.empty());
}

}  // namespace
}  // namespace ft::post
