#include "common/trace_record.h"

#include <array>
#include <charconv>
#include <cstring>
#include <limits>
#include <string>
#include <system_error>

#include "common/hex.h"

namespace ft {

namespace {

// "000102...ff": the two digits of every byte.
constexpr std::array<char, 512> kHexPairs = [] {
  std::array<char, 512> t{};
  for (size_t b = 0; b < 256; ++b) {
    t[2 * b] = kHexDigits[b >> 4];
    t[2 * b + 1] = kHexDigits[b & 15];
  }
  return t;
}();

// Bytes written as they are inside a quoted string.
bool is_plain(unsigned char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; }

// `s` as a double-quoted string value with the trace escapes, handed to
// put(const char*, size_t) in pieces: runs of plain bytes and escapes.
template <class Put>
void quote_into(std::string_view s, Put&& put) {
  put("\"", 1);
  size_t i = 0;
  while (i < s.size()) {
    size_t run = i;
    while (run < s.size() && is_plain(static_cast<unsigned char>(s[run]))) ++run;
    if (run > i) put(s.data() + i, run - i);
    if (run == s.size()) break;
    auto c = static_cast<unsigned char>(s[run]);
    switch (c) {
      case '\\': put("\\\\", 2); break;
      case '"': put("\\\"", 2); break;
      case '\n': put("\\n", 2); break;
      case '\t': put("\\t", 2); break;
      case '\r': put("\\r", 2); break;
      default: {
        char esc[4] = {'\\', 'x', kHexDigits[c >> 4], kHexDigits[c & 15]};
        put(esc, 4);
      }
    }
    i = run + 1;
  }
  put("\"", 1);
}

// Bytes that only the \xHH form can carry (the canonical encoding uses the short
// escapes for the others).
bool needs_hex_escape(unsigned char c) {
  return (c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c >= 0x7f;
}

bool is_name_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

// Value of a lowercase hex digit, -1 for any other byte.
constexpr std::array<int8_t, 256> kHexValue = [] {
  std::array<int8_t, 256> t{};
  t.fill(-1);
  for (int c = '0'; c <= '9'; ++c) t[static_cast<size_t>(c)] = static_cast<int8_t>(c - '0');
  for (int c = 'a'; c <= 'f'; ++c) t[static_cast<size_t>(c)] = static_cast<int8_t>(c - 'a' + 10);
  return t;
}();

int hex_value(char c) { return kHexValue[static_cast<unsigned char>(c)]; }

std::string describe_char(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u > 0x20 && u < 0x7f) return std::string("'") + c + "'";
  if (u == ' ') return "a space";
  std::string s = "byte 0x";
  s += kHexDigits[u >> 4];
  s += kHexDigits[u & 15];
  return s;
}

// What a number is, for messages: "timestamp", or "field 'size'". Built into a string
// only when there is an error to report.
struct Subject {
  Subject(const char* w) : what(w) {}  // NOLINT: implicit from a literal
  Subject(const char* w, std::string_view k) : what(w), key(k) {}
  std::string str() const {
    std::string s(what);
    if (!key.empty()) s.append(" '").append(key).append("'");
    return s;
  }
  std::string_view what;
  std::string_view key;
};

// Recursive-descent parser over one line. Every error says what was expected and
// where (1-based column).
class LineParser {
 public:
  explicit LineParser(std::string_view line) : s_(line) {}

  // Parses into `r`, reusing its fields and `spare` (fields left over from longer
  // lines) so that strings and lists keep their memory from line to line.
  Status parse_into(TraceRecord& r, std::vector<TraceField>& spare) {
    if (!parse_unsigned(r.seq, "sequence number")) return err();
    if (!expect_space("after the sequence number")) return err();
    if (!parse_signed(r.tid, "thread id")) return err();
    if (!expect_space("after the thread id")) return err();
    if (!parse_unsigned(r.ts_ns, "timestamp")) return err();
    if (!expect_space("after the timestamp")) return err();
    if (!parse_name(r.type, "record type")) return err();
    size_t n = 0;
    Status st;
    while (pos_ < s_.size()) {
      if (!expect_space("between fields")) {
        st = err();
        break;
      }
      if (n == r.fields.size()) {
        if (spare.empty()) {
          r.fields.emplace_back();
        } else {
          r.fields.push_back(std::move(spare.back()));
          spare.pop_back();
        }
      }
      TraceField& f = r.fields[n++];
      if (!parse_name(f.key, "field name")) {
        st = err();
        break;
      }
      if (pos_ >= s_.size() || s_[pos_] != '=') {
        fail("expected '=' after field name '" + f.key + "'");
        st = err();
        break;
      }
      ++pos_;
      if (!parse_value(f.value, f.key)) {
        st = err();
        break;
      }
      if (pos_ < s_.size() && s_[pos_] != ' ') {
        fail("unexpected " + found() + " after the value of field '" + f.key + "'");
        st = err();
        break;
      }
    }
    while (r.fields.size() > n) {
      spare.push_back(std::move(r.fields.back()));
      r.fields.pop_back();
    }
    return st;
  }

