// Tests of the trace record encoding (doc/trace-format.md): exact output for known
// records, round trips (including random records), the string escapes, and rejection
// of malformed lines with a message saying what is wrong.
#include "common/trace_record.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>

namespace ft {
namespace {

TraceRecord call_record() {
  TraceRecord r;
  r.seq = 42;
  r.tid = 4243;
  r.ts_ns = 183735012345;
  r.type = "call";
  r.add("function", std::string("_Z4facti"))
      .add("address", Hex{0x55d0c8a01139})
      .add("depth", int64_t{2})
      .add("args", HexList{0x3, 0x0, 0x7ffc1234, 0xffffffffffffffff, 0x10, 0x0})
      .add("str1", std::string("a \"b\"\n"));
  return r;
}

TEST(TraceRecord, FormatsKnownRecord) {
  EXPECT_EQ(format_record(call_record()),
            "42 4243 183735012345 call function=\"_Z4facti\" address=0x55d0c8a01139 depth=2 "
            "args=[0x3,0x0,0x7ffc1234,0xffffffffffffffff,0x10,0x0] str1=\"a \\\"b\\\"\\n\"");
}

TEST(TraceRecord, ParsesKnownRecord) {
  auto r = parse_record(format_record(call_record()));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, call_record());
}

// append_record appends to what the buffer holds; the expected text is written out
// by hand from doc/trace-format.md, not derived from format_record.
TEST(TraceRecord, AppendRecordAppendsTheDocumentedLine) {
  std::string out = "prefix ";
  append_record(out, call_record());
  EXPECT_EQ(out,
            "prefix 42 4243 183735012345 call function=\"_Z4facti\" address=0x55d0c8a01139 depth=2 "
            "args=[0x3,0x0,0x7ffc1234,0xffffffffffffffff,0x10,0x0] str1=\"a \\\"b\\\"\\n\"");
}

// The lines of the format document, written from their description: the header and
// module records of section 1, lifecycle records of 3.2, memtrace records of 3.5.
TEST(TraceRecord, DocumentedRecordsFormatAsWritten) {
  TraceRecord module;
  module.seq = 2;
  module.tid = 4242;
  module.ts_ns = 183735012345;
  module.type = "module";
  module.add("base", Hex{0x55d0c8a00000}).add("end", Hex{0x55d0c8a05000}).add("offset", Hex{0});
  module.add("path", std::string("/usr/bin/app")).add("build_id", std::string(""));
  EXPECT_EQ(format_record(module),
            "2 4242 183735012345 module base=0x55d0c8a00000 end=0x55d0c8a05000 offset=0x0 "
            "path=\"/usr/bin/app\" build_id=\"\"");

  TraceRecord exit;
  exit.seq = 917;
  exit.tid = 4242;
  exit.ts_ns = 183736110000;
  exit.type = "exit";
  exit.add("status", int64_t{-1});
  EXPECT_EQ(format_record(exit), "917 4242 183736110000 exit status=-1");

  TraceRecord alloc;
  alloc.seq = 7;
  alloc.tid = 9;
  alloc.ts_ns = 0;
  alloc.type = "alloc";
  alloc.add("function", std::string("_Znwm")).add("size", std::numeric_limits<int64_t>::max());
  alloc.add("address", Hex{~uint64_t{0}}).add("frames", HexList{}).add("empty", std::string());
  EXPECT_EQ(format_record(alloc),
            "7 9 0 alloc function=\"_Znwm\" size=9223372036854775807 address=0xffffffffffffffff "
            "frames=[] empty=\"\"");
}

// Every escape of the string table, with the bytes around the 0x20 and 0x7f edges.
TEST(TraceRecord, HostileStringFormatsAsDocumented) {
  TraceRecord r;
  r.seq = 1;
  r.tid = 1;
  r.ts_ns = 1;
  r.type = "t";
  r.add("s", std::string("\\\"\n\t\r\x1f \x7e\x7f\x80\xff=x y]", 16));
  std::string line = format_record(r);
  EXPECT_EQ(line, "1 1 1 t s=\"\\\\\\\"\\n\\t\\r\\x1f ~\\x7f\\x80\\xff=x y]\"");
  auto back = parse_record(line);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, r);
}

TEST(TraceRecord, RecordWithoutFields) {
  TraceRecord r;
  r.seq = 1;
  r.tid = -1;
  r.ts_ns = 0;
  r.type = "detach";
  EXPECT_EQ(format_record(r), "1 -1 0 detach");
  auto back = parse_record("1 -1 0 detach");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, r);
}

