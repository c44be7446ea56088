#include "struct_text.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "functracer/sdk.h"

namespace calltrace {
namespace {

constexpr size_t kMaxStructBytes = 1 << 16;  // larger structures are not read
constexpr size_t kStdStringBytes = 16;       // text pointer and length

struct Member {
  std::string_view name;
  std::string_view code;
  size_t offset = 0;
};

// The members of "{name:code@off;...}"; false when the text does not follow the grammar.
bool parse_body(std::string_view body, std::vector<Member>* out, bool* more) {
  if (body.size() < 2 || body.front() != '{' || body.back() != '}') return false;
  body = body.substr(1, body.size() - 2);
  while (!body.empty()) {
    size_t semi = std::min(body.find(';'), body.size());
    std::string_view item = body.substr(0, semi);
    body.remove_prefix(std::min(semi + 1, body.size()));
    if (item == "...") {
      *more = true;
      continue;
    }
    size_t colon = item.find(':'), at = item.find('@');
    if (colon == std::string_view::npos || at == std::string_view::npos || at < colon) return false;
    Member m{item.substr(0, colon), item.substr(colon + 1, at - colon - 1), 0};
    std::string off(item.substr(at + 1));
    char* end = nullptr;
    m.offset = std::strtoull(off.c_str(), &end, 10);
    if (off.empty() || *end != '\0' || m.code.empty()) return false;
    out->push_back(m);
  }
  return true;
}

// Bytes a member's value takes in the structure (0: its value is not shown).
size_t member_bytes(std::string_view code) {
  switch (code[0]) {
    case 'i':
    case 'u':
    case 'f':
    case 'c': return std::strtoull(std::string(code.substr(1)).c_str(), nullptr, 10);
    case 'p':
    case 's': return 8;
    case 'S': return kStdStringBytes;
    default: return 0;
  }
}

uint64_t load(const unsigned char* p, size_t n) {
  uint64_t v = 0;
  std::memcpy(&v, p, std::min<size_t>(n, 8));  // little-endian, as both architectures
  return v;
}

std::string cut_quote(std::string s, size_t string_size) {
  bool cut = s.size() > string_size;
  if (cut) s.resize(string_size);
  return ft::sdk::quote(s) + (cut ? "..." : "");
}

// A std::string whose text pointer and length are at p.
std::optional<std::string> std_string(const ft_host_api* host, ft_ctx* ctx, const unsigned char* p,
                                      size_t string_size) {
  uint64_t data = load(p, 8), len = load(p + 8, 8);
  size_t n = static_cast<size_t>(std::min<uint64_t>(len, string_size + 1));
  std::string text(n, '\0');
  if (n && host->read_memory(ctx, data, text.data(), n) != static_cast<long>(n)) return std::nullopt;
  return cut_quote(std::move(text), string_size);
}

std::string value_of(const ft_host_api* host, ft_ctx* ctx, const Member& m, const unsigned char* p,
                     size_t string_size) {
  std::string_view code = m.code;
  size_t n = member_bytes(code);
  char b[48];
  switch (code[0]) {
    case 'i': {
      uint64_t v = load(p, n);
      if (n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);
      return std::to_string(static_cast<int64_t>(v));
    }
    case 'u': return std::to_string(load(p, n));
    case 'f': {
      if (n == 4) {
        float f;
        std::memcpy(&f, p, 4);
        std::snprintf(b, sizeof b, "%g", static_cast<double>(f));
      } else {
        double d;
        std::memcpy(&d, p, 8);
        std::snprintf(b, sizeof b, "%g", d);
      }
      return b;
    }
    case 'p': return ft::sdk::hex(load(p, 8));
    case 's': {
      uint64_t addr = load(p, 8);
      if (addr == 0) return "NULL";
      if (auto s = ft::sdk::read_string(host, ctx, addr, string_size + 1)) return cut_quote(std::move(*s), string_size);
      return ft::sdk::hex(addr);
    }
    case 'c': {
      const char* c = reinterpret_cast<const char*>(p);
      return cut_quote(std::string(c, strnlen(c, n)), string_size);
    }
    case 'S':
      if (auto s = std_string(host, ctx, p, string_size)) return *s;
      return ft::sdk::hex(load(p, 8));
    default: return "{...}";
  }
}

}  // namespace

std::optional<std::string> struct_text(const ft_host_api* host, ft_ctx* ctx, std::string_view desc,
                                       std::span<const uint64_t> regs, size_t string_size) {
  if (desc.empty() || regs.empty()) return std::nullopt;
  // '*': through a pointer, shown with '&'; '^': the value itself, at an address.
  bool indirect = desc.front() == '*' || desc.front() == '^';
  std::string prefix = desc.front() == '*' ? "&" : "";
  if (indirect) desc.remove_prefix(1);
  uint64_t addr = regs[0];
  if (indirect && addr == 0) return std::nullopt;  // NULL: shown as the pointer it is

  if (desc == "S") {
    unsigned char raw[kStdStringBytes];
    if (!indirect) {
      // A Go string: its text pointer and length in two registers.
      if (regs.size() < 2) return std::nullopt;
      std::memcpy(raw, &regs[0], 8);
      std::memcpy(raw + 8, &regs[1], 8);
    } else if (host->read_memory(ctx, addr, raw, sizeof raw) != static_cast<long>(sizeof raw)) {
      return std::nullopt;
    }
    auto s = std_string(host, ctx, raw, string_size);
    if (!s) return std::nullopt;
    return prefix + *s;
  }

  std::vector<Member> members;
  bool more = false;
  if (!parse_body(desc, &members, &more)) return std::nullopt;
  size_t size = 0;
  for (const Member& m : members) size = std::max(size, m.offset + member_bytes(m.code));
  if (size > kMaxStructBytes) return std::nullopt;
  std::vector<unsigned char> bytes(size);
  if (indirect) {
    if (size && host->read_memory(ctx, addr, bytes.data(), size) != static_cast<long>(size)) return std::nullopt;
  } else {
    if (size > regs.size() * 8) return std::nullopt;
    for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<unsigned char>(regs[i / 8] >> (8 * (i % 8)));
  }
  std::string out = prefix + "{";
  for (size_t i = 0; i < members.size(); ++i) {
    if (i) out += ", ";
    out += std::string(members[i].name) + "=" +
           value_of(host, ctx, members[i], bytes.data() + members[i].offset, string_size);
  }
  if (more) out += members.empty() ? "..." : ", ...";
  return out + "}";
}

}  // namespace calltrace