 private:
  Error err() const { return Error::msg(message_); }

  void fail(std::string what) {
    message_ = std::move(what) + " at column " + std::to_string(pos_ + 1);
  }

  std::string found() const {
    if (pos_ >= s_.size()) return "end of line";
    return describe_char(s_[pos_]);
  }

  bool expect_space(const char* where) {
    if (pos_ < s_.size() && s_[pos_] == ' ') {
      ++pos_;
      return true;
    }
    fail(std::string("expected a space ") + where + ", found " + found());
    return false;
  }

  // Digits of a canonical decimal number starting at pos_: no leading zeros.
  bool scan_decimal_digits(size_t& end, const Subject& what) {
    end = pos_;
    while (end < s_.size() && s_[end] >= '0' && s_[end] <= '9') ++end;
    if (end == pos_) {
      fail("expected " + what.str() + " (decimal digits), found " + found());
      return false;
    }
    if (s_[pos_] == '0' && end - pos_ > 1) {
      fail(what.str() + " has a leading zero");
      return false;
    }
    return true;
  }

  bool parse_unsigned(uint64_t& out, const Subject& what) {
    size_t end = 0;
    if (!scan_decimal_digits(end, what)) return false;
    auto res = std::from_chars(s_.data() + pos_, s_.data() + end, out);
    if (res.ec != std::errc()) {
      fail(what.str() + " does not fit in 64 bits");
      return false;
    }
    pos_ = end;
    return true;
  }

  bool parse_signed(int64_t& out, const Subject& what) {
    size_t start = pos_;
    bool negative = pos_ < s_.size() && s_[pos_] == '-';
    if (negative) ++pos_;
    size_t end = 0;
    if (!scan_decimal_digits(end, what)) return false;
    if (negative && end - pos_ == 1 && s_[pos_] == '0') {
      fail(what.str() + " is written '-0'");
      return false;
    }
    auto res = std::from_chars(s_.data() + start, s_.data() + end, out);
    if (res.ec != std::errc()) {
      pos_ = start;
      fail(what.str() + " does not fit in a signed 64-bit integer");
      return false;
    }
    pos_ = end;
    return true;
  }

  bool parse_name(std::string& out, const char* what) {
    size_t end = pos_;
    while (end < s_.size() && is_name_char(s_[end])) ++end;
    if (end == pos_) {
      fail(std::string("expected a ") + what + " ([a-z0-9_]+), found " + found());
      return false;
    }
    out.assign(s_.substr(pos_, end - pos_));
    pos_ = end;
    return true;
  }

  // "0x" already checked by the caller; canonical lowercase digits without leading zeros.
  bool parse_hex_number(uint64_t& out, const std::string& key) {
    pos_ += 2;
    size_t start = pos_;
    size_t end = pos_;
    while (end < s_.size() && hex_value(s_[end]) >= 0) ++end;
    if (end == start) {
      if (pos_ < s_.size() && s_[pos_] >= 'A' && s_[pos_] <= 'F') {
        fail("field '" + key + "': hex digits must be lowercase");
      } else {
        fail("field '" + key + "': expected hex digits after '0x', found " + found());
      }
      return false;
    }
    if (end < s_.size() && s_[end] >= 'A' && s_[end] <= 'F') {
      pos_ = end;
      fail("field '" + key + "': hex digits must be lowercase");
      return false;
    }
    if (s_[start] == '0' && end - start > 1) {
      fail("field '" + key + "': hex number has a leading zero");
      return false;
    }
    if (end - start > 16) {
      fail("field '" + key + "': hex number does not fit in 64 bits");
      return false;
    }
    uint64_t v = 0;
    for (size_t i = start; i < end; ++i) v = (v << 4) | static_cast<uint64_t>(hex_value(s_[i]));
    out = v;
    pos_ = end;
    return true;
  }

