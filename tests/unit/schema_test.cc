// Tests of the record schema (functracer/schema.h): each typed view written through
// the engine's writer gives the line doc/trace-format.md section 3 describes, written
// out by hand here, and reads back to the same values; the plugin SDK's
// RecordBuilder produces the same fields as the engine's writer.
#include "functracer/schema.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/trace_record.h"
#include "functracer/sdk.h"

namespace ft {
namespace {

namespace sc = schema;

template <class View>
std::string line_of(const char* type, const View& v) {
  TraceRecord r;
  r.seq = 5;
  r.tid = 77;
  r.ts_ns = 1000;
  r.type = type;
  RecordFieldWriter w(r);
  v.write(w);
  return format_record(r);
}

TraceRecord parsed(const std::string& line) {
  auto r = parse_record(line);
  EXPECT_TRUE(r.ok()) << line;
  return r.ok() ? *r : TraceRecord{};
}

TEST(Schema, AllocRecordLineAndBack) {
  std::vector<uint64_t> frames = {0x401000, 0x402abc};
  sc::AllocRecord a{"memalign", 100, 0x5000, 64, {frames.data(), frames.size()}};
  std::string line = line_of(sc::AllocRecord::kType, a);
  EXPECT_EQ(line, "5 77 1000 alloc function=\"memalign\" size=100 address=0x5000 align=64 "
                  "frames=[0x401000,0x402abc]");
  TraceRecord r = parsed(line);
  auto back = sc::AllocRecord::read(r);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->function, "memalign");
  EXPECT_EQ(back->size, 100u);
  EXPECT_EQ(back->address, 0x5000u);
  EXPECT_EQ(back->align, 64u);
  EXPECT_EQ(std::vector<uint64_t>(back->frames.begin(), back->frames.end()), frames);
}

TEST(Schema, AllocWithoutAlignOrFramesAndHugeSize) {
  sc::AllocRecord a{"malloc", ~uint64_t{0}, 0x10, 0, {}};
  EXPECT_EQ(line_of(sc::type::kAlloc, a),
            "5 77 1000 alloc function=\"malloc\" size=9223372036854775807 address=0x10");
}

TEST(Schema, HostileAllocReadsSafely) {
  // No address: not a block. A negative size reads as 0.
  EXPECT_FALSE(sc::AllocRecord::read(parsed("1 1 1 alloc function=\"malloc\" size=8")));
  // The view points into the record: the record outlives it.
  TraceRecord a_rec = parsed("1 1 1 alloc size=-8 address=0x20 frames=\"x\"");
  auto a = sc::AllocRecord::read(a_rec);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->size, 0u);
  EXPECT_EQ(a->function, "");
  EXPECT_TRUE(a->frames.empty());
  // An address written as a non-negative integer is accepted, like get_hex does.
  TraceRecord b_rec = parsed("1 1 1 free address=32");
  auto b = sc::FreeRecord::read(b_rec);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->address, 32u);
  EXPECT_FALSE(sc::FreeRecord::read(parsed("1 1 1 free address=-1")));
}

TEST(Schema, FreeAndBadFreeLines) {
  EXPECT_EQ(line_of(sc::type::kFree, sc::FreeRecord{"_ZdlPv", 0xabc, {}}),
            "5 77 1000 free function=\"_ZdlPv\" address=0xabc");
  std::string bad = line_of(sc::type::kBadFree, sc::BadFreeRecord{"free", 0x10, sc::reason::kDouble, {}});
  EXPECT_EQ(bad, "5 77 1000 bad_free function=\"free\" address=0x10 reason=\"double\"");
  TraceRecord back_rec = parsed(bad);
  auto back = sc::BadFreeRecord::read(back_rec);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->reason, "double");
}

