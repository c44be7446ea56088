// Register assignment of DWARF signatures: the conventions themselves (x86-64 System
// V, psABI §3.2.3; AArch64 AAPCS64 §6.8.2) and core's mapping from DWARF kinds to the
// plugin API's (core/register_signature.h).
#include <gtest/gtest.h>

#include "arch/calling_convention.h"
#include "core/register_signature.h"

namespace {

using ft::ParamInfo;
using ft::Signature;
using Kind = ParamInfo::Kind;

ParamInfo param(Kind k, int size, bool is_signed = false) {
  ParamInfo p;
  p.kind = k;
  p.size = size;
  p.is_signed = is_signed;
  return p;
}

TEST(CallingConvention, IntegerAndFloatClassesCountSeparately) {
  // f(int a, double b, const char *c, float d, unsigned short e):
  // a in rdi, b in xmm0, c in rsi, d in xmm1, e in rdx.
  Signature s;
  s.params = {param(Kind::Integer, 4, true), param(Kind::Float, 8), param(Kind::String, 8),
              param(Kind::Float, 4), param(Kind::Integer, 2)};
  s.returns_void = false;
  s.ret = param(Kind::Integer, 8, true);
  auto r = ft::register_signature(ft::arch::traits(ft::arch::Arch::X86_64), s);
  ASSERT_EQ(r.args.size(), 5u);
  EXPECT_EQ(r.args[0].kind, FT_PARAM_SIGNED);
  EXPECT_EQ(r.args[0].size, 4);
  EXPECT_EQ(r.args[0].reg, 0);
  EXPECT_EQ(r.args[1].kind, FT_PARAM_FLOAT);
  EXPECT_EQ(r.args[1].reg, FT_REG_FP0 + 0);
  EXPECT_EQ(r.args[2].kind, FT_PARAM_STRING);
  EXPECT_EQ(r.args[2].reg, 1);
  EXPECT_EQ(r.args[3].reg, FT_REG_FP0 + 1);
  EXPECT_EQ(r.args[3].size, 4);
  EXPECT_EQ(r.args[4].kind, FT_PARAM_INTEGER);
  EXPECT_EQ(r.args[4].size, 2);
  EXPECT_EQ(r.args[4].reg, 2);
  EXPECT_EQ(r.ret_kind, FT_PARAM_SIGNED);
  EXPECT_EQ(r.ret_size, 8u);
}

TEST(CallingConvention, NinthDoubleIsOnTheStack) {
  Signature s;
  for (int i = 0; i < 9; ++i) s.params.push_back(param(Kind::Float, 8));
  auto r = ft::register_signature(ft::arch::traits(ft::arch::Arch::X86_64), s);
  ASSERT_EQ(r.args.size(), 8u);
  EXPECT_EQ(r.args[7].reg, FT_REG_FP0 + 7);
}

TEST(CallingConvention, LargeStructReturnPassesAHiddenPointerFirst) {
  // struct big { long a, b, c; } f(int x) -> rdi = &result, rsi = x; rax = &result
  Signature s;
  s.returns_void = false;
  s.ret = param(Kind::Other, 24);
  s.params = {param(Kind::Integer, 4, true)};
  auto r = ft::register_signature(ft::arch::traits(ft::arch::Arch::X86_64), s);
  ASSERT_EQ(r.args.size(), 2u);
  EXPECT_EQ(r.args[0].kind, FT_PARAM_POINTER);
  EXPECT_EQ(r.args[0].reg, 0);
  EXPECT_EQ(r.args[1].kind, FT_PARAM_SIGNED);
  EXPECT_EQ(r.args[1].reg, 1);
  EXPECT_EQ(r.ret_kind, FT_PARAM_POINTER);
}

TEST(CallingConvention, SmallStructsMakeTheRestUnknown) {
  // f(long a, struct pair p, long b): p may take one or two registers, so b's is unknown.
  Signature s;
  s.params = {param(Kind::Integer, 8, true), param(Kind::Other, 16), param(Kind::Integer, 8, true)};
  auto r = ft::register_signature(ft::arch::traits(ft::arch::Arch::X86_64), s);
  ASSERT_EQ(r.args.size(), 1u);
  EXPECT_EQ(r.ret_kind, FT_PARAM_VOID);
}

TEST(CallingConvention, AtMostSixRegisters) {
  Signature s;
  for (int i = 0; i < 8; ++i) s.params.push_back(param(Kind::Pointer, 8));
  s.returns_void = false;
  s.ret = param(Kind::Other, 16);  // returned in rax:rdx, shown as unknown
  auto r = ft::register_signature(ft::arch::traits(ft::arch::Arch::X86_64), s);
  EXPECT_EQ(r.args.size(), 6u);
  EXPECT_EQ(r.ret_kind, -1);
}

// ---------------------------------------------------------------------------------
// The conventions on arch's own types

using ft::arch::ArgRegisters;
using ft::arch::FunctionType;
using ft::arch::ValueKind;
using ft::arch::ValueType;
constexpr int kFp0 = ft::arch::kFpArgRegister0;

TEST(CallingConventionArch, X86_64AndAArch64AgreeOnSimpleSignatures) {
  // long f(int, double, char *, float): integer and float registers count separately.
  FunctionType fn;
  fn.params = {{ValueKind::Signed, 4}, {ValueKind::Float, 8}, {ValueKind::String, 8}, {ValueKind::Float, 4}};
  fn.ret = {ValueKind::Signed, 8};
  for (auto conv : {ft::arch::arg_registers_x86_64, ft::arch::arg_registers_aarch64}) {
    ArgRegisters r = conv(fn);
    ASSERT_EQ(r.args.size(), 4u);
    EXPECT_EQ(r.args[0].reg, 0);
    EXPECT_EQ(r.args[1].reg, kFp0);
    EXPECT_EQ(r.args[2].reg, 1);
    EXPECT_EQ(r.args[3].reg, kFp0 + 1);
    EXPECT_EQ(r.args[3].size, 4);
    ASSERT_TRUE(r.ret.has_value());
    EXPECT_EQ(*r.ret, ValueKind::Signed);
  }
}

TEST(CallingConventionArch, LargeStructReturnDiffers) {
  // struct big { long a, b, c; } f(int x): x86-64 passes &result in rdi and x in rsi;
  // AArch64 passes &result in x8, so x stays in x0 and the result is unknown.
  FunctionType fn;
  fn.params = {{ValueKind::Signed, 4}};
  fn.ret = {ValueKind::Other, 24};
  ArgRegisters x = ft::arch::arg_registers_x86_64(fn);
  ASSERT_EQ(x.args.size(), 2u);
  EXPECT_EQ(x.args[0].kind, ValueKind::Pointer);
  EXPECT_EQ(x.args[1].reg, 1);
  EXPECT_EQ(x.ret, ValueKind::Pointer);
  ArgRegisters a = ft::arch::arg_registers_aarch64(fn);
  ASSERT_EQ(a.args.size(), 1u);
  EXPECT_EQ(a.args[0].reg, 0);
  EXPECT_FALSE(a.ret.has_value());
}

TEST(CallingConventionArch, VoidAndUnknownSizes) {
  FunctionType fn;
  fn.params = {{ValueKind::Unsigned, -1}, {ValueKind::Pointer, 8}};
  ArgRegisters r = ft::arch::arg_registers_x86_64(fn);
  EXPECT_EQ(r.ret, ValueKind::Void);
  ASSERT_EQ(r.args.size(), 2u);
  EXPECT_EQ(r.args[0].size, 8);  // unknown size: the whole register
}

TEST(CallingConventionArch, TraitsCarryTheConvention) {
  ft::Signature s;
  s.params = {param(Kind::Pointer, 8)};
  auto x = ft::register_signature(ft::arch::traits(ft::arch::Arch::X86_64), s);
  auto a = ft::register_signature(ft::arch::traits(ft::arch::Arch::AArch64), s);
  ASSERT_EQ(x.args.size(), 1u);
  ASSERT_EQ(a.args.size(), 1u);
  EXPECT_EQ(x.args[0].kind, FT_PARAM_POINTER);
  EXPECT_EQ(a.args[0].kind, FT_PARAM_POINTER);
  EXPECT_EQ(x.ret_kind, FT_PARAM_VOID);
}

}  // namespace