  bool at_hex_prefix() const {
    return pos_ + 1 < s_.size() && s_[pos_] == '0' && s_[pos_ + 1] == 'x';
  }

  bool parse_string(std::string& out, const std::string& key) {
    size_t open = pos_;
    ++pos_;  // opening quote
    while (true) {
      // Copy the run of plain bytes in one go.
      size_t run = pos_;
      while (run < s_.size() && is_plain(static_cast<unsigned char>(s_[run]))) ++run;
      out.append(s_.data() + pos_, run - pos_);
      pos_ = run;
      if (pos_ >= s_.size()) {
        pos_ = open;
        fail("field '" + key + "': string is not terminated");
        return false;
      }
      char c = s_[pos_];
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c != '\\') {
        fail("field '" + key + "': " + describe_char(c) + " in a string must be escaped");
        return false;
      }
      if (pos_ + 1 >= s_.size()) {
        fail("field '" + key + "': string ends inside an escape");
        return false;
      }
      char e = s_[pos_ + 1];
      switch (e) {
        case '\\': out += '\\'; pos_ += 2; break;
        case '"': out += '"'; pos_ += 2; break;
        case 'n': out += '\n'; pos_ += 2; break;
        case 't': out += '\t'; pos_ += 2; break;
        case 'r': out += '\r'; pos_ += 2; break;
        case 'x': {
          int hi = pos_ + 2 < s_.size() ? hex_value(s_[pos_ + 2]) : -1;
          int lo = pos_ + 3 < s_.size() ? hex_value(s_[pos_ + 3]) : -1;
          if (hi < 0 || lo < 0) {
            fail("field '" + key + "': \\x must be followed by two lowercase hex digits");
            return false;
          }
          auto byte = static_cast<unsigned char>(hi * 16 + lo);
          if (!needs_hex_escape(byte)) {
            fail("field '" + key + "': \\x escape used for a byte that has a shorter form");
            return false;
          }
          out += static_cast<char>(byte);
          pos_ += 4;
          break;
        }
        default:
          ++pos_;
          fail("field '" + key + "': unknown escape \\" + std::string(1, e) +
               " (allowed: \\\\ \\\" \\n \\t \\r \\xHH)");
          return false;
      }
    }
  }

  bool parse_list(HexList& out, const std::string& key) {
    ++pos_;  // '['
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      if (!at_hex_prefix()) {
        fail("field '" + key + "': expected a 0x hex number in the list, found " + found());
        return false;
      }
      uint64_t v = 0;
      if (!parse_hex_number(v, key)) return false;
      out.push_back(v);
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return true;
      }
      fail("field '" + key + "': expected ',' or ']' in the list, found " + found());
      return false;
    }
  }

  bool parse_value(TraceValue& out, const std::string& key) {
    if (pos_ >= s_.size()) {
      fail("field '" + key + "' has no value");
      return false;
    }
    char c = s_[pos_];
    // Strings and lists are parsed into the value's own storage when it already holds
    // one (parse_into reuses records), keeping its capacity.
    if (c == '"') {
      auto* v = std::get_if<std::string>(&out);
      if (v == nullptr) v = &out.emplace<std::string>();
      v->clear();
      return parse_string(*v, key);
    }
    if (c == '[') {
      auto* v = std::get_if<HexList>(&out);
      if (v == nullptr) v = &out.emplace<HexList>();
      v->clear();
      return parse_list(*v, key);
    }
    if (at_hex_prefix()) {
      uint64_t v = 0;
      if (!parse_hex_number(v, key)) return false;
      out = Hex{v};
      return true;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      int64_t v = 0;
      if (!parse_signed(v, Subject("field", key))) return false;
      out = v;
      return true;
    }
    fail("field '" + key + "': a value starts with a digit, '-', '0x', '\"' or '[', found " +
         found());
    return false;
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string message_;
};

}  // namespace

const TraceValue* TraceRecord::get(std::string_view key) const {
  for (const auto& f : fields) {
    if (f.key == key) return &f.value;
  }
  return nullptr;
}

std::optional<int64_t> TraceRecord::get_int(std::string_view key) const {
  const TraceValue* v = get(key);
  if (!v) return std::nullopt;
  if (auto* i = std::get_if<int64_t>(v)) return *i;
  if (auto* h = std::get_if<Hex>(v)) return static_cast<int64_t>(h->v);
  return std::nullopt;
}

