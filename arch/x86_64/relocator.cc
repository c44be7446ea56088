// x86-64 relocation of the instruction displaced by an entry breakpoint (int3).
//
// Capstone decodes the instruction; arch/x86_64/decoding.h locates the bytes that
// matter for rewriting (prefixes, branch opcodes, the RIP-relative disp32).
//
// Slot code never depends on which thread runs it: it is the relocated instruction
// followed by jumps to fixed absolute addresses.
#include <capstone/capstone.h>

#include <algorithm>
#include <array>
#include <optional>

#include "arch/relocation.h"
#include "arch/x86_64/decoding.h"

namespace ft::arch {

using namespace x86;

namespace {

Relocation out_of_line(Relocation r, std::vector<uint8_t> code) {
  r.kind = Relocation::Kind::OutOfLine;
  r.slot_code = std::move(code);
  return r;
}

// Conditional and counting branches: the CPU evaluates the condition in the slot.
//   [67] op rel8 -> L2    (rel8 = length of the jump back)
//   L1: jump back to next
//   L2: jump to target
std::vector<uint8_t> conditional_slot(const RelBranch& br, const Prefixes& p, uint64_t slot_addr,
                                      uint64_t next, uint64_t target) {
  std::vector<uint8_t> out;
  uint8_t opcode = 0;
  if (br.kind == BranchKind::CondJump) {
    opcode = static_cast<uint8_t>(0x70 | br.cond);  // branch hints and bnd are dropped
  } else {
    if (p.address_size) out.push_back(0x67);  // jecxz / loop on ecx
    opcode = br.opcode;
  }
  out.push_back(opcode);
  const size_t rel_at = out.size();
  out.push_back(0);
  const size_t l1 = out.size();
  emit_jump(out, slot_addr, next);
  out[rel_at] = static_cast<uint8_t>(out.size() - l1);
  emit_jump(out, slot_addr, target);
  return out;
}

}  // namespace

Relocation relocate_x86_64(std::span<const uint8_t> code, uint64_t insn_addr, uint64_t slot_addr) {
  Relocation r;
  if (code.empty()) return refuse(std::move(r), "no code bytes");
  const Decoder& decoder = x86::decoder();
  if (!decoder.ok()) return refuse(std::move(r), "disassembler unavailable");

  const std::span<const uint8_t> window = code.first(std::min(code.size(), kMaxInsnBytes));
  InsnPtr insn = decoder.decode(window, insn_addr);
  if (insn == nullptr) {
    // Distinguish an instruction cut short by the end of the readable bytes.
    if (window.size() < kMaxX86InsnLength) {
      std::array<uint8_t, kMaxX86InsnLength> padded{};
      std::copy(window.begin(), window.end(), padded.begin());
      InsnPtr whole = decoder.decode(padded, insn_addr);
      if (whole != nullptr && whole->size > window.size()) {
        return refuse(std::move(r), "instruction truncated");
      }
    }
    return refuse(std::move(r), "undecodable instruction");
  }

  const cs_insn& in = *insn;
  const unsigned len = in.size;
  const std::span<const uint8_t> bytes = window.first(len);
  const uint64_t next = insn_addr + len;
  r.insn_length = len;
  r.text = insn_text(in);

  if (is_breakpoint_trap(in)) return refuse(std::move(r), "int3: a breakpoint is already there");
  if (in.id == X86_INS_INT1) return refuse(std::move(r), "int1 trap");
  if (in_group(in, X86_GRP_PRIVILEGE) || in_group(in, X86_GRP_IRET)) {
    return refuse(std::move(r), "privileged instruction");
  }
  if (is_port_io(in.id)) return refuse(std::move(r), "port I/O instruction");

  if (in.id == X86_INS_NOP || in.id == X86_INS_ENDBR64 || in.id == X86_INS_ENDBR32) {
    return emulate(std::move(r), {.kind = Emulation::Kind::SetIp, .target = RemoteAddr(next)});
  }

  const Prefixes prefixes = scan_prefixes(bytes);
  const RelBranch br = parse_rel_branch(bytes, prefixes);
  if (br.kind != BranchKind::None || in_group(in, X86_GRP_BRANCH_RELATIVE)) {
    if (br.kind == BranchKind::None) {
      return refuse(std::move(r), std::string("relative ") + in.mnemonic + " not relocatable");
    }
    if (prefixes.operand_size)
      return refuse(std::move(r), "operand-size prefix on relative branch");
    const uint64_t target = next + static_cast<uint64_t>(br.rel);
    // Capstone computes the same target; a mismatch means the bytes were misread.
    const cs_x86& x = in.detail->x86;
    if (x.op_count != 1 || x.operands[0].type != X86_OP_IMM ||
        static_cast<uint64_t>(x.operands[0].imm) != target) {
      return refuse(std::move(r), "inconsistent branch decoding");
    }
    switch (br.kind) {
      case BranchKind::Call:
        return emulate(std::move(r),
                       {.kind = Emulation::Kind::Call, .target = RemoteAddr(target), .return_addr = RemoteAddr(next)});
      case BranchKind::Jump:
        return emulate(std::move(r), {.kind = Emulation::Kind::SetIp, .target = RemoteAddr(target)});
      case BranchKind::CondJump:
      case BranchKind::CountJump:
        return out_of_line(std::move(r), conditional_slot(br, prefixes, slot_addr, next, target));
      case BranchKind::None:
        break;
    }
    return refuse(std::move(r), "unsupported relative branch");
  }

  std::string rip_error;
  const std::optional<RipOperand> rip = find_rip_operand(in, rip_error);
  if (!rip_error.empty()) return refuse(std::move(r), rip_error);

  if (in_group(in, X86_GRP_CALL)) {
    if (in.id == X86_INS_LCALL) return refuse(std::move(r), "far call");
    if (!rip) return refuse(std::move(r), "indirect call");
    if (prefixes.operand_size || prefixes.fs_gs || rip->size != 8) {
      return refuse(std::move(r), "unusual indirect call through memory");
    }
    return emulate(std::move(r),
                   {.kind = Emulation::Kind::CallMem,
                    .return_addr = RemoteAddr(next),
                    .mem = RemoteAddr(next) + static_cast<int64_t>(rip->disp)});
  }

  std::vector<uint8_t> slot(bytes.begin(), bytes.end());
  if (rip) {
    const uint64_t mem = next + static_cast<uint64_t>(static_cast<int64_t>(rip->disp));
    const int64_t new_disp = distance(slot_addr + len, mem);
    if (!fits_int32(new_disp)) {
      // A jmp through a pointer (PLT stub) can still be emulated.
      if (in.id == X86_INS_JMP && !prefixes.operand_size && !prefixes.fs_gs && rip->size == 8) {
        return emulate(std::move(r), {.kind = Emulation::Kind::JumpMem, .mem = RemoteAddr(mem)});
      }
      return refuse(std::move(r), "RIP-relative operand out of reach of the out-of-line area");
    }
    write_le32(&slot[rip->disp_offset], static_cast<int32_t>(new_disp));
  }
  emit_jump(slot, slot_addr, next);
  static_assert(kMaxX86InsnLength + kJmpAbsLength <= kMaxSlotCode);
  static_assert(3 + 2 * kJmpAbsLength <= kMaxSlotCode);
  return out_of_line(std::move(r), std::move(slot));
}

}  // namespace ft::arch