TEST(Schema, FailedAndMappingLines) {
  EXPECT_EQ(line_of(sc::type::kAllocFailed, sc::AllocFailedRecord{"calloc", 1u << 20, {}}),
            "5 77 1000 alloc_failed function=\"calloc\" size=1048576");
  EXPECT_EQ(line_of(sc::type::kUnmap, sc::MappingRecord{"munmap", 0x7f0000, 4096, {}}),
            "5 77 1000 unmap function=\"munmap\" address=0x7f0000 size=4096");
}

TEST(Schema, FileopsLines) {
  sc::FdRecord open{"memfd_create", 3, sc::key::kName, "buf \"x\"", {}};
  std::string line = line_of(sc::type::kFdOpen, open);
  EXPECT_EQ(line, "5 77 1000 fd_open function=\"memfd_create\" fd=3 name=\"buf \\\"x\\\"\"");
  TraceRecord back_rec = parsed(line);
  auto back = sc::FdRecord::read(back_rec);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->fd, 3);
  EXPECT_EQ(std::string(back->path_key), "name");
  EXPECT_EQ(back->path, "buf \"x\"");

  EXPECT_EQ(line_of(sc::type::kFdClose, sc::FdRecord{"exec", 4, sc::key::kPath, std::nullopt, {}}),
            "5 77 1000 fd_close function=\"exec\" fd=4");

  sc::StreamRecord s{"popen", 0x1234, -1, sc::key::kCommand, "ls -l", "r", {}};
  std::string sline = line_of(sc::type::kFileOpen, s);
  EXPECT_EQ(sline, "5 77 1000 file_open function=\"popen\" stream=0x1234 fd=-1 command=\"ls -l\" mode=\"r\"");
  TraceRecord sback_rec = parsed(sline);
  auto sback = sc::StreamRecord::read(sback_rec);
  ASSERT_TRUE(sback);
  EXPECT_EQ(sback->fd, -1);
  EXPECT_EQ(sback->path, "ls -l");
  EXPECT_EQ(std::string(sback->path_key), "command");
  EXPECT_EQ(sback->mode, "r");
  EXPECT_FALSE(sc::StreamRecord::read(parsed("1 1 1 file_close function=\"fclose\"")));
}

TEST(Schema, CallRecordLines) {
  EXPECT_EQ(line_of(sc::type::kReturn, sc::ReturnRecord{{"fib", 0x401126, 2}, 0x37, std::nullopt}),
            "5 77 1000 return function=\"fib\" address=0x401126 depth=2 retval=0x37");
  EXPECT_EQ(line_of(sc::type::kReturn, sc::ReturnRecord{{"sqrt", 0x10, 0}, 0, 0x4000000000000000}),
            "5 77 1000 return function=\"sqrt\" address=0x10 depth=0 retval=0x0 fretval=0x4000000000000000");
  EXPECT_EQ(line_of(sc::type::kUnwound, sc::UnwoundRecord{{"f", 0x10, 1}, "longjmp"}),
            "5 77 1000 unwound function=\"f\" address=0x10 depth=1 reason=\"longjmp\"");
}

// The SDK's builder gives the host the fields the engine's writer would record.
TEST(Schema, RecordBuilderMatchesTheEnginesWriter) {
  std::vector<uint64_t> frames = {0x1, 0x2};
  std::string function = "realloc";  // not NUL-terminated in the view: copied
  sc::AllocRecord a{std::string_view(function).substr(0, 7), 16, 0x40, 0, {frames.data(), frames.size()}};
  sdk::RecordBuilder b;
  b.fields(a);
  ASSERT_EQ(b.size(), 4u);
  TraceRecord from_builder;
  from_builder.type = "alloc";
  for (size_t i = 0; i < b.size(); ++i) {
    const ft_field& f = b.data()[i];
    switch (f.kind) {
      case FT_FIELD_INT: from_builder.add(f.key, f.i); break;
      case FT_FIELD_HEX: from_builder.add(f.key, Hex{f.u}); break;
      case FT_FIELD_STRING: from_builder.add(f.key, std::string(f.s)); break;
      case FT_FIELD_HEX_LIST: from_builder.add(f.key, HexList(f.list, f.list + f.list_len)); break;
    }
  }
  TraceRecord from_writer;
  from_writer.type = "alloc";
  RecordFieldWriter w(from_writer);
  a.write(w);
  EXPECT_EQ(from_builder, from_writer);
  function = "xxxxxxx";  // the builder holds its own copy
  EXPECT_STREQ(b.data()[0].s, "realloc");
}

