#include "postproc/json_writer.h"

#include <charconv>

#include "common/check.h"
#include "common/hex.h"

namespace ft::post {

namespace {

void append_u_escape(std::string& out, unsigned cp) {
  char esc[6] = {'\\', 'u', kHexDigits[(cp >> 12) & 15], kHexDigits[(cp >> 8) & 15],
                 kHexDigits[(cp >> 4) & 15], kHexDigits[cp & 15]};
  out.append(esc, 6);
}

bool is_continuation(unsigned char c) { return (c & 0xc0) == 0x80; }

// Length of the well-formed UTF-8 sequence starting at s[i] (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), or 0 if there is none.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  unsigned char c = b(0);
  size_t left = s.size() - i;
  if (c >= 0xc2 && c <= 0xdf) return left >= 2 && is_continuation(b(1)) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (left < 3 || !is_continuation(b(1)) || !is_continuation(b(2))) return 0;
    if (c == 0xe0 && b(1) < 0xa0) return 0;  // overlong
    if (c == 0xed && b(1) > 0x9f) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (left < 4 || !is_continuation(b(1)) || !is_continuation(b(2)) || !is_continuation(b(3)))
      return 0;
    if (c == 0xf0 && b(1) < 0x90) return 0;  // overlong
    if (c == 0xf4 && b(1) > 0x8f) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      if (c == '"' || c == '\\') out += '\\';
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c < 0x80) {
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default: append_u_escape(out, c);  // other controls and DEL
      }
      ++i;
      continue;
    }
    size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      append_u_escape(out, 0xfffd);
      ++i;
      continue;
    }
    // U+2028 and U+2029 are valid JSON but break JavaScript string literals.
    if (n == 3 && c == 0xe2 && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
        (static_cast<unsigned char>(s[i + 2]) & 0xfe) == 0xa8) {
      append_u_escape(out, 0x2028 | (static_cast<unsigned char>(s[i + 2]) & 1));
    } else {
      out.append(s.data() + i, n);
    }
    i += n;
  }
  out += '"';
}

void JsonWriter::newline_indent(size_t depth) {
  if (indent_ <= 0) return;
  out_ += '\n';
  out_.append(depth * static_cast<size_t>(indent_), ' ');
}

void JsonWriter::before_value() {
  if (stack_.empty()) {
    FT_CHECK(!wrote_root_, "JSON writer: a second top-level value");
    wrote_root_ = true;
    return;
  }
  Level& top = stack_.back();
  if (top.object) {
    FT_CHECK(after_key_, "JSON writer: a value in an object without a key");
    after_key_ = false;
    return;
  }
  if (!top.empty) out_ += indent_ > 0 ? "," : ", ";
  top.empty = false;
  newline_indent(stack_.size());
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_ += '{';
  stack_.push_back(Level{true, true});
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  FT_CHECK(!stack_.empty() && stack_.back().object && !after_key_,
           "JSON writer: end_object without a matching begin_object");
  bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty) newline_indent(stack_.size());
  out_ += '}';
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_ += '[';
  stack_.push_back(Level{false, true});
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  FT_CHECK(!stack_.empty() && !stack_.back().object,
           "JSON writer: end_array without a matching begin_array");
  bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty) newline_indent(stack_.size());
  out_ += ']';
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  FT_CHECK(!stack_.empty() && stack_.back().object && !after_key_,
           "JSON writer: a key outside an object or two keys in a row");
  Level& top = stack_.back();
  if (!top.empty) out_ += indent_ > 0 ? "," : ", ";
  top.empty = false;
  newline_indent(stack_.size());
  append_json_string(out_, k);
  out_ += ": ";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::string(std::string_view s) {
  before_value();
  append_json_string(out_, s);
  return *this;
}

template <typename Integer>
JsonWriter& JsonWriter::number(Integer v) {
  before_value();
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, res.ptr);
  return *this;
}

JsonWriter& JsonWriter::integer(int64_t v) { return number(v); }

JsonWriter& JsonWriter::unsigned_integer(uint64_t v) { return number(v); }

JsonWriter& JsonWriter::boolean(bool v) {
  before_value();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

}  // namespace ft::post
