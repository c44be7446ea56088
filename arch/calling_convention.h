// Which integer argument registers hold which DWARF parameter, and how the return
// value comes back: the platform C calling convention, so calltrace can show each
// register as what it is.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dwarf_params.h"
#include "functracer/plugin.h"

namespace ft::arch {

struct RegisterArg {
  ft_param_kind kind = FT_PARAM_INTEGER;
  uint8_t size = 8;
  int8_t reg = 0;  // integer argument register 0..5, or FT_REG_FP0 + n for floating-point register n
};

struct RegisterSignature {
  std::vector<RegisterArg> args;  // parameters in declaration order, while their register is known
  int ret_kind = -1;              // ft_param_kind, -1 when unknown
  unsigned ret_size = 8;
};

// x86-64 System V: integers and pointers take rdi, rsi, rdx, rcx, r8, r9 in order;
// float/double take xmm0..xmm7 in order; a struct returned in memory passes its
// address in rdi first. Structs passed by value may take one or two integer
// registers or none (their classification needs their layout), so the list stops at
// the first one, and at the first parameter passed on the stack.
RegisterSignature register_signature_x86_64(const Signature& sig);

}  // namespace ft::arch
