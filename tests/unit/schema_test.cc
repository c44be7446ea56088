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

TEST(Schema, CallRecordLineAndBack) {
  uint64_t args[6] = {5, 0x7ffc0010, 0, 0, 0, 0x1};
  uint64_t fargs[1] = {0x3ff8000000000000};
  sc::CallRecord c{{"_Z3fibi", 0x401126, 2}, {args, 6}, {fargs, 1}, 3, "i4,s,f8>u8", {}};
  c.strings[1] = "a \"b\"";
  c.callsite = 0x401200;
  std::string line = line_of(sc::CallRecord::kType, c);
  EXPECT_EQ(line, "5 77 1000 call function=\"_Z3fibi\" address=0x401126 depth=2 callsite=0x401200 "
                  "args=[0x5,0x7ffc0010,0x0,0x0,0x0,0x1] fargs=[0x3ff8000000000000] nargs=3 "
                  "types=\"i4,s,f8>u8\" str1=\"a \\\"b\\\"\"");
  TraceRecord r = parsed(line);
  sc::CallRecord back = sc::CallRecord::read(r);
  EXPECT_EQ(back.frame.function, "_Z3fibi");
  EXPECT_EQ(back.frame.address, 0x401126u);
  EXPECT_EQ(back.frame.depth, 2);
  EXPECT_EQ(std::vector<uint64_t>(back.args.begin(), back.args.end()), std::vector<uint64_t>(args, args + 6));
  EXPECT_EQ(std::vector<uint64_t>(back.fargs.begin(), back.fargs.end()), std::vector<uint64_t>{0x3ff8000000000000});
  EXPECT_EQ(back.nargs, 3);
  EXPECT_EQ(back.types, "i4,s,f8>u8");
  EXPECT_FALSE(back.strings[0]);
  EXPECT_EQ(back.strings[1], "a \"b\"");
  EXPECT_EQ(back.callsite, 0x401200u);
  // Without parameter information, fargs or strings: only the fields the call has.
  sc::CallRecord bare{{"f", 0x10, 0}, {args, 6}, {}, std::nullopt, std::nullopt, {}};
  EXPECT_EQ(line_of(sc::type::kCall, bare),
            "5 77 1000 call function=\"f\" address=0x10 depth=0 args=[0x5,0x7ffc0010,0x0,0x0,0x0,0x1]");
}

TEST(Schema, HostileCallsReadSafely) {
  // A call with nothing but its type: no function, address 0, no depth, no arguments.
  TraceRecord r = parsed("1 1 1 call args=\"x\" str0=5");
  sc::CallRecord c = sc::CallRecord::read(r);
  EXPECT_EQ(c.frame.function, "");
  EXPECT_EQ(c.frame.address, 0u);
  EXPECT_FALSE(c.frame.depth);
  EXPECT_TRUE(c.args.empty());
  EXPECT_FALSE(c.strings[0]);
  EXPECT_FALSE(c.nargs);
  EXPECT_FALSE(c.callsite);  // traces written before call sites were recorded
  // An unwound record without a reason reads as "unknown"; a return without retval as 0.
  TraceRecord u_rec = parsed("1 1 1 unwound function=\"g\" depth=3");
  sc::UnwoundRecord u = sc::UnwoundRecord::read(u_rec);
  EXPECT_EQ(u.reason, "unknown");
  EXPECT_EQ(u.frame.depth, 3);
  TraceRecord ret_rec = parsed("1 1 1 return depth=1 fretval=0x10");
  sc::ReturnRecord ret = sc::ReturnRecord::read(ret_rec);
  EXPECT_EQ(ret.retval, 0u);
  EXPECT_EQ(ret.fretval, 0x10u);
  TraceRecord ret2_rec = parsed("1 1 1 return function=\"h\" address=0x20 depth=0 retval=0x7");
  sc::ReturnRecord ret2 = sc::ReturnRecord::read(ret2_rec);
  EXPECT_EQ(ret2.frame.function, "h");
  EXPECT_EQ(ret2.retval, 7u);
  EXPECT_FALSE(ret2.fretval);
}

