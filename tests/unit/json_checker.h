// A strict JSON checker (RFC 8259) for the unit tests: is this one complete JSON value,
// and which keys does the top-level object have, in order. Stricter than json_reader.h on
// purpose: control characters, bad escapes and invalid UTF-8 in strings are rejected, so
// a writer that lets them through is caught. Numbers must be integers: the reports write
// no others.
#pragma once

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace ft::test {

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
  // The members of an object or the items of an array, up to `close`; `item` reads one.
  template <typename Item>
  bool sequence(char close, Item item) {
    ++i_;
    ws();
    if (peek(close)) return ++i_, true;
    while (true) {
      ws();
      if (!item()) return false;
      ws();
      if (peek(',')) {
        ++i_;
        continue;
      }
      if (peek(close)) return ++i_, true;
      return false;
    }
  }
  bool object(int depth) {
    return sequence('}', [&] {
      std::string key;
      if (!string(&key)) return false;
      if (depth == 0) top_keys.push_back(key);
      ws();
      if (!peek(':')) return false;
      ++i_;
      ws();
      return value(depth + 1);
    });
  }
  bool array(int depth) {
    return sequence(']', [&] { return value(depth + 1); });
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

inline bool is_valid_json(std::string_view s) { return JsonChecker(s).valid(); }

}  // namespace ft::test