std::optional<uint64_t> TraceRecord::get_hex(std::string_view key) const {
  const TraceValue* v = get(key);
  if (!v) return std::nullopt;
  if (auto* h = std::get_if<Hex>(v)) return h->v;
  if (auto* i = std::get_if<int64_t>(v); i && *i >= 0) return static_cast<uint64_t>(*i);
  return std::nullopt;
}

const std::string* TraceRecord::get_str(std::string_view key) const {
  const TraceValue* v = get(key);
  return v ? std::get_if<std::string>(v) : nullptr;
}

const HexList* TraceRecord::get_list(std::string_view key) const {
  const TraceValue* v = get(key);
  return v ? std::get_if<HexList>(v) : nullptr;
}

void append_quoted(std::string& out, std::string_view s) {
  quote_into(s, [&](const char* p, size_t n) { out.append(p, n); });
}

LineAppender::LineAppender(std::string& out, uint64_t seq, int64_t tid, uint64_t ts_ns, std::string_view type)
    : out_(out), p_(stage_) {
  u64(seq);
  *p_++ = ' ';
  i64(tid);
  *p_++ = ' ';
  u64(ts_ns);
  *p_++ = ' ';
  put(type.data(), type.size());
}

void LineAppender::put(const char* s, size_t n) {
  if (room() < n) {
    spill();
    if (n > kStage) {
      out_.append(s, n);
      return;
    }
  }
  std::memcpy(p_, s, n);
  p_ += n;
}

void LineAppender::u64(uint64_t v) {
  reserve(20);
  p_ = std::to_chars(p_, p_ + 20, v).ptr;
}

void LineAppender::i64(int64_t v) {
  reserve(20);
  p_ = std::to_chars(p_, p_ + 20, v).ptr;
}

void LineAppender::hex_digits(uint64_t v) {
  // "0x" and the digits without leading zeros (lowercase), filled from the end two at
  // a time.
  reserve(18);
  int digits = v ? (67 - __builtin_clzll(v)) / 4 : 1;
  p_[0] = '0';
  p_[1] = 'x';
  char* d = p_ + 2 + digits;
  p_ = d;
  for (; v >= 0x100; v >>= 8) {
    d -= 2;
    std::memcpy(d, &kHexPairs[2 * (v & 0xff)], 2);
  }
  if (v >= 0x10) std::memcpy(d - 2, &kHexPairs[2 * v], 2);
  else d[-1] = kHexDigits[v];
}

void LineAppender::key(std::string_view k) {
  reserve(k.size() + 2);  // keys are short names: one reserve, two stores and a copy
  if (k.size() + 2 > kStage) {
    put(' ');
    put(k.data(), k.size());
    put('=');
    return;
  }
  *p_++ = ' ';
  std::memcpy(p_, k.data(), k.size());
  p_ += k.size();
  *p_++ = '=';
}

void LineAppender::integer(std::string_view k, int64_t v) {
  key(k);
  i64(v);
}

void LineAppender::hex(std::string_view k, uint64_t v) {
  key(k);
  hex_digits(v);
}

void LineAppender::str(std::string_view k, std::string_view s) {
  key(k);
  quote_into(s, [&](const char* p, size_t n) { put(p, n); });
}

void LineAppender::list(std::string_view k, const uint64_t* v, size_t n) {
  key(k);
  put('[');
  for (size_t i = 0; i < n; ++i) {
    if (i) put(',');
    hex_digits(v[i]);
  }
  put(']');
}

void append_record(std::string& out, const TraceRecord& r) {
  LineAppender line(out, r.seq, r.tid, r.ts_ns, r.type);
  for (const auto& f : r.fields) {
    if (auto* i = std::get_if<int64_t>(&f.value))
      line.integer(f.key, *i);
    else if (auto* h = std::get_if<Hex>(&f.value))
      line.hex(f.key, h->v);
    else if (auto* s = std::get_if<std::string>(&f.value))
      line.str(f.key, *s);
    else
      line.list(f.key, std::get<HexList>(f.value).data(), std::get<HexList>(f.value).size());
  }
}

std::string format_record(const TraceRecord& r) {
  std::string out;
  out.reserve(48 + r.type.size() + r.fields.size() * 24);
  append_record(out, r);
  return out;
}

Result<TraceRecord> parse_record(std::string_view line) {
  TraceRecord r;
  std::vector<TraceField> spare;
  if (Status st = LineParser(line).parse_into(r, spare); !st) return st.error();
  return r;
}

Status RecordParser::parse(std::string_view line, TraceRecord& r) {
  return LineParser(line).parse_into(r, spare_);
}

}  // namespace ft
