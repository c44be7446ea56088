// Tests of functracer-postproc: its pieces (JSON writer, demangling, trace reader,
// call model) and golden outputs of the reports on hand-written traces in
// tests/unit/data/, through the library and through the binary itself.
//
// The expected numbers were worked out by hand from the timestamps in the traces
// (see the comments at each test).
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/trace_record.h"
#include "test_support.h"
#include "postproc/call_model.h"
#include "postproc/cli.h"
#include "postproc/json_writer.h"
#include "postproc/report.h"
#include "postproc/report_calls.h"
#include "postproc/report_dump.h"
#include "postproc/report_tree.h"
#include "postproc/value_types.h"
#include "postproc/trace_reader.h"

namespace ft::post {
namespace {

using test::read_file;
using test::TempDir;
using test::RunResult;

// ---------------------------------------------------------------------------
// Helpers

std::string source_root() {
  if (const char* root = std::getenv("FT_SOURCE_ROOT")) return root;
  // Run by hand from the build directory: __FILE__ is relative to it.
  std::string file = __FILE__;
  return file.substr(0, file.rfind("/tests/unit/"));
}

std::string data(const std::string& name) { return source_root() + "/tests/unit/data/" + name; }

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A scratch directory removed at the end of the test.
// A minimal strict JSON parser (RFC 8259) for checking the writer's output. It
// returns false on anything that is not one complete JSON value.
class JsonChecker {
 public:
  explicit JsonChecker(std::string_view s) : s_(s) {}

  bool valid() {
    ws();
    if (!value(0)) return false;
    ws();
    return i_ == s_.size();
  }

  // Top-level keys seen (for objects).
  std::vector<std::string> top_keys;

 private:
  bool value(int depth) {
    if (depth > 64 || i_ >= s_.size()) return false;
    char c = s_[i_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return string(nullptr);
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    return literal("true") || literal("false") || literal("null");
  }
  bool object(int depth) {
    ++i_;
    ws();
    if (peek('}')) return ++i_, true;
    while (true) {
      ws();
      std::string key;
      if (!string(&key)) return false;
      if (depth == 0) top_keys.push_back(key);
      ws();
      if (!peek(':')) return false;
      ++i_;
      ws();
      if (!value(depth + 1)) return false;
      ws();
      if (peek(',')) {
        ++i_;
        continue;
      }
      if (peek('}')) return ++i_, true;
      return false;
    }
  }
  bool array(int depth) {
    ++i_;
    ws();
    if (peek(']')) return ++i_, true;
    while (true) {
      ws();
      if (!value(depth + 1)) return false;
      ws();
      if (peek(',')) {
        ++i_;
        continue;
      }
      if (peek(']')) return ++i_, true;
      return false;
    }
  }
  bool string(std::string* out) {
    if (!peek('"')) return false;
    ++i_;
    while (i_ < s_.size()) {
      auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') return ++i_, true;
      if (c < 0x20) return false;
      if (c == '\\') {
        if (++i_ >= s_.size()) return false;
        char e = s_[i_];
        if (e == 'u') {
          for (int k = 1; k <= 4; ++k) {
            if (i_ + k >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[i_ + k])))
              return false;
          }
          i_ += 5;
          continue;
        }
        if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) return false;
        if (out) *out += e;
        ++i_;
        continue;
      }
      if (c >= 0x80) {
        size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
        if (n == 0 || c > 0xf4 || i_ + n > s_.size()) return false;
        for (size_t k = 1; k < n; ++k) {
          if ((static_cast<unsigned char>(s_[i_ + k]) & 0xc0) != 0x80) return false;
        }
        if (out) out->append(s_.substr(i_, n));
        i_ += n;
        continue;
      }
      if (out) *out += static_cast<char>(c);
      ++i_;
    }
    return false;
  }
  bool number() {
    if (peek('-')) ++i_;
    if (peek('0')) {
      ++i_;
    } else {
      if (!digit()) return false;
      while (digit()) {
      }
    }
    if (peek('.') || peek('e') || peek('E')) return false;  // the writer emits integers only
    return true;
  }
  bool digit() {
    if (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') return ++i_, true;
    return false;
  }
  bool literal(std::string_view lit) {
    if (s_.substr(i_, lit.size()) != lit) return false;
    i_ += lit.size();
    return true;
  }
  bool peek(char c) const { return i_ < s_.size() && s_[i_] == c; }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r'))
      ++i_;
  }

