// What the unit tests ask binutils (and the shell) about a built file, to judge the
// post-processor against something that is not its own code: addr2line for what is
// at an address, nm for symbols, readelf for the build-id. The text helpers those
// answers need are in test_text.h.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "test_text.h"

namespace ft::test {

inline bool is_hex(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// "0x1f" or "1f"; nullopt when not lowercase hex of at most 64 bits.
inline std::optional<uint64_t> parse_hex(std::string s) {
  if (s.rfind("0x", 0) == 0) s = s.substr(2);
  if (!is_hex(s) || s.size() > 16) return std::nullopt;
  return std::stoull(s, nullptr, 16);
}

inline std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Standard output of a shell command (stderr discarded), in the C locale.
inline std::string run_command(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(("LC_ALL=C " + cmd + " 2>/dev/null").c_str(), "r");
  if (p == nullptr) return out;
  char buf[65536];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

// One frame as addr2line prints it ("??" and line 0 or "?" are unknown).
struct OracleFrame {
  std::optional<std::string> function;
  std::optional<std::string> file;  // lexically normal
  std::optional<int64_t> line;
};

// `addr2line -f -i -C -a -e FILE ADDR...`: per address, a line with the address, then
// pairs of lines (function, FILE:LINE), innermost first. Empty when the output cannot
// be read.
inline std::map<uint64_t, std::vector<OracleFrame>> addr2line(
    const std::string& file, const std::vector<uint64_t>& addresses) {
  std::string cmd = "addr2line -f -i -C -a -e " + shell_quote(file);
  for (uint64_t a : addresses) cmd += " " + hex(a);
  std::map<uint64_t, std::vector<OracleFrame>> out;
  std::vector<std::string> lines = split_lines(run_command(cmd));
  std::vector<OracleFrame>* current = nullptr;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.rfind("0x", 0) == 0 && is_hex(l.substr(2))) {
      current = &out[std::stoull(l.substr(2), nullptr, 16)];
      continue;
    }
    if (current == nullptr || i + 1 >= lines.size()) return {};
    OracleFrame f;
    if (l != "??") f.function = l;
    std::string where = lines[++i];
    if (size_t d = where.find(" (discriminator"); d != std::string::npos) where.resize(d);
    size_t colon = where.rfind(':');
    if (colon == std::string::npos) return {};
    std::string name = where.substr(0, colon), line = where.substr(colon + 1);
    if (name != "??") f.file = std::filesystem::path(name).lexically_normal().string();
    if (!line.empty() && line.find_first_not_of("0123456789") == std::string::npos &&
        line != "0") {
      f.line = std::stoll(line);
    }
    current->push_back(f);
  }
  return out;
}

struct NmSymbol {
  uint64_t value = 0;
  uint64_t size = 0;
};

// Defined symbols from `nm -S`: "VALUE SIZE TYPE NAME", SIZE missing for some.
inline std::map<std::string, NmSymbol> nm_symbols(const std::string& path) {
  std::map<std::string, NmSymbol> symbols;
  for (const std::string& line :
       split_lines(run_command("nm -S --defined-only " + shell_quote(path)))) {
    std::vector<std::string> w = words(line);
    if (w.size() < 3 || w.size() > 4 || !is_hex(w[0])) continue;
    NmSymbol s;
    s.value = *parse_hex(w[0]);
    if (w.size() == 4) s.size = parse_hex(w[1]).value_or(0);
    symbols[w.back()] = s;
  }
  return symbols;
}

// From `readelf -n`: "    Build ID: HEX".
inline std::string readelf_build_id(const std::string& path) {
  for (const std::string& line : split_lines(run_command("readelf -n " + shell_quote(path)))) {
    std::vector<std::string> w = words(line);
    if (w.size() == 3 && w[0] == "Build" && w[1] == "ID:" && is_hex(w[2])) return w[2];
  }
  return {};
}

}  // namespace ft::test
