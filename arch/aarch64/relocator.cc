// AArch64 relocation of the instruction displaced by an entry breakpoint (brk #0).
//
// Capstone checks that the word is a known instruction and provides its text; the
// PC-relative classes are recognised from their fixed encodings and rewritten here.
// Absolute jumps use an intra-procedure-call scratch register (x16, or x17 when the
// instruction may write x16): AAPCS64 lets a linker veneer clobber both between a
// call and the callee's entry, so a function cannot rely on them there.
#include <capstone/capstone.h>

#include <initializer_list>
#include <optional>

#include "arch/relocation.h"

namespace ft::arch {

namespace {

constexpr unsigned kInsnSize = 4;

// Encodings used in slots.
constexpr uint32_t kB = 0x14000000;            // b imm26
constexpr uint32_t kLdrXLiteral = 0x58000000;  // ldr Xt, label (imm19)
constexpr uint32_t kBr = 0xd61f0000;           // br Xn
constexpr uint32_t kMovz64 = 0xd2800000;       // movz Xd, #imm16, lsl #(hw*16)
constexpr uint32_t kMovk64 = 0xf2800000;       // movk Xd, #imm16, lsl #(hw*16)
constexpr uint32_t kLdrWImm = 0xb9400000;      // ldr Wt, [Xn]
constexpr uint32_t kLdrXImm = 0xf9400000;      // ldr Xt, [Xn]
constexpr uint32_t kLdrswImm = 0xb9800000;     // ldrsw Xt, [Xn]
constexpr uint32_t kLdrSImm = 0xbd400000;      // ldr St, [Xn]
constexpr uint32_t kLdrDImm = 0xfd400000;      // ldr Dt, [Xn]
constexpr uint32_t kLdrQImm = 0x3dc00000;      // ldr Qt, [Xn]

// b imm26 reach: +-128 MiB.
constexpr int64_t kBReach = int64_t{1} << 27;

int64_t sign_extend(uint64_t value, unsigned bits) {
  const uint64_t sign = uint64_t{1} << (bits - 1);
  value &= (uint64_t{1} << bits) - 1;
  return static_cast<int64_t>((value ^ sign) - sign);
}

uint32_t field(uint32_t insn, unsigned lsb, unsigned bits) {
  return (insn >> lsb) & ((uint32_t{1} << bits) - 1);
}

void put32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void put64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

class SlotWriter {
 public:
  // scratch: register for absolute jumps, or nullopt when none may be clobbered.
  SlotWriter(uint64_t slot_addr, std::optional<unsigned> scratch)
      : slot_addr_(slot_addr), scratch_(scratch) {}

  uint64_t pc() const { return slot_addr_ + code_.size(); }
  size_t size() const { return code_.size(); }
  void insn(uint32_t word) { put32(code_, word); }
  void patch(size_t offset, uint32_t word) {
    for (int i = 0; i < 4; ++i) code_[offset + i] = static_cast<uint8_t>(word >> (8 * i));
  }

  // `b target` when in reach, else `ldr xS, #8; br xS; .quad target`.
  // Returns false when neither is possible (no scratch register).
  bool jump(uint64_t target) {
    const int64_t rel = static_cast<int64_t>(target - pc());
    if (rel >= -kBReach && rel < kBReach) {
      insn(kB | (static_cast<uint32_t>(rel >> 2) & 0x03ffffff));
      return true;
    }
    if (!scratch_) return false;
    insn(kLdrXLiteral | (2u << 5) | *scratch_);
    insn(kBr | (*scratch_ << 5));
    put64(code_, target);
    return true;
  }

  // movz/movk sequence setting Xd to value.
  void mov64(unsigned rd, uint64_t value) {
    for (unsigned hw = 0; hw < 4; ++hw) {
      const auto imm16 = static_cast<uint32_t>((value >> (16 * hw)) & 0xffff);
      insn((hw == 0 ? kMovz64 : kMovk64) | (hw << 21) | (imm16 << 5) | rd);
    }
  }

