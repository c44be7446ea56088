#include "postproc/value_types.h"

#include <fmt/format.h>

#include <cstring>

#include "functracer/symbolic_values.h"

namespace ft::post {
namespace {

std::optional<ValueType> parse_one(std::string_view code) {
  ValueType t;
  if (size_t eq = code.find('='); eq != std::string_view::npos) {
    auto base = parse_one(code.substr(0, eq));
    if (!base || (base->kind != 'i' && base->kind != 'u') || eq + 1 == code.size()) return std::nullopt;
    base->format = std::string(code.substr(eq + 1));
    return base;
  }
  if (code.size() == 1 && std::string_view("psov?").find(code[0]) != std::string_view::npos) {
    t.kind = code[0];
    return t;
  }
  if (code.size() == 3 && code[0] == 'o' && code[1] >= '1' && code[1] <= '2' && code[2] >= '0' && code[2] <= '9') {
    unsigned size = static_cast<unsigned>(10 * (code[1] - '0') + code[2] - '0');
    if (size > 24) return std::nullopt;
    t.kind = 'o';
    t.size = size;
    return t;
  }
  if (code.size() == 2 && code[0] == 'o' && code[1] == '9') {
    t.kind = 'o';
    t.size = 9;
    return t;
  }
  if (code == "f4" || code == "f8") {
    t.kind = 'f';
    t.size = static_cast<unsigned>(code[1] - '0');
    return t;
  }
  if (code.size() == 2 && (code[0] == 'i' || code[0] == 'u') &&
      (code[1] == '1' || code[1] == '2' || code[1] == '4' || code[1] == '8')) {
    t.kind = code[0];
    t.size = static_cast<unsigned>(code[1] - '0');
    return t;
  }
  return std::nullopt;
}

}  // namespace

std::optional<ValueTypes> parse_value_types(std::string_view text) {
  size_t gt = text.find('>');
  if (gt == std::string_view::npos) return std::nullopt;
  ValueTypes out;
  auto ret = parse_one(text.substr(gt + 1));
  if (!ret) return std::nullopt;
  out.ret = *ret;
  std::string_view args = text.substr(0, gt);
  while (!args.empty()) {
    size_t comma = args.find(',');
    auto t = parse_one(args.substr(0, comma));
    if (!t || out.args.size() == kMaxParams) return std::nullopt;
    out.args.push_back(*t);
    if (comma == std::string_view::npos) break;
    args.remove_prefix(comma + 1);
    if (args.empty()) return std::nullopt;  // trailing comma
  }
  return out;
}

std::string type_code(const ValueType& type) {
  std::string code(1, type.kind);
  if (type.kind == 'i' || type.kind == 'u' || type.kind == 'f' || (type.kind == 'o' && type.size > 8))
    code += std::to_string(type.size);
  if (!type.format.empty()) code += "=" + type.format;
  return code;
}

unsigned int_registers(const ValueType& type) { return type.kind == 'o' && type.size > 8 ? (type.size + 7) / 8 : 1; }

std::string format_value(const ValueType& type, uint64_t v) {
  if (type.kind == 'v') return {};
  if (type.kind == 'f') {
    if (type.size == 4) {
      uint32_t bits = static_cast<uint32_t>(v);
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return fmt::format("{}", f);
    }
    double d;
    std::memcpy(&d, &v, sizeof d);
    return fmt::format("{}", d);
  }
  if (type.kind == 'i' || type.kind == 'u') {
    unsigned bits = 8 * type.size;
    if (bits < 64) v &= (uint64_t{1} << bits) - 1;
    if (type.kind == 'i') {
      if (bits < 64 && ((v >> (bits - 1)) & 1)) v |= ~uint64_t{0} << bits;
      if (!type.format.empty()) return symbolic::format(type.format, static_cast<int64_t>(v));
      return std::to_string(static_cast<int64_t>(v));
    }
    if (!type.format.empty()) return symbolic::format(type.format, static_cast<int64_t>(v));
    return std::to_string(v);
  }
  return fmt::format("{:#x}", v);
}

}  // namespace ft::post
