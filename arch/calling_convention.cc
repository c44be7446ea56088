#include "arch/calling_convention.h"

namespace ft::arch {
namespace {

// The register-sized view of a value (sizes outside 1..8 read as 8).
ArgLocation location_of(const ValueType& v) {
  ArgLocation a;
  a.kind = v.kind;
  a.size = static_cast<uint8_t>(v.size > 0 && v.size <= 8 ? v.size : 8);
  return a;
}

}  // namespace

ArgRegisters assign_in_order(const FunctionType& fn, MemoryReturn memory_return, int fp_registers,
                             int max_aggregate) {
  ArgRegisters out;
  out.ret = fn.ret.kind;
  out.ret_size = location_of(fn.ret).size;
  if (fn.ret.kind == ValueKind::Other) {
    // Aggregates: in registers (unknown which), or in memory.
    out.ret.reset();
    if (fn.ret.size > 16 && memory_return == MemoryReturn::FirstArgument) {
      out.args.push_back({ValueKind::Pointer, 8, 0});
      out.ret = ValueKind::Pointer;
      out.ret_size = 8;
    }
  }
  int next_int = static_cast<int>(out.args.size()), next_fp = 0;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const ValueType& p = fn.params[i];
    if (p.kind == ValueKind::Other || p.kind == ValueKind::Void) break;
    ArgLocation a = location_of(p);
    a.param = static_cast<int16_t>(i);
    if (p.kind == ValueKind::IntAggregate) {
      // Its eightbytes in consecutive integer registers, or all of it on the stack.
      if (p.size <= 0 || p.size > max_aggregate) break;
      int regs = (p.size + 7) / 8;
      if (next_int + regs > kIntArgRegisters) break;
      a.size = static_cast<uint8_t>(p.size);
      a.reg = static_cast<int8_t>(next_int);
      next_int += regs;
    } else if (p.kind == ValueKind::Float) {
      if (next_fp == fp_registers) break;
      a.reg = static_cast<int8_t>(kFpArgRegister0 + next_fp++);
    } else {
      if (next_int == kIntArgRegisters) break;
      a.reg = static_cast<int8_t>(next_int++);
    }
    out.args.push_back(a);
  }
  return out;
}

ArgRegisters arg_registers_go(const FunctionType& fn) {
  return assign_in_order(fn, MemoryReturn::OwnRegister, /*fp_registers=*/8, /*max_aggregate=*/24);
}

}  // namespace ft::arch
