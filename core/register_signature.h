// RegisterSignature: what calltrace is told about a function's parameters — each
// one's kind in the plugin API's terms (ft_param_kind), its size and its register —
// from the DWARF signature (core/dwarf_params.h) and the architecture's calling
// convention (arch/calling_convention.h). The mapping between the two vocabularies
// lives here so arch/ knows neither DWARF nor the plugin API.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "core/dwarf_params.h"
#include "functracer/plugin.h"

namespace ft {

struct RegisterArg {
  ft_param_kind kind = FT_PARAM_INTEGER;
  uint8_t size = 8;
  int8_t reg = 0;  // integer argument register 0..5, or FT_REG_FP0 + n for floating-point register n
  // Static strings (ft_function.param_labels, param_formats): "this" for a C++
  // member's object pointer, the symbolic set an integer holds; "" for none.
  const char* label = "";
  const char* format = "";
  std::string members;  // ft_function.param_members: the structure it is or points to
};

struct RegisterSignature {
  std::vector<RegisterArg> args;  // parameters in declaration order, while their register is known
  int ret_kind = -1;              // ft_param_kind, -1 when unknown
  unsigned ret_size = 8;
  std::string ret_members;        // ft_function.ret_members: a structure returned in registers
};

arch::FunctionType function_type(const Signature& sig);
RegisterSignature register_signature(const arch::Traits& arch, const Signature& sig);

}  // namespace ft