  std::vector<uint8_t> take() { return std::move(code_); }

 private:
  uint64_t slot_addr_;
  std::optional<unsigned> scratch_;
  std::vector<uint8_t> code_;
};

// A register the displaced instruction does not write: x16 unless one of the
// candidate register fields names it, then x17. Branches write nothing; the
// PC-relative loads write only Rt; for anything else all the usual register fields
// (Rt/Rd, Rn, Rt2) are treated as possibly written.
std::optional<unsigned> pick_scratch(std::initializer_list<uint32_t> written) {
  for (unsigned candidate : {16u, 17u}) {
    bool used = false;
    for (uint32_t r : written) used = used || r == candidate;
    if (!used) return candidate;
  }
  return std::nullopt;
}


// Fills text from Capstone; false when the word does not decode.
bool disassemble(uint32_t word, uint64_t addr, std::string& text) {
  csh handle = 0;
  if (cs_open(CS_ARCH_ARM64, CS_MODE_LITTLE_ENDIAN, &handle) != CS_ERR_OK) return false;
  uint8_t bytes[kInsnSize];
  for (unsigned i = 0; i < kInsnSize; ++i) bytes[i] = static_cast<uint8_t>(word >> (8 * i));
  cs_insn* insn = nullptr;
  const size_t n = cs_disasm(handle, bytes, sizeof bytes, addr, 1, &insn);
  if (n == 1) {
    text = insn->mnemonic;
    if (insn->op_str[0] != '\0') {
      text += ' ';
      text += insn->op_str;
    }
  }
  if (insn != nullptr) cs_free(insn, n);
  cs_close(&handle);
  return n == 1;
}

}  // namespace

Relocation relocate_aarch64(std::span<const uint8_t> code, uint64_t insn_addr, uint64_t slot_addr) {
  Relocation r;
  if (code.size() < kInsnSize) {
    return refuse(std::move(r), code.empty() ? "no code bytes" : "instruction truncated");
  }
  if (insn_addr % kInsnSize != 0) return refuse(std::move(r), "misaligned instruction address");
  if (slot_addr % kInsnSize != 0) return refuse(std::move(r), "misaligned slot address");

  uint32_t insn = 0;
  for (unsigned i = 0; i < kInsnSize; ++i) insn |= static_cast<uint32_t>(code[i]) << (8 * i);
  if (!disassemble(insn, insn_addr, r.text)) return refuse(std::move(r), "undecodable instruction");
  r.insn_length = kInsnSize;
  const uint64_t next = insn_addr + kInsnSize;

  // Exception generation: svc is harmless out of line; the rest is not ours to run.
  if ((insn & 0xff000000) == 0xd4000000) {
    const uint32_t opc = field(insn, 21, 3);
    const uint32_t ll = field(insn, 0, 2);
    if (opc == 1) return refuse(std::move(r), "brk: a breakpoint is already there");
    if (opc == 2) return refuse(std::move(r), "hlt instruction");
    if (!(opc == 0 && ll == 1)) return refuse(std::move(r), "privileged instruction");
  }

  // Unconditional branch (immediate): b / bl.
  if ((insn & 0x7c000000) == 0x14000000) {
    const uint64_t target =
        insn_addr + static_cast<uint64_t>(sign_extend(field(insn, 0, 26), 26) * 4);
    if (insn & 0x80000000) {
      return emulate(std::move(r),
                     {.kind = Emulation::Kind::Call, .target = RemoteAddr(target), .return_addr = RemoteAddr(next)});
    }
    return emulate(std::move(r), {.kind = Emulation::Kind::SetIp, .target = RemoteAddr(target)});
  }

  // Unconditional branch (register).
  if ((insn & 0xfe000000) == 0xd6000000) {
    const uint32_t opc = field(insn, 21, 4);
    if (opc == 1 || opc == 9) return refuse(std::move(r), "call through register");
    if (opc == 4 || opc == 5) return refuse(std::move(r), "privileged instruction");
  }

  const auto finish = [next](Relocation rel, SlotWriter& slot) {
    if (!slot.jump(next)) return refuse(std::move(rel), "no scratch register for the jump back");
    rel.kind = Relocation::Kind::OutOfLine;
    rel.slot_code = slot.take();
    return rel;
  };

  // Conditional branches keep their condition in the slot:
  //   <cond-branch> L2; L1: jump back to next; L2: jump to target.
  std::optional<uint32_t> imm_mask;
  unsigned imm_bits = 0;
  if ((insn & 0xff000000) == 0x54000000) {  // b.cond (bc.cond)
    imm_mask = 0x00ffffe0;
    imm_bits = 19;
  } else if ((insn & 0x7e000000) == 0x34000000) {  // cbz / cbnz
    imm_mask = 0x00ffffe0;
    imm_bits = 19;
  } else if ((insn & 0x7e000000) == 0x36000000) {  // tbz / tbnz
    imm_mask = 0x0007ffe0;
    imm_bits = 14;
  }
  if (imm_mask) {
    const uint64_t target =
        insn_addr + static_cast<uint64_t>(sign_extend(field(insn, 5, imm_bits), imm_bits) * 4);
    SlotWriter slot(slot_addr, pick_scratch({}));
    slot.insn(0);  // patched below
    if (!slot.jump(next)) return refuse(std::move(r), "no scratch register for the jump back");
    const auto skip = static_cast<uint32_t>(slot.size() / 4);  // words from the branch to L2
    slot.patch(0, (insn & ~*imm_mask) | ((skip << 5) & *imm_mask));
    if (!slot.jump(target)) return refuse(std::move(r), "no scratch register for the branch");
    r.kind = Relocation::Kind::OutOfLine;
    r.slot_code = slot.take();
    return r;
  }

  // adr / adrp: materialise the address they would compute.
  if ((insn & 0x1f000000) == 0x10000000) {
    const uint64_t imm = (field(insn, 5, 19) << 2) | field(insn, 29, 2);
    uint64_t value = 0;
    if (insn & 0x80000000) {
      value = (insn_addr & ~uint64_t{0xfff}) + static_cast<uint64_t>(sign_extend(imm, 21) * 4096);
    } else {
      value = insn_addr + static_cast<uint64_t>(sign_extend(imm, 21));
    }
    SlotWriter slot(slot_addr, pick_scratch({field(insn, 0, 5)}));
    slot.mov64(field(insn, 0, 5), value);
    return finish(std::move(r), slot);
  }

  // Load register (literal): load from the absolute original address.
  if ((insn & 0x3b000000) == 0x18000000) {
    const uint32_t opc = field(insn, 30, 2);
    const bool simd = (insn & 0x04000000) != 0;
    const uint32_t rt = field(insn, 0, 5);
    const uint64_t addr =
        insn_addr + static_cast<uint64_t>(sign_extend(field(insn, 5, 19), 19) * 4);
    SlotWriter slot(slot_addr, pick_scratch({simd ? 0u : rt}));
    if (!simd && opc == 3) return finish(std::move(r), slot);  // prfm: a hint, nothing to do
    uint32_t load = 0;
    if (!simd) {
      load = opc == 0 ? kLdrWImm : opc == 1 ? kLdrXImm : kLdrswImm;
    } else {
      if (opc == 3) return refuse(std::move(r), "undecodable instruction");
      load = opc == 0 ? kLdrSImm : opc == 1 ? kLdrDImm : kLdrQImm;
    }
    // The destination X register serves as the base; xzr and SIMD need x16.
    const uint32_t base = (!simd && rt != 31) ? rt : 16;
    slot.mov64(base, addr);
    slot.insn(load | (base << 5) | rt);
    return finish(std::move(r), slot);
  }

  // Everything else runs unchanged.
  SlotWriter slot(slot_addr,
                  pick_scratch({field(insn, 0, 5), field(insn, 5, 5), field(insn, 10, 5)}));
  slot.insn(insn);
  return finish(std::move(r), slot);
}

}  // namespace ft::arch
