#include "arch/x86_64/decoding.h"

namespace ft::arch::x86 {

Decoder::Decoder() {
  if (cs_open(CS_ARCH_X86, CS_MODE_64, &handle_) != CS_ERR_OK) return;
  open_ = true;
  ok_ = cs_option(handle_, CS_OPT_DETAIL, CS_OPT_ON) == CS_ERR_OK;
}

Decoder::~Decoder() {
  if (open_) cs_close(&handle_);
}

InsnPtr Decoder::decode(std::span<const uint8_t> code, uint64_t addr) const {
  cs_insn* insn = nullptr;
  if (cs_disasm(handle_, code.data(), code.size(), addr, 1, &insn) != 1) {
    if (insn != nullptr) cs_free(insn, 1);
    return nullptr;
  }
  return InsnPtr(insn);
}

const Decoder& decoder() {
  thread_local const Decoder d;
  return d;
}

void emit_jump(std::vector<uint8_t>& out, uint64_t code_addr, uint64_t target) {
  const uint64_t at = code_addr + out.size();
  const int64_t rel = distance(at + kJmpRel32Length, target);
  if (fits_int32(rel)) {
    out.push_back(0xe9);
    put_le32(out, static_cast<uint32_t>(rel));
    return;
  }
  out.insert(out.end(), {0xff, 0x25, 0x00, 0x00, 0x00, 0x00});
  put_le64(out, target);
}

Prefixes scan_prefixes(std::span<const uint8_t> insn) {
  Prefixes p;
  size_t i = 0;
  for (; i < insn.size(); ++i) {
    const uint8_t b = insn[i];
    if (b == 0x66) {
      p.operand_size = true;
    } else if (b == 0x67) {
      p.address_size = true;
    } else if (b == 0x64 || b == 0x65) {
      p.fs_gs = true;
    } else if (b == 0x3e) {
      p.ds = true;
    } else if (b != 0xf0 && b != 0xf2 && b != 0xf3 && b != 0x2e && b != 0x36 &&
               b != 0x26 && (b & 0xf0) != 0x40) {  // a REX not next to the opcode is ignored
      break;
    }
  }
  p.length = i;
  return p;
}

RelBranch parse_rel_branch(std::span<const uint8_t> insn, const Prefixes& p) {
  RelBranch br;
  const size_t op = p.length;
  const size_t len = insn.size();
  if (op >= len) return br;
  const uint8_t b0 = insn[op];
  if ((b0 == 0xe8 || b0 == 0xe9) && len == op + 5) {
    br.kind = b0 == 0xe8 ? BranchKind::Call : BranchKind::Jump;
    br.rel = read_le32(&insn[op + 1]);
  } else if (b0 == 0xeb && len == op + 2) {
    br.kind = BranchKind::Jump;
    br.rel = static_cast<int8_t>(insn[op + 1]);
  } else if ((b0 & 0xf0) == 0x70 && len == op + 2) {
    br.kind = BranchKind::CondJump;
    br.cond = b0 & 0x0f;
    br.rel = static_cast<int8_t>(insn[op + 1]);
  } else if (b0 == 0x0f && op + 1 < len && (insn[op + 1] & 0xf0) == 0x80 && len == op + 6) {
    br.kind = BranchKind::CondJump;
    br.cond = insn[op + 1] & 0x0f;
    br.rel = read_le32(&insn[op + 2]);
  } else if (b0 >= 0xe0 && b0 <= 0xe3 && len == op + 2) {
    br.kind = BranchKind::CountJump;
    br.opcode = b0;
    br.rel = static_cast<int8_t>(insn[op + 1]);
  }
  return br;
}

bool in_group(const cs_insn& insn, uint8_t group) {
  const cs_detail& d = *insn.detail;
  for (uint8_t i = 0; i < d.groups_count; ++i) {
    if (d.groups[i] == group) return true;
  }
  return false;
}

bool is_port_io(unsigned id) {
  switch (id) {
    case X86_INS_IN:
    case X86_INS_OUT:
    case X86_INS_INSB:
    case X86_INS_INSW:
    case X86_INS_INSD:
    case X86_INS_OUTSB:
    case X86_INS_OUTSW:
    case X86_INS_OUTSD:
      return true;
    default:
      return false;
  }
}

bool is_breakpoint_trap(const cs_insn& insn) {
  if (insn.id == X86_INS_INT3) return true;
  if (insn.id == X86_INS_INT) {  // int 3 (cd 03) is a breakpoint as well
    const cs_x86& x = insn.detail->x86;
    return x.op_count == 1 && x.operands[0].type == X86_OP_IMM && x.operands[0].imm == 3;
  }
  return false;
}

std::optional<RipOperand> find_rip_operand(const cs_insn& insn, std::string& error) {
  const cs_x86& x = insn.detail->x86;
  const std::span<const uint8_t> bytes(insn.bytes, insn.size);
  const cs_x86_op* rip_op = nullptr;
  for (uint8_t i = 0; i < x.op_count; ++i) {
    const cs_x86_op& op = x.operands[i];
    if (op.type != X86_OP_MEM) continue;
    if (op.mem.base == X86_REG_EIP) {
      error = "32-bit EIP-relative operand";
      return std::nullopt;
    }
    if (op.mem.base != X86_REG_RIP) continue;
    if (rip_op != nullptr || op.mem.index != X86_REG_INVALID) {
      error = "cannot locate RIP-relative displacement";
      return std::nullopt;
    }
    rip_op = &op;
  }
  // In 64-bit mode ModRM mod=00 rm=101 (no SIB) always means [rip+disp32].
  const size_t modrm = x.encoding.modrm_offset;
  const bool modrm_rip = modrm != 0 && modrm < bytes.size() && (bytes[modrm] & 0xc7) == 0x05;
  if (rip_op == nullptr) {
    if (modrm_rip) error = "cannot locate RIP-relative displacement";
    return std::nullopt;
  }
  const size_t disp_offset = modrm + 1;
  if (!modrm_rip || x.encoding.disp_offset != disp_offset || disp_offset + 4 > bytes.size() ||
      read_le32(&bytes[disp_offset]) != rip_op->mem.disp) {
    error = "cannot locate RIP-relative displacement";
    return std::nullopt;
  }
  RipOperand r;
  r.disp_offset = disp_offset;
  r.disp = read_le32(&bytes[disp_offset]);
  r.size = rip_op->size;
  return r;
}

std::string insn_text(const cs_insn& insn) {
  std::string text = insn.mnemonic;
  if (insn.op_str[0] != '\0') {
    text += ' ';
    text += insn.op_str;
  }
  return text;
}

}  // namespace ft::arch::x86