  std::string_view s_;
  size_t i_ = 0;
};

bool is_valid_json(std::string_view s) { return JsonChecker(s).valid(); }

std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

// ---------------------------------------------------------------------------
// JSON writer

TEST(JsonWriter, EscapesSpecialCharacters) {
  EXPECT_EQ(json_string("plain"), "\"plain\"");
  EXPECT_EQ(json_string("a\"b\\c/d"), "\"a\\\"b\\\\c/d\"");
  EXPECT_EQ(json_string("\n\t\r\b\f"), "\"\\n\\t\\r\\b\\f\"");
  EXPECT_EQ(json_string(std::string("\0\x01\x1f\x7f", 4)), "\"\\u0000\\u0001\\u001f\\u007f\"");
}

TEST(JsonWriter, KeepsValidUtf8) {
  EXPECT_EQ(json_string("caf\xc3\xa9"), "\"caf\xc3\xa9\"");                   // U+00E9
  EXPECT_EQ(json_string("\xe2\x82\xac"), "\"\xe2\x82\xac\"");                 // U+20AC
  EXPECT_EQ(json_string("\xf0\x9f\x98\x80"), "\"\xf0\x9f\x98\x80\"");         // U+1F600
  EXPECT_EQ(json_string("\xf4\x8f\xbf\xbf"), "\"\xf4\x8f\xbf\xbf\"");         // U+10FFFF
  EXPECT_EQ(json_string("\xe2\x80\xa8\xe2\x80\xa9"), "\"\\u2028\\u2029\"");  // JS line breaks
}

TEST(JsonWriter, ReplacesInvalidUtf8) {
  EXPECT_EQ(json_string("a\xff" "b"), "\"a\\ufffdb\"");
  EXPECT_EQ(json_string("\x80"), "\"\\ufffd\"");                       // lone continuation
  EXPECT_EQ(json_string("\xc3"), "\"\\ufffd\"");                       // truncated
  EXPECT_EQ(json_string("\xc0\xaf"), "\"\\ufffd\\ufffd\"");            // overlong '/'
  EXPECT_EQ(json_string("\xe0\x80\xaf"), "\"\\ufffd\\ufffd\\ufffd\""); // overlong
  EXPECT_EQ(json_string("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\""); // surrogate
  EXPECT_EQ(json_string("\xf4\x90\x80\x80"),
            "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");                       // above U+10FFFF
  EXPECT_EQ(json_string("\xe2\x82x"), "\"\\ufffd\\ufffdx\"");
}

TEST(JsonWriter, RandomBytesGiveValidJson) {
  std::mt19937 rng(5);
  for (int i = 0; i < 2000; ++i) {
    std::string s(rng() % 20, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 256);
    std::string j = json_string(s);
    ASSERT_TRUE(is_valid_json(j)) << j;
  }
}

TEST(JsonWriter, CompactStructure) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("a").integer(-1);
  w.key("b").unsigned_integer(18446744073709551615u);
  w.key("c").begin_array().string("x").boolean(true).null().end_array();
  w.key("d").begin_object().end_object();
  w.key("e").begin_array().end_array();
  w.key("f").integer(std::numeric_limits<int64_t>::min());
  w.end_object();
  EXPECT_TRUE(w.complete());
  EXPECT_EQ(out,
            "{\"a\": -1, \"b\": 18446744073709551615, \"c\": [\"x\", true, null], \"d\": {}, "
            "\"e\": [], \"f\": -9223372036854775808}");
  EXPECT_TRUE(is_valid_json(out));
}

TEST(JsonWriter, PrettyStructure) {
  std::string out;
  JsonWriter w(out, 2);
  w.begin_object().key("list").begin_array().integer(1).begin_object().key("k").string("v");
  w.end_object().end_array().key("empty").begin_array().end_array().end_object();
  EXPECT_EQ(out,
            "{\n"
            "  \"list\": [\n"
            "    1,\n"
            "    {\n"
            "      \"k\": \"v\"\n"
            "    }\n"
            "  ],\n"
            "  \"empty\": []\n"
            "}");
  EXPECT_TRUE(is_valid_json(out));
}

