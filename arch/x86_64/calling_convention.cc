#include "arch/calling_convention.h"

namespace ft::arch {
namespace {

constexpr int kIntegerArgRegisters = 6;
constexpr int kFloatArgRegisters = 8;

RegisterArg to_register(const ParamInfo& p) {
  RegisterArg a;
  a.size = static_cast<uint8_t>(p.size > 0 && p.size <= 8 ? p.size : 8);
  switch (p.kind) {
    case ParamInfo::Kind::Integer: a.kind = p.is_signed ? FT_PARAM_SIGNED : FT_PARAM_INTEGER; break;
    case ParamInfo::Kind::Pointer: a.kind = FT_PARAM_POINTER; break;
    case ParamInfo::Kind::String: a.kind = FT_PARAM_STRING; break;
    case ParamInfo::Kind::Float: a.kind = FT_PARAM_FLOAT; break;
    case ParamInfo::Kind::Other: a.kind = FT_PARAM_OTHER; break;
  }
  return a;
}

}  // namespace

RegisterSignature register_signature_x86_64(const Signature& sig) {
  RegisterSignature out;
  if (sig.returns_void) {
    out.ret_kind = FT_PARAM_VOID;
  } else {
    RegisterArg r = to_register(sig.ret);
    out.ret_kind = r.kind;
    out.ret_size = r.size;
    // Larger than two eightbytes: returned in memory through a hidden first argument
    // (the pointer also comes back in rax).
    if (sig.ret.kind == ParamInfo::Kind::Other && sig.ret.size > 16) {
      out.args.push_back({FT_PARAM_POINTER, 8, 0});
      out.ret_kind = FT_PARAM_POINTER;
      out.ret_size = 8;
    } else if (sig.ret.kind == ParamInfo::Kind::Other) {
      out.ret_kind = -1;
    }
  }
  int next_int = out.args.empty() ? 0 : 1, next_fp = 0;
  for (const ParamInfo& p : sig.params) {
    if (p.kind == ParamInfo::Kind::Other) break;
    RegisterArg a = to_register(p);
    if (p.kind == ParamInfo::Kind::Float) {
      if (next_fp == kFloatArgRegisters) break;
      a.reg = static_cast<int8_t>(FT_REG_FP0 + next_fp++);
    } else {
      if (next_int == kIntegerArgRegisters) break;
      a.reg = static_cast<int8_t>(next_int++);
    }
    out.args.push_back(a);
  }
  return out;
}

}  // namespace ft::arch
