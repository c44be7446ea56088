// Relocation of displaced instructions. Instruction bytes are hand-assembled and the
// expected slot code and addresses are worked out by hand. The Execute* tests run
// the relocated x86-64 code in-process and compare it with the original.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "arch/relocation.h"

namespace ft::arch {
namespace {

using Bytes = std::vector<uint8_t>;
using Kind = Relocation::Kind;
using EKind = Emulation::Kind;

constexpr uint64_t kInsn = 0x401000;
constexpr uint64_t kNearSlot = 0x500000;       // insn - slot = -0xff000
constexpr uint64_t kFarSlot = 0x7fff00000000;  // beyond +-2 GiB

Relocation x86(const Bytes& code, uint64_t insn = kInsn, uint64_t slot = kNearSlot) {
  return relocate_x86_64(code, insn, slot);
}

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Bytes le64(uint64_t v) {
  Bytes out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  return out;
}

// ff 25 00 00 00 00 + absolute address
Bytes abs_jump(uint64_t target) {
  return cat({{0xff, 0x25, 0x00, 0x00, 0x00, 0x00}, le64(target)});
}

void expect_out_of_line(const Relocation& r, unsigned length, const Bytes& slot) {
  ASSERT_EQ(r.kind, Kind::OutOfLine) << r.reason;
  EXPECT_EQ(r.insn_length, length);
  EXPECT_EQ(r.slot_code, slot);
  EXPECT_LE(r.slot_code.size(), kMaxSlotCode);
}

void expect_emulate(const Relocation& r, unsigned length, EKind kind, uint64_t target,
                    uint64_t return_addr = 0, uint64_t mem = 0) {
  ASSERT_EQ(r.kind, Kind::Emulate) << r.reason;
  EXPECT_EQ(r.insn_length, length);
  EXPECT_EQ(r.emulation.kind, kind);
  EXPECT_EQ(r.emulation.target.value(), target);
  EXPECT_EQ(r.emulation.return_addr.value(), return_addr);
  EXPECT_EQ(r.emulation.mem.value(), mem);
}

void expect_refuse(const Relocation& r, const std::string& reason) {
  ASSERT_EQ(r.kind, Kind::Refuse);
  EXPECT_EQ(r.reason, reason);
  EXPECT_TRUE(r.slot_code.empty());
}

// ---------------------------------------------------------------------------------
// x86-64: RIP-relative operands. With insn 0x401000 and slot 0x500000 the new
// displacement is old + (0x401000 - 0x500000) = old - 0xff000, and the jump back
// from slot+len to insn+len is e9 with rel32 = -0xff005 (fb 0f f0 ff).

TEST(X86Relocator, RipRelativeMov) {
  // mov rax, qword ptr [rip + 0x10]; 0x10 - 0xff000 = -0xfeff0 = 0xfff01010
  const Relocation r = x86({0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00});
  expect_out_of_line(r, 7,
                     {0x48, 0x8b, 0x05, 0x10, 0x10, 0xf0, 0xff, 0xe9, 0xfb, 0x0f, 0xf0, 0xff});
  EXPECT_EQ(r.text, "mov rax, qword ptr [rip + 0x10]");
}

TEST(X86Relocator, RipRelativeLeaSlotBelow) {
  // lea rax, [rip - 0x10] at 0x401000, slot 0x400000: target 0x400ff7, slot+7 = 0x400007
  // -> new disp 0xff0; jump back from 0x40000c to 0x401007 = +0xffb.
  const Relocation r = x86({0x48, 0x8d, 0x05, 0xf0, 0xff, 0xff, 0xff}, kInsn, 0x400000);
  expect_out_of_line(r, 7,
                     {0x48, 0x8d, 0x05, 0xf0, 0x0f, 0x00, 0x00, 0xe9, 0xfb, 0x0f, 0x00, 0x00});
}

TEST(X86Relocator, RipRelativeWithImmediateAfterDisplacement) {
  // cmp dword ptr [rip + 0x10], 5
  expect_out_of_line(x86({0x83, 0x3d, 0x10, 0x00, 0x00, 0x00, 0x05}), 7,
                     {0x83, 0x3d, 0x10, 0x10, 0xf0, 0xff, 0x05, 0xe9, 0xfb, 0x0f, 0xf0, 0xff});
  // cmp word ptr [rip + 0x10], 0x1234 (operand-size prefix, imm16)
  expect_out_of_line(
      x86({0x66, 0x81, 0x3d, 0x10, 0x00, 0x00, 0x00, 0x34, 0x12}), 9,
      {0x66, 0x81, 0x3d, 0x10, 0x10, 0xf0, 0xff, 0x34, 0x12, 0xe9, 0xfb, 0x0f, 0xf0, 0xff});
  // mov qword ptr [rip + 0x10], 0x12345678 (imm32)
  expect_out_of_line(x86({0x48, 0xc7, 0x05, 0x10, 0x00, 0x00, 0x00, 0x78, 0x56, 0x34, 0x12}), 11,
                     {0x48, 0xc7, 0x05, 0x10, 0x10, 0xf0, 0xff, 0x78, 0x56, 0x34, 0x12, 0xe9, 0xfb,
                      0x0f, 0xf0, 0xff});
}

TEST(X86Relocator, RipRelativeSseAndVex) {
  // movsd xmm0, qword ptr [rip + 0x10]
  expect_out_of_line(
      x86({0xf2, 0x0f, 0x10, 0x05, 0x10, 0x00, 0x00, 0x00}), 8,
      {0xf2, 0x0f, 0x10, 0x05, 0x10, 0x10, 0xf0, 0xff, 0xe9, 0xfb, 0x0f, 0xf0, 0xff});
  // vpalignr xmm0, xmm0, xmmword ptr [rip + 0x10], 4 (VEX, imm8 after the displacement)
  expect_out_of_line(
      x86({0xc4, 0xe3, 0x79, 0x0f, 0x05, 0x10, 0x00, 0x00, 0x00, 0x04}), 10,
      {0xc4, 0xe3, 0x79, 0x0f, 0x05, 0x10, 0x10, 0xf0, 0xff, 0x04, 0xe9, 0xfb, 0x0f, 0xf0, 0xff});
}

TEST(X86Relocator, RipRelativeOutOfReach) {
  expect_refuse(x86({0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00}, kInsn, kFarSlot),
                "RIP-relative operand out of reach of the out-of-line area");
  expect_refuse(x86({0x48, 0x8d, 0x05, 0xf0, 0xff, 0xff, 0xff}, kInsn, kFarSlot),
                "RIP-relative operand out of reach of the out-of-line area");
}

TEST(X86Relocator, RipRelativeReachBoundary) {
  // mov rax, [rip + 0x10] at 0x100000000: operand at 0x100000017.
  // Slot 0x80000011: slot+7 = 0x80000018, new disp = 0x7fffffff (just fits);
  // jump back from 0x8000001d to 0x100000007 = 0x7fffffea.
  expect_out_of_line(x86({0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00}, 0x100000000, 0x80000011), 7,
                     {0x48, 0x8b, 0x05, 0xff, 0xff, 0xff, 0x7f, 0xe9, 0xea, 0xff, 0xff, 0x7f});
  // One byte lower: new disp would be 0x80000000.
  expect_refuse(x86({0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00}, 0x100000000, 0x80000010),
                "RIP-relative operand out of reach of the out-of-line area");
}

// ---------------------------------------------------------------------------------
// x86-64: branches and calls

TEST(X86Relocator, JmpRel8) {
  expect_emulate(x86({0xeb, 0x10}), 2, EKind::SetIp, 0x401012);
  expect_emulate(x86({0xeb, 0xfe}), 2, EKind::SetIp, 0x401000);
}

TEST(X86Relocator, JmpRel32) {
  expect_emulate(x86({0xe9, 0x00, 0x01, 0x00, 0x00}), 5, EKind::SetIp, 0x401105);
  expect_emulate(x86({0xe9, 0xfb, 0xff, 0xff, 0xff}, kInsn, kFarSlot), 5, EKind::SetIp, 0x401000);
}

TEST(X86Relocator, CallRel32) {
  const Relocation r = x86({0xe8, 0x10, 0x00, 0x00, 0x00});
  expect_emulate(r, 5, EKind::Call, 0x401015, 0x401005);
  EXPECT_EQ(r.text, "call 0x401015");
  expect_emulate(x86({0xe8, 0xf0, 0xff, 0xff, 0xff}, kInsn, kFarSlot), 5, EKind::Call, 0x400ff5,
                 0x401005);
}

TEST(X86Relocator, CallRipMemory) {
  // call qword ptr [rip + 0x10]: pointer at 0x401006 + 0x10.
  expect_emulate(x86({0xff, 0x15, 0x10, 0x00, 0x00, 0x00}), 6, EKind::CallMem, 0, 0x401006,
                 0x401016);
  expect_emulate(x86({0xff, 0x15, 0x10, 0x00, 0x00, 0x00}, kInsn, kFarSlot), 6, EKind::CallMem, 0,
                 0x401006, 0x401016);
}

TEST(X86Relocator, JmpRipMemoryPltStub) {
  // jmp qword ptr [rip + 0x2f12] at 0x401030: GOT slot at 0x401036 + 0x2f12 = 0x403f48.
  // Slot 0x500000: new disp = 0x403f48 - 0x500006 = -0xfc0be = 0xfff03f42;
  // jump back from 0x50000b to 0x401036 = -0xfefd5 = 0xfff0102b.
  const Bytes stub = {0xff, 0x25, 0x12, 0x2f, 0x00, 0x00};
  expect_out_of_line(x86(stub, 0x401030), 6,
                     {0xff, 0x25, 0x42, 0x3f, 0xf0, 0xff, 0xe9, 0x2b, 0x10, 0xf0, 0xff});
  // Out of reach: emulated as a jump through the GOT slot.
  expect_emulate(x86(stub, 0x401030, kFarSlot), 6, EKind::JumpMem, 0, 0, 0x403f48);
  // bnd jmp (f2 prefix), as in IBT-enabled PLTs: the prefix is kept.
  expect_out_of_line(x86({0xf2, 0xff, 0x25, 0x12, 0x2f, 0x00, 0x00}, 0x401030), 7,
                     {0xf2, 0xff, 0x25, 0x42, 0x3f, 0xf0, 0xff, 0xe9, 0x2b, 0x10, 0xf0, 0xff});
}

TEST(X86Relocator, JccRel8) {
  // je 0x401012. Slot: je +5 (over the jump back); e9 at 0x500002 -> 0x401002
  // (-0xff005); e9 at 0x500007 -> 0x401012 (-0xfeffa = 0xfff01006).
  const Relocation r = x86({0x74, 0x10});
  expect_out_of_line(r, 2,
                     {0x74, 0x05, 0xe9, 0xfb, 0x0f, 0xf0, 0xff, 0xe9, 0x06, 0x10, 0xf0, 0xff});
  EXPECT_EQ(r.text, "je 0x401012");
}

TEST(X86Relocator, JccRel32BecomesShort) {
  // jne 0x401106 (0f 85 rel32). Slot: jne +5; e9 at 0x500002 -> 0x401006 (-0xff001);
  // e9 at 0x500007 -> 0x401106 (-0xfef06 = 0xfff010fa).
  expect_out_of_line(x86({0x0f, 0x85, 0x00, 0x01, 0x00, 0x00}), 6,
                     {0x75, 0x05, 0xe9, 0xff, 0x0f, 0xf0, 0xff, 0xe9, 0xfa, 0x10, 0xf0, 0xff});
}

TEST(X86Relocator, JccFarSlotUsesAbsoluteJumps) {
  // je +0x10 with the slot far away: je +14 over a 14-byte absolute jump.
  expect_out_of_line(x86({0x74, 0x10}, kInsn, kFarSlot), 2,
                     cat({{0x74, 0x0e}, abs_jump(0x401002), abs_jump(0x401012)}));
}

TEST(X86Relocator, JecxzAndLoopKeepAddressSizePrefix) {
  // jecxz 0x401013 (67 e3 10): slot 67 e3 05; e9 at 0x500003 -> 0x401003 (-0xff005);
  // e9 at 0x500008 -> 0x401013 (-0xfeffa).
  expect_out_of_line(
      x86({0x67, 0xe3, 0x10}), 3,
      {0x67, 0xe3, 0x05, 0xe9, 0xfb, 0x0f, 0xf0, 0xff, 0xe9, 0x06, 0x10, 0xf0, 0xff});
  // loop 0x401012 (e2 10).
  expect_out_of_line(x86({0xe2, 0x10}), 2,
                     {0xe2, 0x05, 0xe9, 0xfb, 0x0f, 0xf0, 0xff, 0xe9, 0x06, 0x10, 0xf0, 0xff});
}

TEST(X86Relocator, IndirectCallRefused) {
  expect_refuse(x86({0xff, 0xd0}), "indirect call");        // call rax
  expect_refuse(x86({0xff, 0x10}), "indirect call");        // call qword ptr [rax]
  expect_refuse(x86({0x41, 0xff, 0xd3}), "indirect call");  // call r11
}

TEST(X86Relocator, IndirectJumpCopied) {
  // jmp rax
  expect_out_of_line(x86({0xff, 0xe0}), 2, {0xff, 0xe0, 0xe9, 0xfb, 0x0f, 0xf0, 0xff});
  // jmp qword ptr [rsp + 8]
  expect_out_of_line(x86({0xff, 0x64, 0x24, 0x08}), 4,
                     {0xff, 0x64, 0x24, 0x08, 0xe9, 0xfb, 0x0f, 0xf0, 0xff});
}

// ---------------------------------------------------------------------------------
// x86-64: no-ops, plain instructions, returns

TEST(X86Relocator, Endbr64AndNops) {
  const Relocation r = x86({0xf3, 0x0f, 0x1e, 0xfa});
  expect_emulate(r, 4, EKind::SetIp, 0x401004);
  EXPECT_EQ(r.text, "endbr64");
  expect_emulate(x86({0xf3, 0x0f, 0x1e, 0xfb}), 4, EKind::SetIp, 0x401004);  // endbr32
  expect_emulate(x86({0x90}), 1, EKind::SetIp, 0x401001);
  expect_emulate(x86({0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00}), 6, EKind::SetIp, 0x401006);
  expect_emulate(x86({0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00}), 10,
                 EKind::SetIp, 0x40100a);
}

TEST(X86Relocator, NotNops) {
  // xchg eax, r8d (41 90) and pause (f3 90) share the nop opcode but are not no-ops here.
  expect_out_of_line(x86({0x41, 0x90}), 2, {0x41, 0x90, 0xe9, 0xfb, 0x0f, 0xf0, 0xff});
  expect_out_of_line(x86({0xf3, 0x90}), 2, {0xf3, 0x90, 0xe9, 0xfb, 0x0f, 0xf0, 0xff});
}

TEST(X86Relocator, PushRbp) {
  const Relocation r = x86({0x55, 0x48, 0x89, 0xe5});
  expect_out_of_line(r, 1, {0x55, 0xe9, 0xfb, 0x0f, 0xf0, 0xff});
  EXPECT_EQ(r.text, "push rbp");
  expect_out_of_line(x86({0x55}, kInsn, kFarSlot), 1, cat({{0x55}, abs_jump(0x401001)}));
}

TEST(X86Relocator, SubRspImm) {
  expect_out_of_line(x86({0x48, 0x83, 0xec, 0x18}), 4,
                     {0x48, 0x83, 0xec, 0x18, 0xe9, 0xfb, 0x0f, 0xf0, 0xff});
  expect_out_of_line(x86({0x48, 0x81, 0xec, 0x00, 0x01, 0x00, 0x00}), 7,
                     {0x48, 0x81, 0xec, 0x00, 0x01, 0x00, 0x00, 0xe9, 0xfb, 0x0f, 0xf0, 0xff});
}

TEST(X86Relocator, MovRbpRsp) {
  expect_out_of_line(x86({0x48, 0x89, 0xe5}), 3, {0x48, 0x89, 0xe5, 0xe9, 0xfb, 0x0f, 0xf0, 0xff});
}

TEST(X86Relocator, Ret) {
  expect_out_of_line(x86({0xc3}), 1, {0xc3, 0xe9, 0xfb, 0x0f, 0xf0, 0xff});
  expect_out_of_line(x86({0xc2, 0x08, 0x00}), 3, {0xc2, 0x08, 0x00, 0xe9, 0xfb, 0x0f, 0xf0, 0xff});
}

// ---------------------------------------------------------------------------------
// x86-64: refusals

TEST(X86Relocator, Int3Refused) {
  const Relocation r = x86({0xcc, 0x48, 0x89, 0xe5});
  ASSERT_EQ(r.kind, Kind::Refuse);
  EXPECT_NE(r.reason.find("int3"), std::string::npos);
  EXPECT_EQ(r.insn_length, 1u);
  EXPECT_EQ(x86({0xcd, 0x03}).kind, Kind::Refuse);  // int 3
}

TEST(X86Relocator, TruncatedRefused) {
  expect_refuse(x86({0x48, 0x8b, 0x05, 0x10}), "instruction truncated");
  expect_refuse(x86({0xe8, 0x10, 0x00}), "instruction truncated");
  expect_refuse(x86({0x0f}), "instruction truncated");
  expect_refuse(x86({}), "no code bytes");
}

TEST(X86Relocator, UndecodableRefused) {
  // into (ce) does not exist in 64-bit mode.
  expect_refuse(x86({0xce, 0x90, 0x90, 0x90}), "undecodable instruction");
}

TEST(X86Relocator, PrivilegedAndUnrelocatableRefused) {
  expect_refuse(x86({0xf4}), "privileged instruction");              // hlt
  expect_refuse(x86({0xfa}), "privileged instruction");              // cli
  expect_refuse(x86({0x0f, 0x01, 0xf8}), "privileged instruction");  // swapgs
  expect_refuse(x86({0xe4, 0x10}), "port I/O instruction");          // in al, 0x10
  // xbegin: its abort target is relative.
  EXPECT_EQ(x86({0xc7, 0xf8, 0x10, 0x00, 0x00, 0x00}).kind, Kind::Refuse);
  // Relative branches with an operand-size prefix.
  EXPECT_EQ(x86({0x66, 0xe8, 0x10, 0x00}).kind, Kind::Refuse);
}

TEST(X86Relocator, LongestSlotsFit) {
  // A 14-byte nop is emulated; a 14-byte mov with an absolute jump back fits a slot.
  const Bytes longest = {0x66, 0x66, 0x66, 0x66, 0x66, 0x2e, 0x0f, 0x1f,
                         0x84, 0x00, 0x00, 0x00, 0x00, 0x00, 0x90};
  EXPECT_EQ(x86(longest, kInsn, kFarSlot).kind, Kind::Emulate);
  const Bytes long_mov = {0x64, 0x67, 0x48, 0xc7, 0x84, 0x80, 0x00,
                          0x01, 0x00, 0x00, 0x78, 0x56, 0x34, 0x12};  // 14 bytes
  const Relocation r = x86(long_mov, kInsn, kFarSlot);
  ASSERT_EQ(r.kind, Kind::OutOfLine) << r.reason;
  EXPECT_EQ(r.insn_length, 14u);
  EXPECT_EQ(r.slot_code, cat({long_mov, abs_jump(0x40100e)}));
  EXPECT_LE(r.slot_code.size(), kMaxSlotCode);
}

// ---------------------------------------------------------------------------------
// x86-64: executing the relocated code in-process

class ExecuteX86 : public ::testing::Test {
 protected:
  static constexpr size_t kPage = 0x1000;