TEST(Sdk, RecordBuilderDropsFieldsPastItsCapacity) {
  sdk::RecordBuilder b;
  for (size_t i = 0; i < sdk::RecordBuilder::kMaxFields + 2; ++i) b.str("k", std::string_view("v"));
  b.integer("n", 1).hex("h", 2);
  EXPECT_EQ(b.size(), sdk::RecordBuilder::kMaxFields);
  EXPECT_STREQ(b.data()[sdk::RecordBuilder::kMaxFields - 1].s, "v");
}

TEST(Sdk, QuoteAndHex) {
  EXPECT_EQ(sdk::quote(std::string("a\"\\\n\t\r\x01\x7f\xff", 9)), "\"a\\\"\\\\\\n\\t\\x0d\\x01\\x7f\\xff\"");
  EXPECT_EQ(sdk::hex(0), "0x0");
  EXPECT_EQ(sdk::hex(0xdeadBEEF), "0xdeadbeef");
  EXPECT_EQ(sdk::format("%s=%d", "x", 3), "x=3");
}

TEST(Sdk, ParsesNumbersAndRanges) {
  EXPECT_EQ(sdk::parse_u64("18446744073709551609"), uint64_t{18446744073709551609u});
  EXPECT_FALSE(sdk::parse_u64("18446744073709551610"));  // the last ten are refused
  EXPECT_FALSE(sdk::parse_u64("184467440737095516150"));
  EXPECT_FALSE(sdk::parse_u64(""));
  EXPECT_FALSE(sdk::parse_u64("-1"));
  auto r = sdk::parse_ranges("100,4096-8192");
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, (std::vector<std::pair<uint64_t, uint64_t>>{{100, 100}, {4096, 8192}}));
  EXPECT_FALSE(sdk::parse_ranges("8-4"));
  EXPECT_FALSE(sdk::parse_ranges("1,,2"));
  EXPECT_FALSE(sdk::parse_ranges(""));
  EXPECT_FALSE(sdk::parse_ranges("1-"));
}

struct Call {
  unsigned depth = 0;
  int id = 0;
};

TEST(Sdk, PendingCallsMatchByDepth) {
  sdk::PendingCalls<Call> calls;
  calls.push({0, 1});
  calls.push({1, 2});
  calls.push({2, 3});
  // A return at depth 1: the frame at depth 2 never returned and is dropped.
  auto c = calls.take(1);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->id, 2);
  EXPECT_FALSE(calls.take(1));  // nothing open at depth 1 any more
  EXPECT_EQ(calls.size(), 1u);
  calls.push({1, 4});
  calls.drop_from(1);  // a new call at depth 1
  EXPECT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls.outermost().id, 1);
  EXPECT_FALSE(calls.take(3));  // a return deeper than anything open
  EXPECT_EQ(calls.take(0)->id, 1);
  EXPECT_TRUE(calls.empty());
}

TEST(Sdk, PluginTableHasOnlyWhatIsSet) {
  ft_plugin p = sdk::table("x");
  EXPECT_EQ(p.api_version, FT_PLUGIN_API_VERSION);
  EXPECT_EQ(p.size, sizeof(ft_plugin));
  EXPECT_STREQ(p.name, "x");
  EXPECT_EQ(p.call, nullptr);
  EXPECT_EQ(p.finish, nullptr);
  EXPECT_EQ(p.data, nullptr);
}

}  // namespace
}  // namespace ft