TEST(CallingConventionArch, IntegerStructByValueTakesOneOrTwoRegisters) {
  // long f(struct { int id; const char *name; } pair, int n, struct { int a; } one,
  //        struct { long a, b; } two, struct { long a, b; } three, int m): pair takes
  // registers 0 and 1, n 2, one 3, two 4 and 5; three finds none left and ends the list.
  FunctionType fn;
  fn.params = {{ValueKind::IntAggregate, 16}, {ValueKind::Signed, 4}, {ValueKind::IntAggregate, 4},
               {ValueKind::IntAggregate, 16}, {ValueKind::IntAggregate, 16}, {ValueKind::Signed, 4}};
  for (auto conv : {ft::arch::arg_registers_x86_64, ft::arch::arg_registers_aarch64}) {
    ArgRegisters r = conv(fn);
    ASSERT_EQ(r.args.size(), 4u);
    EXPECT_EQ(r.args[0].reg, 0);
    EXPECT_EQ(r.args[0].size, 16);
    EXPECT_EQ(r.args[1].reg, 2);
    EXPECT_EQ(r.args[2].reg, 3);
    EXPECT_EQ(r.args[2].size, 4);
    EXPECT_EQ(r.args[3].reg, 4);
  }
  FunctionType other;
  other.params = {{ValueKind::Other, 16}, {ValueKind::Signed, 4}};
  EXPECT_TRUE(ft::arch::arg_registers_x86_64(other).args.empty());
}
