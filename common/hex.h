// Lowercase hexadecimal, the way functracer writes it everywhere: build-ids (as
// `readelf -n` and debuginfod spell them), addresses in messages and traces ("0x" and
// no leading zeros, like fmt's "{:#x}").
//
// HexNumber formats into a buffer of its own, with no allocation and no library call,
// so the engine's fatal-signal handler can use it (signal-safety(7): the heap may be
// what is broken).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace ft {

inline constexpr char kHexDigits[] = "0123456789abcdef";

// Two digits per byte, in order: {0x0a, 0xff} -> "0aff".
inline std::string bytes_to_hex(std::span<const unsigned char> bytes) {
  std::string s;
  s.reserve(2 * bytes.size());
  for (unsigned char b : bytes) {
    s += kHexDigits[b >> 4];
    s += kHexDigits[b & 15];
  }
  return s;
}

// 0 -> "0x0", 0x7f00 -> "0x7f00".
class HexNumber {
 public:
  explicit HexNumber(uint64_t v) {
    int digits = 1;
    while (digits < 16 && (v >> (4 * digits)) != 0) ++digits;
    text_[0] = '0';
    text_[1] = 'x';
    for (int i = 0; i < digits; ++i) text_[2 + i] = kHexDigits[(v >> (4 * (digits - 1 - i))) & 15];
    size_ = static_cast<size_t>(2 + digits);
    text_[size_] = '\0';
  }
  const char* c_str() const { return text_; }
  std::string_view view() const { return {text_, size_}; }

 private:
  char text_[19];  // "0x", 16 digits, '\0'
  size_t size_;
};

}  // namespace ft