TEST(TraceRecord, ValueForms) {
  TraceRecord r;
  r.seq = 7;
  r.tid = 1;
  r.ts_ns = 99;
  r.type = "x_1";
  r.add("i", int64_t{-5})
      .add("zero", int64_t{0})
      .add("min", std::numeric_limits<int64_t>::min())
      .add("max", std::numeric_limits<int64_t>::max())
      .add("h", Hex{0})
      .add("hmax", Hex{std::numeric_limits<uint64_t>::max()})
      .add("s", std::string())
      .add("l", HexList{})
      .add("l1", HexList{0xabc});
  std::string line = format_record(r);
  EXPECT_EQ(line,
            "7 1 99 x_1 i=-5 zero=0 min=-9223372036854775808 max=9223372036854775807 h=0x0 "
            "hmax=0xffffffffffffffff s=\"\" l=[] l1=[0xabc]");
  auto back = parse_record(line);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, r);
}

TEST(TraceRecord, StringEscapes) {
  TraceRecord r;
  r.seq = 1;
  r.tid = 1;
  r.ts_ns = 1;
  r.type = "t";
  r.add("s", std::string("a\\b\"c\nd\te\rf\x01g\x7fh\xff i=j [k]", 24));
  std::string line = format_record(r);
  EXPECT_EQ(line, "1 1 1 t s=\"a\\\\b\\\"c\\nd\\te\\rf\\x01g\\x7fh\\xff i=j [k]\"");
  auto back = parse_record(line);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, r);
}

TEST(TraceRecord, EveryByteRoundTrips) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  TraceRecord r;
  r.seq = 3;
  r.tid = 3;
  r.ts_ns = 3;
  r.type = "bytes";
  r.add("all", all);
  std::string line = format_record(r);
  for (char c : line) {
    auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(u >= 0x20 && u < 0x7f) << "byte " << int(u) << " written raw";
  }
  auto back = parse_record(line);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, r);
}

TEST(TraceRecord, EmbeddedNulRoundTrips) {
  TraceRecord r;
  r.seq = 1;
  r.tid = 1;
  r.ts_ns = 1;
  r.type = "t";
  r.add("s", std::string("a\0b", 3));
  EXPECT_EQ(format_record(r), "1 1 1 t s=\"a\\x00b\"");
  auto back = parse_record(format_record(r));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back->get_str("s"), std::string("a\0b", 3));
}

TEST(TraceRecord, AppendQuoted) {
  std::string out;
  append_quoted(out, "x\"\n\x80");
  EXPECT_EQ(out, "\"x\\\"\\n\\x80\"");
}

TEST(TraceRecord, Accessors) {
  auto r = parse_record("5 10 20 t a=-3 b=0x10 c=\"s\" d=[0x1,0x2] e=7");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->get_int("a"), -3);
  EXPECT_EQ(r->get_int("b"), 16);  // hex read as int
  EXPECT_EQ(r->get_int("c"), std::nullopt);
  EXPECT_EQ(r->get_hex("b"), 16u);
  EXPECT_EQ(r->get_hex("e"), 7u);  // non-negative int read as hex
  EXPECT_EQ(r->get_hex("a"), std::nullopt);
  ASSERT_NE(r->get_str("c"), nullptr);
  EXPECT_EQ(*r->get_str("c"), "s");
  EXPECT_EQ(r->get_str("a"), nullptr);
  ASSERT_NE(r->get_list("d"), nullptr);
  EXPECT_EQ(*r->get_list("d"), (HexList{1, 2}));
  EXPECT_EQ(r->get("missing"), nullptr);
  EXPECT_EQ(r->get_int("missing"), std::nullopt);
}

TEST(TraceRecord, UnknownTypesAndFieldsParse) {
  auto r = parse_record("9 1 2 my_plugin_event frames=[0x1] size=64 note=\"hi\"");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->type, "my_plugin_event");
  EXPECT_EQ(r->fields.size(), 3u);
}

struct BadLine {
  const char* line;
  const char* message_part;
};

class MalformedLine : public ::testing::TestWithParam<BadLine> {};