  // The harness at code_: test edi, edi; movabs rax, <entry>; jmp rax.
  // The entry thus sees ZF = (arg0 == 0) and rcx = arg3.
  using Fn = uint64_t (*)(uint64_t, uint64_t, uint64_t, uint64_t);

  void SetUp() override {
    code_ = map_at(nullptr);
    if (code_ == nullptr) GTEST_SKIP() << "cannot map executable memory";
    const auto base = reinterpret_cast<uintptr_t>(code_);
    for (int64_t mib = 1; mib <= 256 && near_ == nullptr; ++mib) {
      near_ = map_at(reinterpret_cast<void*>(base + mib * (int64_t{1} << 20)));
      if (near_ == nullptr)
        near_ = map_at(reinterpret_cast<void*>(base - mib * (int64_t{1} << 20)));
    }
    for (uint64_t gib = 16; gib <= 1024 && far_ == nullptr; gib *= 2) {
      const uint64_t delta = gib << 30;
      if (base + delta < 0x7ff000000000) far_ = map_at(reinterpret_cast<void*>(base + delta));
      if (far_ == nullptr && base > delta + 0x100000)
        far_ = map_at(reinterpret_cast<void*>(base - delta));
    }
    if (near_ == nullptr || far_ == nullptr) GTEST_SKIP() << "cannot place test pages";
  }