TEST(JsonChecker, RejectsInvalid) {
  EXPECT_FALSE(is_valid_json(""));
  EXPECT_FALSE(is_valid_json("{"));
  EXPECT_FALSE(is_valid_json("{\"a\" 1}"));
  EXPECT_FALSE(is_valid_json("[1,]"));
  EXPECT_FALSE(is_valid_json("\"a\nb\""));
  EXPECT_FALSE(is_valid_json("\"\xff\""));
  EXPECT_FALSE(is_valid_json("01"));
  EXPECT_FALSE(is_valid_json("{} {}"));
  EXPECT_TRUE(is_valid_json("{\"a\": [1, -2, \"\\u00e9\"]}"));
}

// ---------------------------------------------------------------------------
// Trace reader

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
  int n = 0;
  while (reader->next()) ++n;
  EXPECT_EQ(n, 6);  // the cut seventh record is ignored
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
  auto missing = TraceReader::open(tmp.path() + "/missing.trace", diag);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(contains(missing.error().message, "missing.trace: No such file"))
      << missing.error().message;

  auto empty = TraceReader::open(tmp.write("empty.trace", ""), diag);
  ASSERT_FALSE(empty.ok());
  EXPECT_TRUE(contains(empty.error().message, "empty.trace: not a functracer trace"));

  auto v2 = TraceReader::open(tmp.write("v2.trace", "functracer-trace 2\n"), diag);
  ASSERT_FALSE(v2.ok());
  EXPECT_TRUE(contains(v2.error().message, "unsupported trace format version '2'"))
      << v2.error().message;

  auto dir = TraceReader::open(tmp.path(), diag);
  ASSERT_FALSE(dir.ok());

  auto binary = TraceReader::open(tmp.write("bin", std::string(100000, '\x7f')), diag);
  ASSERT_FALSE(binary.ok());
  EXPECT_TRUE(contains(binary.error().message, "not a functracer trace"));
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
  int n = 0;
  while (reader->next()) ++n;
  EXPECT_EQ(n, 3);
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
  TraceRecord h;
  h.seq = seq++;
  h.tid = 9;
  h.type = "header";
  h.add("pid", int64_t{9});
  text += format_record(h) + "\n";
  TraceRecord s;
  s.seq = seq++;
  s.tid = 9;
  s.type = "blob";
  s.add("data", big);
  text += format_record(s) + "\n";
  for (int i = 0; i < 5000; ++i) {
    TraceRecord r;
    r.seq = seq++;
    r.tid = 9;
    r.ts_ns = static_cast<uint64_t>(i);
    r.type = "tick";
    r.add("i", int64_t{i});
    text += format_record(r) + "\n";
  }
  TraceRecord e;
  e.seq = seq++;
  e.tid = 9;
  e.type = "exit";
  e.add("status", int64_t{0});
  text += format_record(e) + "\n";

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
  EXPECT_TRUE(reader->complete());
  EXPECT_TRUE(diag.warnings.empty());
}

// ---------------------------------------------------------------------------
// Call model

