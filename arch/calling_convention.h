// Which argument registers hold which parameter of a function, and how its return
// value comes back: the platform C calling convention, so calltrace can show each
// register as what it is. The types are the architecture's own view of a parameter
// (its kind and size); core maps the DWARF description to them and the result to the
// plugin API's kinds (core/register_signature.h).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace ft::arch {

enum class ValueKind : uint8_t {
  Unsigned,  // integers, unsigned or of unknown sign
  Signed,
  Pointer,
  String,    // a pointer to char
  Float,     // float, double
  Other,     // aggregates and anything else DWARF describes
  IntAggregate,  // a structure of at most 16 bytes without floating-point members:
                 // one or two integer registers (both conventions); Go's slices: three
  Void,      // return type only
};

struct ValueType {
  ValueKind kind = ValueKind::Unsigned;
  int size = -1;  // bytes; -1: unknown
};

struct FunctionType {
  std::vector<ValueType> params;        // in declaration order
  ValueType ret{ValueKind::Void, 0};
};

// Register numbering of ArgLocation::reg: integer argument register n (0-based, in the
// convention's order) is n; floating-point argument register n is kFpArgRegister0 + n.
inline constexpr int kFpArgRegister0 = 8;
inline constexpr int kIntArgRegisters = 6;  // integer argument registers functracer reads

struct ArgLocation {
  ValueKind kind = ValueKind::Unsigned;
  uint8_t size = 8;  // bytes of the register that hold the value (1..8; an IntAggregate's
                     // size, up to 16 (24 in Go's ABI), from register `reg` on)
  int8_t reg = 0;
  int16_t param = -1;  // the parameter's index in FunctionType::params; -1: a hidden one
};

struct ArgRegisters {
  std::vector<ArgLocation> args;  // parameters in declaration order, while their register is known
  std::optional<ValueKind> ret;   // nullopt: unknown (an aggregate returned in registers)
  unsigned ret_size = 8;
};

// x86-64 System V: integers and pointers take rdi, rsi, rdx, rcx, r8, r9 in order;
// float/double take xmm0..xmm7 in order; a struct returned in memory (larger than two
// eightbytes) passes its address in rdi first. Structs passed by value may take one or
// two integer registers or none (their classification needs their layout), so the
// list stops at the first one whose class is not known to be INTEGER (IntAggregate
// takes one or two registers), and at the first parameter passed on the stack.
ArgRegisters arg_registers_x86_64(const FunctionType& fn);

// AArch64 AAPCS64: integers and pointers take x0..x7 (functracer reads x0..x5), float
// and double v0..v7; a struct returned in memory passes its address in x8, which is
// not an argument register, so the arguments start at x0 all the same. Structs passed
// by value stop the list as on x86-64 but for IntAggregate, in x registers as well.
ArgRegisters arg_registers_aarch64(const FunctionType& fn);

// Go's internal ABI (ABIInternal, Go 1.17 and later on x86-64, 1.18 on AArch64), the
// same algorithm on every architecture: integers, booleans and pointers take the next
// integer register of Traits::go_args (x86-64: rax rbx rcx rdi rsi r8 r9 r10 r11;
// functracer reads the first six), floats the next floating-point one, a two-word
// string or interface (IntAggregate) two integer registers, a slice three; results
// come back in the
// same registers from the first, never in memory. The list stops at the first
// parameter that is passed on the stack or whose registers are not known (slices,
// arrays, structs).
ArgRegisters arg_registers_go(const FunctionType& fn);

// What both conventions share, for arch/<arch>/calling_convention.cc: parameters in
// order, integer-class ones in the integer registers, float/double in fp_registers
// floating-point registers; an aggregate result larger than 16 bytes is returned in
// memory at an address the caller passes either in the first integer argument
// register (and gets back in the return register) or in a register of its own.
enum class MemoryReturn : uint8_t { FirstArgument, OwnRegister };
// max_aggregate: the largest IntAggregate passed in registers (bytes).
ArgRegisters assign_in_order(const FunctionType& fn, MemoryReturn memory_return, int fp_registers,
                             int max_aggregate = 16);

}  // namespace ft::arch
