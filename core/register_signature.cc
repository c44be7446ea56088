#include "core/register_signature.h"

#include "functracer/symbolic_values.h"

namespace ft {
namespace {

static_assert(arch::kFpArgRegister0 == FT_REG_FP0);

arch::ValueType value_type(const ParamInfo& p) {
  arch::ValueType v;
  v.size = p.size;
  switch (p.kind) {
    case ParamInfo::Kind::Integer: v.kind = p.is_signed ? arch::ValueKind::Signed : arch::ValueKind::Unsigned; break;
    case ParamInfo::Kind::Pointer: v.kind = arch::ValueKind::Pointer; break;
    case ParamInfo::Kind::String: v.kind = arch::ValueKind::String; break;
    case ParamInfo::Kind::Float: v.kind = arch::ValueKind::Float; break;
    case ParamInfo::Kind::Other: v.kind = p.int_aggregate ? arch::ValueKind::IntAggregate : arch::ValueKind::Other; break;
  }
  return v;
}

ft_param_kind param_kind(arch::ValueKind k) {
  switch (k) {
    case arch::ValueKind::Unsigned: return FT_PARAM_INTEGER;
    case arch::ValueKind::Signed: return FT_PARAM_SIGNED;
    case arch::ValueKind::Pointer: return FT_PARAM_POINTER;
    case arch::ValueKind::String: return FT_PARAM_STRING;
    case arch::ValueKind::Float: return FT_PARAM_FLOAT;
    case arch::ValueKind::Other:
    case arch::ValueKind::IntAggregate: return FT_PARAM_OTHER;
    case arch::ValueKind::Void: return FT_PARAM_VOID;
  }
  return FT_PARAM_OTHER;
}

}  // namespace

arch::FunctionType function_type(const Signature& sig) {
  arch::FunctionType fn;
  fn.params.reserve(sig.params.size());
  for (const ParamInfo& p : sig.params) fn.params.push_back(value_type(p));
  if (!sig.returns_void) fn.ret = value_type(sig.ret);
  return fn;
}

RegisterSignature register_signature(const arch::Traits& arch, const Signature& sig) {
  arch::ArgRegisters regs = sig.go_abi ? arch::arg_registers_go(function_type(sig)) : arch.arg_registers(function_type(sig));
  RegisterSignature out;
  out.args.reserve(regs.args.size());
  for (const arch::ArgLocation& a : regs.args) {
    RegisterArg r{param_kind(a.kind), a.size, a.reg, "", "", {}};
    if (a.param >= 0 && static_cast<size_t>(a.param) < sig.params.size()) {
      const ParamInfo& p = sig.params[static_cast<size_t>(a.param)];
      if (p.name == "this") r.label = "this";
      if (const symbolic::Set* set = symbolic::find(p.format)) r.format = set->name;
      r.members = p.members;
    }
    out.args.push_back(r);
  }
  out.ret_kind = regs.ret ? static_cast<int>(param_kind(*regs.ret)) : -1;
  out.ret_size = regs.ret_size;
  // Go returns its structures in registers from the first (a string: text pointer,
  // length); C's register-returned aggregates have no description here.
  if (sig.go_abi && !sig.returns_void && sig.ret.int_aggregate) out.ret_members = sig.ret.members;
  return out;
}

}  // namespace ft
