// The dump report (postproc/report_dump.h): the text form is the trace itself prefixed
// with the pid; --json is one strict JSON object per record with pid, tid, seq, ts_ns and
// type first, names demangled, and fields whose keys collide with those renamed.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "json_checker.h"
#include "common/demangle.h"
#include "postproc/report_dump.h"
#include "postproc_fixture.h"

namespace ft::post {
namespace {

using test::contains;
using test::data;
using test::is_valid_json;
using test::JsonChecker;
using test::options_for;
using test::read_file;
using test::rec;
using test::report_text;
using test::split_lines;

TEST(DumpReport, TextIsTheTracePrefixedByPid) {
  std::vector<std::string> trace = split_lines(read_file(data("recursion.trace")));
  std::vector<std::string> dump =
      split_lines(report_text(report_dump, options_for({data("recursion.trace")})));
  ASSERT_EQ(trace.size(), 29u);  // the magic line and 28 records
  ASSERT_EQ(dump.size() + 1, trace.size());
  for (size_t i = 0; i < dump.size(); ++i) EXPECT_EQ(dump[i], "100: " + trace[i + 1]);
}

TEST(DumpReport, JsonLines) {
  CollectingDiagnostics diag;
  ReportOptions o = options_for({data("recursion.trace"), data("truncated.trace")});
  o.json = true;
  std::vector<std::string> lines = split_lines(report_text(report_dump, o, diag));
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

}  // namespace
}  // namespace ft::post