  void TearDown() override {
    for (uint8_t* p : {code_, near_, far_}) {
      if (p != nullptr) munmap(p, kPage);
    }
  }

  static uint8_t* map_at(void* hint) {
    const int flags = MAP_PRIVATE | MAP_ANONYMOUS | (hint != nullptr ? MAP_FIXED_NOREPLACE : 0);
    void* p = mmap(hint, kPage, PROT_READ | PROT_WRITE | PROT_EXEC, flags, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    if (hint != nullptr && p != hint) {
      munmap(p, kPage);
      return nullptr;
    }
    return static_cast<uint8_t*>(p);
  }

  static uint64_t addr(const uint8_t* p) { return reinterpret_cast<uintptr_t>(p); }

  void put(uint8_t* at, const Bytes& bytes) { std::memcpy(at, bytes.data(), bytes.size()); }

  uint64_t run(uint64_t entry, uint64_t arg0 = 0, uint64_t arg3 = 0) {
    const Bytes harness = cat({{0x85, 0xff, 0x48, 0xb8}, le64(entry), {0xff, 0xe0}});
    put(code_, harness);
    __builtin___clear_cache(reinterpret_cast<char*>(code_), reinterpret_cast<char*>(code_ + kPage));
    return reinterpret_cast<Fn>(code_)(arg0, 0, 0, arg3);
  }

  // Places `function` at fn(), relocates its first instruction into a slot at
  // slot_base + 0x30 and returns the slot address (0 if not out of line).
  uint64_t relocate_into(uint8_t* slot_base, const Bytes& function) {
    put(fn(), function);
    uint8_t* slot = slot_base + 0x30;
    const Relocation r = relocate_x86_64(function, addr(fn()), addr(slot));
    EXPECT_EQ(r.kind, Kind::OutOfLine) << r.reason;
    if (r.kind != Kind::OutOfLine) return 0;
    EXPECT_LE(r.slot_code.size(), kMaxSlotCode);
    put(slot, r.slot_code);
    __builtin___clear_cache(reinterpret_cast<char*>(slot_base),
                            reinterpret_cast<char*>(slot_base + kPage));
    return addr(slot);
  }

  uint8_t* fn() { return code_ + 0x100; }
  uint8_t* data() { return code_ + 0x800; }

  uint8_t* code_ = nullptr;
  uint8_t* near_ = nullptr;
  uint8_t* far_ = nullptr;
};

TEST_F(ExecuteX86, MovRipRelative) {
  // mov rax, qword ptr [rip + 0x6f9] ; ret   (0x100 + 7 + 0x6f9 = 0x800)
  const uint64_t value = 0x1122334455667788;
  std::memcpy(data(), &value, sizeof value);
  const uint64_t slot = relocate_into(near_, {0x48, 0x8b, 0x05, 0xf9, 0x06, 0x00, 0x00, 0xc3});
  ASSERT_NE(slot, 0u);
  EXPECT_EQ(run(addr(fn())), value);
  EXPECT_EQ(run(slot), value);
}

TEST_F(ExecuteX86, LeaRipRelative) {
  // lea rax, [rip + 0x6f9] ; ret
  const uint64_t slot = relocate_into(near_, {0x48, 0x8d, 0x05, 0xf9, 0x06, 0x00, 0x00, 0xc3});
  ASSERT_NE(slot, 0u);
  EXPECT_EQ(run(addr(fn())), addr(data()));
  EXPECT_EQ(run(slot), addr(data()));
}

TEST_F(ExecuteX86, CmpRipRelativeWithImmediate) {
  // cmp dword ptr [rip + 0x6f9], 5 ; sete al ; movzx eax, al ; ret
  const uint64_t slot = relocate_into(
      near_, {0x83, 0x3d, 0xf9, 0x06, 0x00, 0x00, 0x05, 0x0f, 0x94, 0xc0, 0x0f, 0xb6, 0xc0, 0xc3});
  ASSERT_NE(slot, 0u);
  for (uint32_t v : {5u, 6u}) {
    std::memcpy(data(), &v, sizeof v);
    EXPECT_EQ(run(addr(fn())), v == 5 ? 1u : 0u);
    EXPECT_EQ(run(slot), v == 5 ? 1u : 0u);
  }
}

TEST_F(ExecuteX86, JccRel8TakenAndNotTaken) {
  // je +6 ; mov eax, 1 ; ret ; mov eax, 2 ; ret
  const Bytes f = {0x74, 0x06, 0xb8, 0x01, 0x00, 0x00, 0x00,
                   0xc3, 0xb8, 0x02, 0x00, 0x00, 0x00, 0xc3};
  for (uint8_t* area : {near_, far_}) {
    const uint64_t slot = relocate_into(area, f);
    ASSERT_NE(slot, 0u);
    EXPECT_EQ(run(addr(fn()), 0), 2u);  // ZF set: taken
    EXPECT_EQ(run(slot, 0), 2u);
    EXPECT_EQ(run(addr(fn()), 1), 1u);  // not taken
    EXPECT_EQ(run(slot, 1), 1u);
  }
}

TEST_F(ExecuteX86, JccRel32TakenAndNotTaken) {
  // jne +6 (rel32) ; mov eax, 1 ; ret ; mov eax, 2 ; ret
  const Bytes f = {0x0f, 0x85, 0x06, 0x00, 0x00, 0x00, 0xb8, 0x01, 0x00,
                   0x00, 0x00, 0xc3, 0xb8, 0x02, 0x00, 0x00, 0x00, 0xc3};
  for (uint8_t* area : {near_, far_}) {
    const uint64_t slot = relocate_into(area, f);
    ASSERT_NE(slot, 0u);
    EXPECT_EQ(run(addr(fn()), 1), 2u);  // ZF clear: taken
    EXPECT_EQ(run(slot, 1), 2u);
    EXPECT_EQ(run(addr(fn()), 0), 1u);
    EXPECT_EQ(run(slot, 0), 1u);
  }
}

TEST_F(ExecuteX86, Jrcxz) {
  // jrcxz +6 ; mov eax, 1 ; ret ; mov eax, 2 ; ret   (rcx = arg3)
  const Bytes f = {0xe3, 0x06, 0xb8, 0x01, 0x00, 0x00, 0x00,
                   0xc3, 0xb8, 0x02, 0x00, 0x00, 0x00, 0xc3};
  for (uint8_t* area : {near_, far_}) {
    const uint64_t slot = relocate_into(area, f);
    ASSERT_NE(slot, 0u);
    EXPECT_EQ(run(slot, 0, 0), 2u);
    EXPECT_EQ(run(slot, 0, 7), 1u);
  }
}

TEST_F(ExecuteX86, JmpThroughGotSlot) {
  // jmp qword ptr [rip + 0x6fa] (0x100 + 6 + 0x6fa = 0x800); the pointer leads to
  // code_ + 0x200: mov eax, 42 ; ret
  put(code_ + 0x200, {0xb8, 0x2a, 0x00, 0x00, 0x00, 0xc3});
  const uint64_t target = addr(code_ + 0x200);
  std::memcpy(data(), &target, sizeof target);
  const uint64_t slot = relocate_into(near_, {0xff, 0x25, 0xfa, 0x06, 0x00, 0x00});
  ASSERT_NE(slot, 0u);
  EXPECT_EQ(run(addr(fn())), 42u);
  EXPECT_EQ(run(slot), 42u);
}

TEST_F(ExecuteX86, PlainInstructionWithAbsoluteJumpBack) {
  // mov rax, rdi ; add rax, 5 ; ret  — slot far away: jump back through [rip+0]
  const Bytes f = {0x48, 0x89, 0xf8, 0x48, 0x83, 0xc0, 0x05, 0xc3};
  const uint64_t slot = relocate_into(far_, f);
  ASSERT_NE(slot, 0u);
  EXPECT_EQ(run(addr(fn()), 10), 15u);
  EXPECT_EQ(run(slot, 10), 15u);
  EXPECT_EQ(run(slot, 0x100000000), 0x100000005u);
}

// ---------------------------------------------------------------------------------
// AArch64. insn at 0x400000, near slot 0x500000 (b back = -0x100000 + ...), far slot
// beyond +-128 MiB. Words are little-endian.

constexpr uint64_t kA64Insn = 0x400000;

Relocation a64(uint32_t word, uint64_t insn = kA64Insn, uint64_t slot = kNearSlot) {
  const Bytes code = {static_cast<uint8_t>(word), static_cast<uint8_t>(word >> 8),
                      static_cast<uint8_t>(word >> 16), static_cast<uint8_t>(word >> 24)};
  return relocate_aarch64(code, insn, slot);
}

Bytes words(std::initializer_list<uint32_t> ws) {
  Bytes out;
  for (uint32_t w : ws) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(w >> (8 * i)));
  }
  return out;
}

// ldr x16, #8 ; br x16 ; .quad target
Bytes a64_abs_jump(uint64_t target) { return cat({words({0x58000050, 0xd61f0200}), le64(target)}); }

TEST(AArch64Relocator, B) {
  expect_emulate(a64(0x14000010), 4, EKind::SetIp, 0x400040);  // b #0x40
  expect_emulate(a64(0x17ffffff), 4, EKind::SetIp, 0x3ffffc);  // b #-4
}

TEST(AArch64Relocator, Bl) {
  const Relocation r = a64(0x94000010);  // bl #0x40
  expect_emulate(r, 4, EKind::Call, 0x400040, 0x400004);
  EXPECT_EQ(r.text, "bl #0x400040");
}

TEST(AArch64Relocator, BCond) {
  // b.eq #0x40. Slot: b.eq #8 ; b 0x400004 (from 0x500004: -0x100000) ;
  // b 0x400040 (from 0x500008: -0xfffc8).
  expect_out_of_line(a64(0x54000200), 4, words({0x54000040, 0x17fc0000, 0x17fc000e}));
  // Far slot: b.eq #20 over ldr/br/.quad.
  expect_out_of_line(a64(0x54000200, kA64Insn, kFarSlot), 4,
                     cat({words({0x540000a0}), a64_abs_jump(0x400004), a64_abs_jump(0x400040)}));
}

TEST(AArch64Relocator, Cbz) {
  // cbz x0, #0x100 -> cbz x0, #8
  expect_out_of_line(a64(0xb4000800), 4, words({0xb4000040, 0x17fc0000, 0x17fc003e}));
  // cbnz w3, #0x100 with a far slot -> cbnz w3, #20
  expect_out_of_line(a64(0x35000803, kA64Insn, kFarSlot), 4,
                     cat({words({0x350000a3}), a64_abs_jump(0x400004), a64_abs_jump(0x400100)}));
}

TEST(AArch64Relocator, Tbz) {
  // tbz x5, #33, #0x20 -> tbz x5, #33, #8 ; b back ; b 0x400020 (from 0x500008: -0xfffe8)
  expect_out_of_line(a64(0xb6080105), 4, words({0xb6080045, 0x17fc0000, 0x17fc0006}));
}

TEST(AArch64Relocator, Adr) {
  // adr x0, #8 -> x0 = 0x400008: movz/movk x0 ; b back (from 0x500010: -0x10000c)
  expect_out_of_line(a64(0x10000040), 4,
                     words({0xd2800100, 0xf2a00800, 0xf2c00000, 0xf2e00000, 0x17fbfffd}));
}

TEST(AArch64Relocator, Adrp) {
  // adrp x1, #0x1000 at 0x400124 -> x1 = 0x401000; b back from 0x500010 to 0x400128
  expect_out_of_line(a64(0xb0000001, 0x400124), 4,
                     words({0xd2820001, 0xf2a00801, 0xf2c00001, 0xf2e00001, 0x17fc0046}));
  // adrp x16, #0x1000 with a far slot: the jump back must not clobber x16 (uses x17).
  expect_out_of_line(
      a64(0xb0000010, 0x400124, kFarSlot), 4,
      cat({words({0xd2820010, 0xf2a00810, 0xf2c00010, 0xf2e00010, 0x58000051, 0xd61f0220}),
           le64(0x400128)}));
}

TEST(AArch64Relocator, LdrLiteral) {
  // ldr x1, #8 -> x1 = 0x400008 ; ldr x1, [x1] ; b back (from 0x500014: -0x100010)
  expect_out_of_line(
      a64(0x58000041), 4,
      words({0xd2800101, 0xf2a00801, 0xf2c00001, 0xf2e00001, 0xf9400021, 0x17fbfffc}));
  // ldr w1, #8 and ldrsw x1, #8
  expect_out_of_line(
      a64(0x18000041), 4,
      words({0xd2800101, 0xf2a00801, 0xf2c00001, 0xf2e00001, 0xb9400021, 0x17fbfffc}));
  expect_out_of_line(
      a64(0x98000041), 4,
      words({0xd2800101, 0xf2a00801, 0xf2c00001, 0xf2e00001, 0xb9800021, 0x17fbfffc}));
  // ldr d0, #8 and ldr q0, #8 go through x16
  expect_out_of_line(
      a64(0x5c000040), 4,
      words({0xd2800110, 0xf2a00810, 0xf2c00010, 0xf2e00010, 0xfd400200, 0x17fbfffc}));
  expect_out_of_line(
      a64(0x9c000040), 4,
      words({0xd2800110, 0xf2a00810, 0xf2c00010, 0xf2e00010, 0x3dc00200, 0x17fbfffc}));
  // ldr x16, #8 with a far slot: jump back through x17
  expect_out_of_line(a64(0x58000050, kA64Insn, kFarSlot), 4,
                     cat({words({0xd2800110, 0xf2a00810, 0xf2c00010, 0xf2e00010, 0xf9400210,
                                 0x58000051, 0xd61f0220}),
                          le64(0x400004)}));
  // prfm pldl1keep, #8: nothing but the jump back (from 0x500000: -0xffffc)
  expect_out_of_line(a64(0xd8000040), 4, words({0x17fc0001}));
}

TEST(AArch64Relocator, BlrRefused) {
  expect_refuse(a64(0xd63f0060), "call through register");  // blr x3
}

TEST(AArch64Relocator, PlainInstructionCopied) {
  // stp x29, x30, [sp, #-16]!
  const Relocation r = a64(0xa9bf7bfd);
  expect_out_of_line(r, 4, words({0xa9bf7bfd, 0x17fc0000}));
  EXPECT_EQ(r.text, "stp x29, x30, [sp, #-0x10]!");
  expect_out_of_line(a64(0xa9bf7bfd, kA64Insn, kFarSlot), 4,
                     cat({words({0xa9bf7bfd}), a64_abs_jump(0x400004)}));
  // br x16 and ret are copied (the jump back is never reached)
  expect_out_of_line(a64(0xd61f0200), 4, words({0xd61f0200, 0x17fc0000}));
  expect_out_of_line(a64(0xd65f03c0), 4, words({0xd65f03c0, 0x17fc0000}));
}

TEST(AArch64Relocator, Refusals) {
  EXPECT_EQ(a64(0xd4200000).kind, Kind::Refuse);  // brk #0: already a breakpoint
  EXPECT_EQ(a64(0xd69f03e0).kind, Kind::Refuse);  // eret
  expect_refuse(a64(0x00000000), "undecodable instruction");
  expect_refuse(relocate_aarch64(Bytes{0xfd, 0x7b, 0xbf}, kA64Insn, kNearSlot),
                "instruction truncated");
}

}  // namespace
}  // namespace ft::arch
