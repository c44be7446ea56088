// JsonWriter: builds JSON text (RFC 8259) into a string, for the --json outputs.
//
// Strings from traces are arbitrary bytes (function names, file names, argument
// strings), so every string is checked: valid UTF-8 passes through, each byte that is
// not part of a well-formed UTF-8 sequence becomes U+FFFD, and control characters,
// DEL and U+2028/U+2029 are written as escapes. Numbers are integers only (int64 or
// uint64), written in decimal without exponent, so no precision is lost for
// timestamps and counts. Misuse (a value in an object without a key, unbalanced
// ends) is a bug and fails an FT_CHECK.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ft::post {

// Appends `s` as a JSON string literal (with quotes).
void append_json_string(std::string& out, std::string_view s);

class JsonWriter {
 public:
  // indent 0: everything on one line (for JSON Lines); > 0: pretty-printed with that
  // many spaces per level.
  explicit JsonWriter(std::string& out, int indent = 0) : out_(out), indent_(indent) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);

  JsonWriter& string(std::string_view s);
  JsonWriter& integer(int64_t v);
  JsonWriter& unsigned_integer(uint64_t v);
  JsonWriter& boolean(bool v);
  JsonWriter& null();

  // True when every object and array has been closed and one value was written.
  bool complete() const { return stack_.empty() && wrote_root_; }

 private:
  struct Level {
    bool object = false;
    bool empty = true;
  };
  void before_value();
  void newline_indent(size_t depth);
  template <typename Integer>
  JsonWriter& number(Integer v);

  std::string& out_;
  int indent_;
  std::vector<Level> stack_;
  bool after_key_ = false;
  bool wrote_root_ = false;
};

}  // namespace ft::post