TEST(Schema, ModuleRecordLineAndBack) {
  sc::ModuleRecord m{0x400000, 0x401000, 0x1000, "/usr/bin/app", "ab12", true};
  std::string line = line_of(sc::ModuleRecord::kType, m);
  EXPECT_EQ(line, "5 77 1000 module base=0x400000 end=0x401000 offset=0x1000 path=\"/usr/bin/app\" "
                  "build_id=\"ab12\" deleted=1");
  TraceRecord r = parsed(line);
  auto back = sc::ModuleRecord::read(r);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->base, 0x400000u);
  EXPECT_EQ(back->end, 0x401000u);
  EXPECT_EQ(back->offset, 0x1000u);
  EXPECT_EQ(back->path, "/usr/bin/app");
  EXPECT_EQ(back->build_id, "ab12");
  EXPECT_TRUE(back->deleted);
  // No path, or an empty range: not a module.
  EXPECT_FALSE(sc::ModuleRecord::read(parsed("1 1 1 module base=0x10 end=0x20")));
  EXPECT_FALSE(sc::ModuleRecord::read(parsed("1 1 1 module base=0x20 end=0x20 path=\"x\"")));
  TraceRecord plain_rec = parsed("1 1 1 module base=0x10 end=0x20 path=\"x\"");
  auto plain = sc::ModuleRecord::read(plain_rec);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->offset, 0u);
  EXPECT_EQ(plain->build_id, "");
  EXPECT_FALSE(plain->deleted);
}

// Copied strings share one buffer that moves as it grows: every field still points
// at its own text, read before and after more fields are added.
TEST(Schema, RecordBuilderKeepsEveryCopiedString) {
  sdk::RecordBuilder b;
  std::vector<std::string> texts;
  for (int i = 0; i < 12; ++i) texts.push_back(std::string(40 + 30 * i, static_cast<char>('a' + i)));
  for (size_t i = 0; i < texts.size(); ++i) {
    b.str("k", std::string_view(texts[i]));
    if (i == 3) {
      ASSERT_EQ(b.size(), 4u);
      EXPECT_EQ(std::string(b.data()[0].s), texts[0]);
    }
  }
  b.str("c", "literal").integer("n", -5);
  ASSERT_EQ(b.size(), 14u);
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(std::string(b.data()[i].s), texts[i]) << "field " << i;
  EXPECT_STREQ(b.data()[12].s, "literal");
  EXPECT_EQ(b.data()[13].i, -5);
  EXPECT_EQ(b.data()[13].kind, FT_FIELD_INT);
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

// A host that offers one option value and keeps the warnings.
std::string g_depth_value;
std::vector<std::string> g_warnings;
const char* depth_option(const char* name) {
  return std::string(name) == "backtrace_depth" ? g_depth_value.c_str() : nullptr;
}
void keep_warning(const char* message) { g_warnings.emplace_back(message); }

TEST(Sdk, BacktraceDepthOption) {
  ft_host_api host{};
  host.option = depth_option;
  host.warn = keep_warning;
  unsigned depth = 10;
  g_depth_value = "1024";
  EXPECT_TRUE(sdk::backtrace_depth_option(&host, "fileops", &depth));
  EXPECT_EQ(depth, 1024u);
  g_depth_value = "0";
  EXPECT_TRUE(sdk::backtrace_depth_option(&host, "fileops", &depth));
  EXPECT_EQ(depth, 0u);
  EXPECT_TRUE(g_warnings.empty());
  for (const char* bad : {"1025", "-1", "4x", ""}) {
    g_warnings.clear();
    depth = 7;
    g_depth_value = bad;
    EXPECT_FALSE(sdk::backtrace_depth_option(&host, "fileops", &depth)) << bad;
    EXPECT_EQ(depth, 7u);
    ASSERT_EQ(g_warnings.size(), 1u);
    EXPECT_EQ(g_warnings[0], std::string("fileops: bad backtrace depth '") + bad + "' (expected 0..1024)");
  }
  host.option = [](const char*) -> const char* { return nullptr; };
  EXPECT_TRUE(sdk::backtrace_depth_option(&host, "fileops", &depth));
  EXPECT_EQ(depth, 7u);
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
