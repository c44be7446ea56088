#include <cstring>

#include "arch/call_sites.h"

namespace ft::arch {
namespace {

uint32_t word_at(std::span<const uint8_t> code, size_t off) {
  uint32_t w = 0;
  std::memcpy(&w, code.data() + off, 4);
  return w;
}

bool is_bl(uint32_t w) { return (w & 0xfc000000u) == 0x94000000u; }
bool is_blr(uint32_t w) { return (w & 0xfffffc1fu) == 0xd63f0000u; }
// BLRAA/BLRAB/BLRAAZ/BLRABZ (pointer authentication).
bool is_blra(uint32_t w) { return (w & 0xfefff800u) == 0xd63f0800u; }
bool is_ret(uint32_t w) { return (w & 0xfffffc1fu) == 0xd65f0000u || w == 0xd65f0bffu || w == 0xd65f0fffu; }
bool is_b(uint32_t w) { return (w & 0xfc000000u) == 0x14000000u; }

}  // namespace

bool is_return_address_aarch64(std::span<const uint8_t> before, std::span<const uint8_t> at, uint64_t) {
  // The signal return trampoline: mov x8, #139 (rt_sigreturn); svc #0.
  if (at.size() >= 8 && word_at(at, 0) == 0xd2801168u && word_at(at, 4) == 0xd4000001u) return true;
  if (before.size() < 4) return false;
  uint32_t w = word_at(before, before.size() - 4);
  return is_bl(w) || is_blr(w) || is_blra(w);
}

FunctionExits function_exits_aarch64(std::span<const uint8_t> body, uint64_t entry) {
  FunctionExits out;
  const uint64_t end = entry + body.size();
  for (size_t off = 0; off + 4 <= body.size(); off += 4) {
    uint32_t w = word_at(body, off);
    uint64_t at = entry + off;
    if (is_ret(w)) {
      out.returns.push_back(at);
    } else if (is_b(w)) {
      // imm26, in words, sign-extended.
      int64_t rel = static_cast<int64_t>(static_cast<int32_t>(w << 6) >> 6) * 4;
      uint64_t target = at + static_cast<uint64_t>(rel);
      if (target < entry || target >= end) out.tail_jumps.push_back(at);
    }
  }
  return out;
}

}  // namespace ft::arch
