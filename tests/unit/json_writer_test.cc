// The post-processor's JSON writer (postproc/json_writer.h): string escaping, UTF-8
// kept or replaced, compact and pretty structure; and the strict checker the other
// tests judge JSON output with (json_checker.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>

#include "json_checker.h"
#include "postproc/json_writer.h"

namespace ft::post {
namespace {

using test::is_valid_json;

std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

struct Escaped {
  std::string_view in;
  std::string_view want;
};

void expect_escaped(std::initializer_list<Escaped> cases) {
  for (const Escaped& c : cases) EXPECT_EQ(json_string(c.in), c.want) << "input: " << c.in;
}

TEST(JsonWriter, EscapesSpecialCharacters) {
  expect_escaped({
      {"plain", "\"plain\""},
      {"a\"b\\c/d", "\"a\\\"b\\\\c/d\""},
      {"\n\t\r\b\f", "\"\\n\\t\\r\\b\\f\""},
      {std::string_view("\0\x01\x1f\x7f", 4), "\"\\u0000\\u0001\\u001f\\u007f\""},
  });
}

TEST(JsonWriter, KeepsValidUtf8) {
  expect_escaped({
      {"caf\xc3\xa9", "\"caf\xc3\xa9\""},                   // U+00E9
      {"\xe2\x82\xac", "\"\xe2\x82\xac\""},                 // U+20AC
      {"\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\""},         // U+1F600
      {"\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\""},         // U+10FFFF
      {"\xe2\x80\xa8\xe2\x80\xa9", "\"\\u2028\\u2029\""},  // JS line breaks
  });
}

TEST(JsonWriter, ReplacesInvalidUtf8) {
  expect_escaped({
      {"a\xff" "b", "\"a\\ufffdb\""},
      {"\x80", "\"\\ufffd\""},                                        // lone continuation
      {"\xc3", "\"\\ufffd\""},                                        // truncated
      {"\xc0\xaf", "\"\\ufffd\\ufffd\""},                             // overlong '/'
      {"\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\""},                  // overlong
      {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""},                  // surrogate
      {"\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""},       // above U+10FFFF
      {"\xe2\x82x", "\"\\ufffd\\ufffdx\""},
  });
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
  for (std::string_view bad : {"", "{", "{\"a\" 1}", "[1,]", "\"a\nb\"", "\"\xff\"", "01", "{} {}"}) {
    EXPECT_FALSE(is_valid_json(bad)) << bad;
  }
  EXPECT_TRUE(is_valid_json("{\"a\": [1, -2, \"\\u00e9\"]}"));
}

}  // namespace
}  // namespace ft::post