struct Event {
  std::string what;  // "call f" or "end f return 0x5" / "end f unwound REASON"
  uint64_t inclusive = 0;
  uint64_t self = 0;
  bool operator==(const Event&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Event& e) {
  return os << "{" << e.what << ", " << e.inclusive << ", " << e.self << "}";
}

class RecordingObserver : public CallObserver {
 public:
  void on_call(int64_t tid, const Activation& a) override {
    events.push_back({std::to_string(tid) + " call " + a.function + " L" + std::to_string(a.level)});
  }
  void on_end(int64_t tid, const Activation& a, const ActivationEnd& end) override {
    std::string what = std::to_string(tid) + " end " + a.function;
    if (end.kind == EndKind::kReturn) {
      what += " return " + std::to_string(end.retval);
    } else {
      what += " unwound " + std::string(end.reason) + (end.implicit ? " (implicit)" : "");
    }
    events.push_back({what, end.inclusive_ns, end.self_ns});
  }
  std::vector<Event> events;
};

TraceRecord rec(const std::string& line) {
  auto r = parse_record(line);
  EXPECT_TRUE(r.ok()) << line << ": " << r.error().message;
  return r.ok() ? *r : TraceRecord{};
}

TEST(CallModel, NestingAndSelfTime) {
  RecordingObserver obs;
  CallModel model(obs);
  model.feed(rec("1 5 100 call function=\"a\" depth=0 args=[]"));
  model.feed(rec("2 5 110 call function=\"b\" depth=1 args=[]"));
  model.feed(rec("3 5 130 return function=\"b\" depth=1 retval=0x2"));
  model.feed(rec("4 5 140 call function=\"c\" depth=1 args=[]"));
  model.feed(rec("5 5 150 unwound function=\"c\" depth=1 reason=\"longjmp\""));
  model.feed(rec("6 5 200 return function=\"a\" depth=0 retval=0x0"));
  model.finish(200);
  std::vector<Event> expected = {
      {"5 call a L0"},           {"5 call b L1"}, {"5 end b return 2", 20, 20},
      {"5 call c L1"},           {"5 end c unwound longjmp", 10, 10},
      {"5 end a return 0", 100, 70},
  };
  EXPECT_EQ(obs.events, expected);
  EXPECT_EQ(model.missing_returns(), 0u);
  EXPECT_EQ(model.unmatched_ends(), 0u);
}

TEST(CallModel, MissingReturnsAndUnmatchedEnds) {
  RecordingObserver obs;
  CallModel model(obs);
  model.feed(rec("1 5 100 return function=\"x\" depth=0 retval=0x0"));  // before any call
  model.feed(rec("2 5 100 call function=\"a\" depth=0 args=[]"));
  model.feed(rec("3 5 110 call function=\"b\" depth=1 args=[]"));
  model.feed(rec("4 5 120 call function=\"c\" depth=2 args=[]"));
  // b's and c's returns are lost; the next depth-1 call closes both.
  model.feed(rec("5 5 130 call function=\"d\" depth=1 args=[]"));
  model.feed(rec("6 5 135 return function=\"z\" depth=7 retval=0x0"));  // no such frame
  model.feed(rec("7 5 140 call function=\"e\" depth=2 args=[]"));
  // d returns while e is still open: e is closed first.
  model.feed(rec("8 5 150 return function=\"d\" depth=1 retval=0x1"));
  model.finish(170);  // a is still open: closed at the last timestamp
  std::vector<Event> expected = {
      {"5 call a L0"},
      {"5 call b L1"},
      {"5 call c L2"},
      {"5 end c unwound missing return (implicit)", 10, 10},
      {"5 end b unwound missing return (implicit)", 20, 10},
      {"5 call d L1"},
      {"5 call e L2"},
      {"5 end e unwound missing return (implicit)", 10, 10},
      {"5 end d return 1", 20, 10},
      {"5 end a unwound end of trace (implicit)", 70, 30},
  };
  EXPECT_EQ(obs.events, expected);
  EXPECT_EQ(model.missing_returns(), 3u);
  EXPECT_EQ(model.unmatched_ends(), 2u);
}

TEST(CallModel, ThreadsAndProcessEnd) {
  RecordingObserver obs;
  CallModel model(obs);
  model.feed(rec("1 1 10 call function=\"m\" depth=0 args=[]"));
  model.feed(rec("2 2 20 call function=\"t\" depth=0 args=[]"));
  model.feed(rec("3 2 30 call function=\"u\" depth=1 args=[]"));
  model.feed(rec("4 2 40 thread_exit status=0"));
  model.feed(rec("5 1 50 call function=\"n\" depth=1 args=[]"));
  model.feed(rec("6 1 60 killed signal=11 name=\"SIGSEGV\" address=0x0"));
  model.finish(60);
  std::vector<Event> expected = {
      {"1 call m L0"},
      {"2 call t L0"},
      {"2 call u L1"},
      {"2 end u unwound exit (implicit)", 10, 10},
      {"2 end t unwound exit (implicit)", 20, 10},
      {"1 call n L1"},
      {"1 end n unwound killed (implicit)", 10, 10},
      {"1 end m unwound killed (implicit)", 50, 40},
  };
  EXPECT_EQ(obs.events, expected);
}

TEST(CallModel, ClockGoingBackwardsDoesNotUnderflow) {
  RecordingObserver obs;
  CallModel model(obs);
  model.feed(rec("1 1 100 call function=\"a\" depth=0 args=[]"));
  model.feed(rec("2 1 120 call function=\"b\" depth=1 args=[]"));
  model.feed(rec("3 1 150 return function=\"b\" depth=1 retval=0x0"));
  model.feed(rec("4 1 90 return function=\"a\" depth=0 retval=0x0"));
  model.finish(150);
  ASSERT_EQ(obs.events.size(), 4u);
  EXPECT_EQ(obs.events[3].inclusive, 0u);
  EXPECT_EQ(obs.events[3].self, 0u);
}

// ---------------------------------------------------------------------------
// Reports through the library

ReportOptions options_for(std::vector<std::string> traces) {
  ReportOptions o;
  o.traces = std::move(traces);
  return o;
}

// recursion.trace, by hand (ns):
//  tid 100: main [2000,4000]=2000, callees fact(3) 700 + puts 100 -> self 1200
//           fact(3) [2100,2800]=700 > fact(2) [2200,2500]=300 > fact(1) [2300,2350]=50
//           puts@plt [2900,3000]=100
//  tid 101: Worker::run [3200,3800]=600, callees fact(2) 50 + parse 200 -> self 350
//           fact(2) [3250,3300]=50 > fact(1) [3260,3270]=10
//           parse [3400,3600]=200 unwound, lex [3450,3600]=150 unwound -> parse self 50
//  fact(int): 5 calls; total = outermost only = 700 + 50 = 750;
//             self = (700-300) + (300-50) + 50 + (50-10) + 10 = 750; avg 150.
TEST(CallsReport, NumbersWorkedOutByHand) {
  CollectingDiagnostics diag;
  auto stats = compute_call_stats(options_for({data("recursion.trace")}), diag);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_TRUE(diag.warnings.empty());
  std::map<std::string, FunctionStats> by_name;
  for (const FunctionStats& s : *stats) by_name[s.name] = s;
  ASSERT_EQ(stats->size(), 6u);
  const FunctionStats& fact = by_name["fact(int)"];
  EXPECT_EQ(fact.mangled, "_Z4facti");
  EXPECT_EQ(fact.calls, 5u);
  EXPECT_EQ(fact.total_ns, 750u);
  EXPECT_EQ(fact.self_ns, 750u);
  EXPECT_EQ(fact.avg_ns(), 150u);
  EXPECT_EQ(by_name["main"].self_ns, 1200u);
  EXPECT_EQ(by_name["Worker::run()"].self_ns, 350u);
  EXPECT_EQ(by_name["parse(int)"].unwound, 1u);
  EXPECT_EQ(by_name["parse(int)"].self_ns, 50u);
  EXPECT_EQ((*stats)[0].name, "main");
  EXPECT_EQ((*stats)[5].name, "puts@plt");
}

TEST(CallsReport, JsonGolden) {
  CollectingDiagnostics diag;
  ReportOptions o = options_for({data("recursion.trace")});
  o.json = true;
  Output out;
  ASSERT_TRUE(report_calls(o, out, diag).ok());
  EXPECT_EQ(out.text(), read_file(data("recursion.calls.json")));
  EXPECT_TRUE(is_valid_json(out.text()));
}

TEST(CallsReport, TidFilter) {
  CollectingDiagnostics diag;
  ReportOptions o = options_for({data("recursion.trace")});
  o.tid = 101;
  auto stats = compute_call_stats(o, diag);
  ASSERT_TRUE(stats.ok());
  ASSERT_EQ(stats->size(), 4u);
  EXPECT_EQ((*stats)[0].name, "Worker::run()");
  EXPECT_EQ((*stats)[1].name, "parse(int)");
  EXPECT_EQ((*stats)[2].name, "lex()");
  EXPECT_EQ((*stats)[3].name, "fact(int)");
  EXPECT_EQ((*stats)[3].calls, 2u);
  EXPECT_EQ((*stats)[3].total_ns, 50u);
}

// truncated.trace: main [1100, cut], work [1200,1500]=300, work [1600, cut].
// Last timestamp 1600: main 500 (self 500-300-0=200), second work 0.
TEST(CallsReport, TruncatedTraceGolden) {
  CollectingDiagnostics diag;
  ReportOptions o = options_for({data("truncated.trace")});
  o.json = true;
  Output out;
  ASSERT_TRUE(report_calls(o, out, diag).ok());
  EXPECT_EQ(out.text(), read_file(data("truncated.calls.json")));
  EXPECT_EQ(diag.warnings.size(), 1u);
}

TEST(CallsReport, SeveralProcesses) {
  CollectingDiagnostics diag;
  auto stats =
      compute_call_stats(options_for({data("recursion.trace"), data("truncated.trace")}), diag);
  ASSERT_TRUE(stats.ok());
  ASSERT_EQ(stats->size(), 7u);
  EXPECT_EQ((*stats)[0].name, "main");
  EXPECT_EQ((*stats)[0].calls, 2u);
  EXPECT_EQ((*stats)[0].total_ns, 2500u);
  EXPECT_EQ((*stats)[0].self_ns, 1400u);
  EXPECT_EQ((*stats)[0].unwound, 1u);
}

TEST(CallsReport, TextTable) {
  CollectingDiagnostics diag;
  Output out;
  ASSERT_TRUE(report_calls(options_for({data("recursion.trace")}), out, diag).ok());
  std::vector<std::string> lines = split_lines(out.text());
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_EQ(lines[0], "     Calls    Total time     Self time      Avg time  Function");
  EXPECT_EQ(lines[2], "         1      2.000 us      1.200 us      2.000 us  main");
  EXPECT_EQ(lines[3], "         5        750 ns        750 ns        150 ns  fact(int)");
  EXPECT_EQ(lines[5], "         1        200 ns         50 ns        200 ns  parse(int)  (1 unwound)");
}

TEST(Report, FormatDuration) {
  EXPECT_EQ(format_duration(0), "0 ns");
  EXPECT_EQ(format_duration(999), "999 ns");
  EXPECT_EQ(format_duration(1000), "1.000 us");
  EXPECT_EQ(format_duration(12345), "12.345 us");
  EXPECT_EQ(format_duration(1500000), "1.500 ms");
  EXPECT_EQ(format_duration(999999999), "999.999 ms");
  EXPECT_EQ(format_duration(61000000001), "61.000 s");
}

TEST(TreeReport, Golden) {
  CollectingDiagnostics diag;
  Output out;
  ASSERT_TRUE(report_tree(options_for({data("recursion.trace")}), out, diag).ok());
  EXPECT_EQ(out.text(), read_file(data("recursion.tree.txt")));
}

TEST(TreeReport, TruncatedGolden) {
  CollectingDiagnostics diag;
  Output out;
  ASSERT_TRUE(report_tree(options_for({data("truncated.trace")}), out, diag).ok());
  EXPECT_EQ(out.text(), read_file(data("truncated.tree.txt")));
}

TEST(TreeReport, TidFilterAndTime) {
  CollectingDiagnostics diag;
  ReportOptions o = options_for({data("recursion.trace")});
  o.tid = 101;
  o.time = true;
  Output out;
  ASSERT_TRUE(report_tree(o, out, diag).ok());
  EXPECT_EQ(out.text(),
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

TEST(ValueTypes, ParseAndFormat) {
  auto t = parse_value_types("i4,u8,p,s>v");
  ASSERT_TRUE(t.has_value());
  ASSERT_EQ(t->args.size(), 4u);
  EXPECT_EQ(t->args[0].kind, 'i');
  EXPECT_EQ(t->args[0].size, 4u);
  EXPECT_EQ(t->ret.kind, 'v');
  EXPECT_TRUE(parse_value_types(">?").has_value());
  EXPECT_FALSE(parse_value_types("i4").has_value());           // no '>'
  EXPECT_FALSE(parse_value_types("i4,>i4").has_value());       // empty code
  EXPECT_FALSE(parse_value_types("i3>i4").has_value());        // no such size
  EXPECT_TRUE(parse_value_types("p,p,p,p,p,p,f8,f8,f8,f8,f8,f8,f8,f8>v").has_value());  // 14
  EXPECT_FALSE(parse_value_types("p,p,p,p,p,p,f8,f8,f8,f8,f8,f8,f8,f8,p>v").has_value());
  EXPECT_FALSE(parse_value_types("f>v").has_value());  // a float needs its size
  EXPECT_EQ(format_value({'i', 4}, 0xffffffff), "-1");
  EXPECT_EQ(format_value({'i', 8}, 0x8000000000000000ull), "-9223372036854775808");
  EXPECT_EQ(format_value({'u', 1}, 0x1ff), "255");
  EXPECT_EQ(format_value({'u', 8}, ~0ull), "18446744073709551615");
  EXPECT_EQ(format_value({'p', 8}, 0x1000), "0x1000");
  EXPECT_EQ(format_value({'v', 8}, 7), "");
  EXPECT_EQ(format_value({'f', 8}, 0x3ff8000000000000ull), "1.5");   // 1.5 as a double
  EXPECT_EQ(format_value({'f', 4}, 0xdeadbeefc0200000ull), "-2.5");  // low 4 bytes: -2.5f
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
  Output out;
  ASSERT_TRUE(report_tree(options_for({path}), out, diag).ok());
  EXPECT_EQ(out.text(),
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
  CollectingDiagnostics diag;
  Output out;
  ASSERT_TRUE(report_tree(options_for({path}), out, diag).ok());
  EXPECT_EQ(out.text(),
            "== pid 7 tid 7 ==\n"
            "open(\"/tmp/x y\\n\\xff\", 0x241, 0x1a4) {\n"
            "  <lost 4 events: buffer full>\n"
            "} = 0xffffffffffffffff\n"
            "f(0x1, ?) = 0x0\n"
            "<exec \"/bin/b\">\n");
  EXPECT_TRUE(diag.warnings.empty());
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
  CollectingDiagnostics diag;
  Output out;
  ASSERT_TRUE(report_tree(options_for({tmp.write("big.trace", text)}), out, diag).ok());
  std::string expected;
  for (int tid : {1, 2}) {
    if (tid == 2) expected += "\n";
    expected += "== pid 1 tid " + std::to_string(tid) + " ==\n";
    for (int i = 0; i < kCalls; ++i) expected += "f(0x" + std::to_string(i) + ") = 0x0\n";
  }
  EXPECT_EQ(out.text(), expected);
  EXPECT_TRUE(diag.warnings.empty());
}

TEST(DumpReport, TextIsTheTracePrefixedByPid) {
  CollectingDiagnostics diag;
  Output out;
  ASSERT_TRUE(report_dump(options_for({data("recursion.trace")}), out, diag).ok());
  std::vector<std::string> trace = split_lines(read_file(data("recursion.trace")));
  std::vector<std::string> dump = split_lines(out.text());
  ASSERT_EQ(dump.size() + 1, trace.size());
  for (size_t i = 0; i < dump.size(); ++i) EXPECT_EQ(dump[i], "100: " + trace[i + 1]);
}

TEST(DumpReport, JsonLines) {
  CollectingDiagnostics diag;
  ReportOptions o = options_for({data("recursion.trace"), data("truncated.trace")});
  o.json = true;
  Output out;
  ASSERT_TRUE(report_dump(o, out, diag).ok());
  std::vector<std::string> lines = split_lines(out.text());
  ASSERT_EQ(lines.size(), 28u + 6u);
  for (const std::string& line : lines) {
    JsonChecker check(line);
    ASSERT_TRUE(check.valid()) << line;
    ASSERT_GE(check.top_keys.size(), 5u) << line;
    EXPECT_EQ(check.top_keys[0], "pid");
    EXPECT_EQ(check.top_keys[1], "tid");
    EXPECT_EQ(check.top_keys[2], "seq");
    EXPECT_EQ(check.top_keys[3], "ts_ns");
    EXPECT_EQ(check.top_keys[4], "type");
    std::vector<std::string> keys = check.top_keys;
    std::sort(keys.begin(), keys.end());
    EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end()) << "duplicate key: " << line;
  }
  EXPECT_EQ(lines[0],
            "{\"pid\": 100, \"tid\": 100, \"seq\": 1, \"ts_ns\": 1000, \"type\": \"header\", "
            "\"format\": 1, \"arch\": \"x86_64\", \"exe\": \"/opt/caf\xc3\xa9/app\", "
            "\"cmdline\": \"app 'a b'\", \"start_realtime_ns\": 1700000000000000000, "
            "\"plugins\": \"calltrace\", \"backtrace_depth\": 0}");
  EXPECT_EQ(lines[4],
            "{\"pid\": 100, \"tid\": 100, \"seq\": 5, \"ts_ns\": 2100, \"type\": \"call\", "
            "\"function\": \"_Z4facti\", \"function_demangled\": \"fact(int)\", "
            "\"address\": \"0x55551100\", \"depth\": 1, "
            "\"args\": [\"0x3\", \"0x0\", \"0x0\", \"0x0\", \"0x0\", \"0x0\"], \"nargs\": 1}");
  EXPECT_EQ(lines[10],
            "{\"pid\": 100, \"tid\": 100, \"seq\": 11, \"ts_ns\": 2900, \"type\": \"call\", "
            "\"function\": \"puts@plt\", \"function_demangled\": \"puts@plt\", "
            "\"address\": \"0x55551030\", \"depth\": 1, "
            "\"args\": [\"0x55551800\", \"0x1\", \"0x2\", \"0x3\", \"0x4\", \"0x5\"], "
            "\"str0\": \"6\\n\"}");
  EXPECT_TRUE(contains(lines[28], "\"pid\": 200"));
}

TEST(DumpReport, KeyCollisions) {
  Demangler d;
  std::string out;
  append_record_json(out, 9,
                     rec("1 9 5 odd pid=9 tid=3 type=\"x\" function=\"_Z1fv\" "
                         "function_demangled=\"y\" a=\"\\xff\" a=1"),
                     d);
  EXPECT_EQ(out,
            "{\"pid\": 9, \"tid\": 9, \"seq\": 1, \"ts_ns\": 5, \"type\": \"odd\", "
            "\"field_tid\": 3, \"field_type\": \"x\", \"function\": \"_Z1fv\", "
            "\"function_demangled\": \"f()\", \"field_function_demangled\": \"y\", "
            "\"a\": \"\\ufffd\", \"field_a\": 1}");
  EXPECT_TRUE(is_valid_json(out));
}

// ---------------------------------------------------------------------------
// Command line

Result<CommandLine> parse(std::vector<std::string> args) { return parse_command_line(args); }

TEST(CommandLine, Parses) {
  auto cl = parse({"tree", "a.trace", "--tid=5", "--time", "-o", "out.txt", "b.trace"});
  ASSERT_TRUE(cl.ok()) << cl.error().message;
  EXPECT_EQ(cl->report->name, "tree");
  EXPECT_EQ(cl->options.traces, (std::vector<std::string>{"a.trace", "b.trace"}));
  EXPECT_EQ(cl->options.tid, 5);
  EXPECT_TRUE(cl->options.time);
  EXPECT_EQ(cl->output, "out.txt");

  cl = parse({"calls", "--json", "-oX", "--", "--json"});
  ASSERT_TRUE(cl.ok()) << cl.error().message;
  EXPECT_TRUE(cl->options.json);
  EXPECT_EQ(cl->output, "X");
  EXPECT_EQ(cl->options.traces, (std::vector<std::string>{"--json"}));

  cl = parse({"dump", "--output=o", "--tid", "7", "t"});
  ASSERT_TRUE(cl.ok()) << cl.error().message;
  EXPECT_EQ(cl->output, "o");
  EXPECT_EQ(cl->options.tid, 7);

  cl = parse({"--help"});
  ASSERT_TRUE(cl.ok());
  EXPECT_TRUE(cl->help);
}

TEST(CommandLine, UsageErrors) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  std::vector<Case> cases = {
      {{}, "no report given"},
      {{"nope", "t"}, "unknown report 'nope' (one of: leaks, peak, temporary, allocators, histogram, diff, "},
      {{"calls"}, "no trace files given"},
      {{"calls", "--bogus", "t"}, "unknown option '--bogus'"},
      {{"calls", "-x", "t"}, "unknown option '-x'"},
      {{"tree", "--json", "t"}, "the tree report has no --json output"},
      {{"calls", "--time", "t"}, "the calls report does not take --time"},
      {{"calls", "t", "-o"}, "option '-o' needs a file name"},
      {{"calls", "t", "--tid"}, "option '--tid' needs a thread id"},
      {{"calls", "t", "--tid=abc"}, "needs a thread id (a positive number), not 'abc'"},
      {{"calls", "t", "--tid=-3"}, "not '-3'"},
      {{"calls", "t", "--json=1"}, "option '--json' takes no value"},
  };
  for (const Case& c : cases) {
    auto cl = parse(c.args);
    ASSERT_FALSE(cl.ok()) << c.message;
    EXPECT_TRUE(contains(cl.error().message, c.message)) << cl.error().message;
    EXPECT_FALSE(contains(cl.error().message, "\n"));
  }
}

// ---------------------------------------------------------------------------
// The functracer-postproc binary

class Binary : public test::PostprocBinary {};

TEST_F(Binary, CallsJsonGolden) {
  RunResult r = run({"calls", "--json", data("recursion.trace")});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, read_file(data("recursion.calls.json")));
  EXPECT_EQ(r.err, "");
}

TEST_F(Binary, TreeGolden) {
  RunResult r = run({"tree", data("recursion.trace")});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, read_file(data("recursion.tree.txt")));
  EXPECT_EQ(r.err, "");
}

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
           {}, {"calls"}, {"bogus", "x"}, {"tree", "--json", "x"}, {"calls", "--nope", "x"}}) {
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
