// ValueTypes: the "types" field of call records (doc/trace-format.md), which says what
// each argument register and the return register hold, so reports can show values as
// the program sees them: "i4" a signed 4-byte integer, "u8" an unsigned one, "p" a
// pointer, "s" a string pointer, "f4"/"f8" a float/double (in a floating-point
// register), "o" something else ("o16": a structure of 9..16 bytes in two integer
// registers, "o24": a Go slice's 17..24 bytes in three), "v" no value (void return), "?" unknown; an integer
// code may name the symbolic constants it holds ("i4=O_flags",
// functracer/symbolic_values.h). Parameters
// are listed in declaration order; each takes the next register of its class (the
// record's "args" for integers and pointers, "fargs" for floating point).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ft::post {

struct ValueType {
  char kind = '?';  // i u p s f o v ?
  unsigned size = 8;
  std::string format;  // "i4=O_flags": the symbolic constants an integer holds
};

// 6 integer and 8 floating-point argument registers.
inline constexpr size_t kMaxParams = 14;

struct ValueTypes {
  std::vector<ValueType> args;
  ValueType ret;
};

// nullopt for a malformed field.
std::optional<ValueTypes> parse_value_types(std::string_view text);
// The value as text: decimal for integers (sign-extended or truncated to the size),
// hex otherwise; empty for "v".
// The integer registers a parameter of this type takes (an "o16" structure two).
unsigned int_registers(const ValueType& type);
// The type's code as in the "types" field ("i4=O_flags", "o16", "s").
std::string type_code(const ValueType& type);
std::string format_value(const ValueType& type, uint64_t value);

}  // namespace ft::post