TEST_P(MalformedLine, IsRejectedWithMessage) {
  const BadLine& bad = GetParam();
  auto r = parse_record(bad.line);
  ASSERT_FALSE(r.ok()) << "accepted: " << bad.line;
  EXPECT_NE(r.error().message.find(bad.message_part), std::string::npos)
      << "line: " << bad.line << "\nmessage: " << r.error().message;
  EXPECT_NE(r.error().message.find("column"), std::string::npos) << r.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    TraceRecord, MalformedLine,
    ::testing::Values(
        BadLine{"", "expected sequence number"},
        BadLine{"x 1 2 t", "expected sequence number"},
        BadLine{"01 1 2 t", "sequence number has a leading zero"},
        BadLine{"-1 1 2 t", "expected sequence number"},
        BadLine{"18446744073709551616 1 2 t", "does not fit in 64 bits"},
        BadLine{"1", "expected a space after the sequence number"},
        BadLine{"1  1 2 t", "expected thread id"},
        BadLine{"1 1 2", "expected a space after the timestamp"},
        BadLine{"1 -0 2 t", "'-0'"},
        BadLine{"1 9223372036854775808 2 t", "does not fit in a signed 64-bit"},
        BadLine{"1 1 -2 t", "expected timestamp"},
        BadLine{"1 1 2 ", "expected a record type"},
        BadLine{"1 1 2 Call", "expected a record type"},
        BadLine{"1 1 2 t ", "expected a field name"},
        BadLine{"1 1 2 t  a=1", "expected a field name"},
        BadLine{"1 1 2 t a", "expected '=' after field name 'a'"},
        BadLine{"1 1 2 t a=", "field 'a' has no value"},
        BadLine{"1 1 2 t A=1", "expected a field name"},
        BadLine{"1 1 2 t a=1 ", "expected a field name"},
        BadLine{"1 1 2 t a=1\r", "unexpected byte 0x0d after the value of field 'a'"},
        BadLine{"1 1 2 t a=007", "has a leading zero"},
        BadLine{"1 1 2 t a=-0", "'-0'"},
        BadLine{"1 1 2 t a=9223372036854775808", "field 'a' does not fit"},
        BadLine{"1 1 2 t a=1 bc=-", "expected field 'bc' (decimal digits)"},
        BadLine{"1 1 2 t a=12x", "unexpected 'x' after the value of field 'a'"},
        BadLine{"1 1 2 t a=+1", "a value starts with"},
        BadLine{"1 1 2 t a=0x", "expected hex digits after '0x'"},
        BadLine{"1 1 2 t a=0xAB", "must be lowercase"},
        BadLine{"1 1 2 t a=0xaB", "must be lowercase"},
        BadLine{"1 1 2 t a=0x01", "leading zero"},
        BadLine{"1 1 2 t a=0x10000000000000000", "does not fit in 64 bits"},
        BadLine{"1 1 2 t a=0xg", "expected hex digits"},
        BadLine{"1 1 2 t a=\"abc", "string is not terminated"},
        BadLine{"1 1 2 t a=\"abc\\", "string ends inside an escape"},
        BadLine{"1 1 2 t a=\"a\\q\"", "unknown escape \\q"},
        BadLine{"1 1 2 t a=\"a\\x4\"", "two lowercase hex digits"},
        BadLine{"1 1 2 t a=\"a\\x0A\"", "two lowercase hex digits"},
        BadLine{"1 1 2 t a=\"a\\x41\"", "shorter form"},
        BadLine{"1 1 2 t a=\"a\\x0a\"", "shorter form"},
        BadLine{"1 1 2 t a=\"a\tb\"", "byte 0x09 in a string must be escaped"},
        BadLine{"1 1 2 t a=\"a\x80\"", "byte 0x80 in a string must be escaped"},
        BadLine{"1 1 2 t a=\"x\"y", "unexpected 'y' after the value of field 'a'"},
        BadLine{"1 1 2 t a=[", "expected a 0x hex number in the list"},
        BadLine{"1 1 2 t a=[0x1", "expected ',' or ']'"},
        BadLine{"1 1 2 t a=[0x1,]", "expected a 0x hex number in the list"},
        BadLine{"1 1 2 t a=[1]", "expected a 0x hex number in the list"},
        BadLine{"1 1 2 t a=[0x1, 0x2]", "expected a 0x hex number in the list"},
        BadLine{"1 1 2 t a=[0x01]", "leading zero"}));

TEST(TraceRecord, ErrorNamesColumn) {
  auto r = parse_record("1 1 2 t a=1 b=0xZ");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("field 'b'"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("column 17"), std::string::npos) << r.error().message;
}

// Random records: parse(format(r)) == r.
class RandomRecords {
 public:
  explicit RandomRecords(uint64_t seed) : rng_(seed) {}

  TraceRecord make() {
    TraceRecord r;
    r.seq = pick_u64();
    r.tid = static_cast<int64_t>(pick_u64());
    r.ts_ns = pick_u64();
    r.type = name();
    int n = static_cast<int>(rng_() % 9);
    for (int i = 0; i < n; ++i) {
      switch (rng_() % 4) {
        case 0: r.add(name(), static_cast<int64_t>(pick_u64())); break;
        case 1: r.add(name(), Hex{pick_u64()}); break;
        case 2: r.add(name(), bytes()); break;
        default: {
          HexList l(rng_() % 8);
          for (auto& v : l) v = pick_u64();
          r.add(name(), std::move(l));
        }
      }
    }
    return r;
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  // Mostly small numbers, sometimes the extremes, sometimes anything.
  uint64_t pick_u64() {
    switch (rng_() % 6) {
      case 0: return 0;
      case 1: return rng_() % 10;
      case 2: return std::numeric_limits<uint64_t>::max() - rng_() % 3;
      case 3: return uint64_t{1} << 63;
      case 4: return rng_() % 100000;
      default: return rng_();
    }
  }

  std::string name() {
    static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789_";
    std::string s(1 + rng_() % 12, 'a');
    for (char& c : s) c = kChars[rng_() % (sizeof kChars - 1)];
    return s;
  }

  std::string bytes() {
    std::string s(rng_() % 40, '\0');
    for (char& c : s) {
      // Bias towards the interesting bytes.
      switch (rng_() % 4) {
        case 0: c = "\\\"\n\t\r x=[]"[rng_() % 11]; break;
        case 1: c = static_cast<char>(rng_() % 256); break;
        default: c = static_cast<char>(0x20 + rng_() % 95);
      }
    }
    return s;
  }

  std::mt19937_64 rng_;
};

TEST(TraceRecord, RandomRecordsRoundTrip) {
  RandomRecords gen(20240601);
  for (int i = 0; i < 5000; ++i) {
    TraceRecord r = gen.make();
    std::string line = format_record(r);
    auto back = parse_record(line);
    ASSERT_TRUE(back.ok()) << line << "\n" << back.error().message;
    ASSERT_EQ(*back, r) << line;
    ASSERT_EQ(format_record(*back), line);
  }
}

// Lines longer than LineAppender's own buffer (480 bytes), with values that straddle
// it at every offset: strings, lists, keys and escapes cut across the boundary come
// out whole. The expected text is built by plain string operations.
TEST(TraceRecord, LongLinesFormatWhole) {
  for (size_t n = 440; n < 1000; n += 7) {
    TraceRecord r;
    r.seq = 7;
    r.tid = -3;
    r.ts_ns = 11;
    r.type = "t";
    std::string text(n, 'a');
    for (size_t i = 0; i < n; i += 13) text[i] = '"';
    HexList frames(n / 10, 0xabc);
    std::string key(n / 2, 'k');
    r.add("s", text).add("f", frames).add(key, Hex{0x1f}).add("i", int64_t{-5});
    std::string want = "7 -3 11 t s=\"";
    for (char c : text) want += c == '"' ? std::string("\\\"") : std::string(1, c);
    want += "\" f=[";
    for (size_t i = 0; i < frames.size(); ++i) want += i ? ",0xabc" : "0xabc";
    want += "] " + key + "=0x1f i=-5";
    std::string out = "head ";
    append_record(out, r);
    ASSERT_EQ(out, "head " + want) << n;
    auto back = parse_record(want);
    ASSERT_TRUE(back.ok()) << back.error().message;
    ASSERT_EQ(*back, r);
  }
}

// One RecordParser and one record over a stream of random lines, good and damaged, of
// every shape (fields of other types and counts than the line before): each parse gives
// what a fresh parse_record gives.
TEST(TraceRecord, ReusedRecordParsesLikeAFreshOne) {
  RandomRecords gen(4242);
  RecordParser parser;
  TraceRecord reused;
  for (int i = 0; i < 5000; ++i) {
    std::string line = format_record(gen.make());
    if (i % 3 == 0 && !line.empty()) line.insert(gen.rng()() % line.size(), 1, '"');
    auto fresh = parse_record(line);
    Status st = parser.parse(line, reused);
    ASSERT_EQ(st.ok(), fresh.ok()) << line;
    if (!st.ok()) {
      ASSERT_EQ(st.error().message, fresh.error().message) << line;
      continue;
    }
    ASSERT_EQ(reused, *fresh) << line;
  }
}

// Damaged lines either fail to parse or parse to a record that formats back to exactly
// the same line: there is one way to write each record.
TEST(TraceRecord, MutatedLinesAreCanonicalOrRejected) {
  RandomRecords gen(77);
  static constexpr char kBytes[] = " =\"\\[],x0-19afAF\n\t";
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string line = format_record(gen.make());
    size_t edits = 1 + gen.rng()() % 3;
    for (size_t e = 0; e < edits && !line.empty(); ++e) {
      size_t pos = gen.rng()() % line.size();
      switch (gen.rng()() % 3) {
        case 0: line.erase(pos, 1); break;
        case 1: line.insert(pos, 1, kBytes[gen.rng()() % (sizeof kBytes - 1)]); break;
        default: line[pos] = kBytes[gen.rng()() % (sizeof kBytes - 1)];
      }
    }
    auto r = parse_record(line);
    if (!r.ok()) {
      ASSERT_FALSE(r.error().message.empty());
      continue;
    }
    ++accepted;
    ASSERT_EQ(format_record(*r), line);
  }
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace ft
