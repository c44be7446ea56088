// x86-64 relocation of the instruction displaced by an entry breakpoint (int3).
//
// Capstone decodes the instruction (length, class, operands); the bytes that matter
// for rewriting (prefixes, branch opcodes, the RIP-relative disp32) are located and
// cross-checked against the raw encoding, because some of Capstone 4's encoding
// fields are unreliable (disp_size is reported as 2 for operand-size-prefixed and
// some VEX instructions although a RIP-relative displacement is always 4 bytes).
//
// Slot code never depends on which thread runs it: it is the relocated instruction
// followed by jumps to fixed absolute addresses.
#include <capstone/capstone.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>

#include "arch/relocation.h"

namespace ft::arch {

namespace {

constexpr size_t kMaxX86InsnLength = 15;

// jmp rel32
constexpr size_t kJmpRel32Length = 5;
// jmp qword ptr [rip+0]; .quad target
constexpr size_t kJmpAbsLength = 14;

struct InsnDeleter {
  void operator()(cs_insn* insn) const { cs_free(insn, 1); }
};
using InsnPtr = std::unique_ptr<cs_insn, InsnDeleter>;

// A Capstone handle for x86-64 with instruction details, one per thread so that
// relocation can run on any thread. Opening one is costly (Capstone builds its
// instruction tables for each handle on first use): one per call made planting the
// breakpoints of 100,000 functions take seconds.
class Decoder {
 public:
  Decoder() {
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &handle_) != CS_ERR_OK) return;
    open_ = true;
    ok_ = cs_option(handle_, CS_OPT_DETAIL, CS_OPT_ON) == CS_ERR_OK;
  }
  ~Decoder() {
    if (open_) cs_close(&handle_);
  }
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  bool ok() const { return ok_; }

  InsnPtr decode(std::span<const uint8_t> code, uint64_t addr) const {
    cs_insn* insn = nullptr;
    if (cs_disasm(handle_, code.data(), code.size(), addr, 1, &insn) != 1) {
      if (insn != nullptr) cs_free(insn, 1);
      return nullptr;
    }
    return InsnPtr(insn);
  }

 private:
  csh handle_ = 0;
  bool open_ = false;
  bool ok_ = false;
};

bool fits_int32(int64_t v) {
  return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}

int32_t read_le32(const uint8_t* p) {
  uint32_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return static_cast<int32_t>(v);
}

void put_le32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void put_le64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void write_le32(uint8_t* p, int32_t v) {
  const auto u = static_cast<uint32_t>(v);
  std::memcpy(p, &u, sizeof u);
}

// Signed distance from `from` to `to` (modular; user-space addresses never wrap).
int64_t distance(uint64_t from, uint64_t to) { return static_cast<int64_t>(to - from); }

// Appends a jump to `target`, for code that will live at slot_addr + out.size():
// `jmp rel32` when it reaches, else `jmp [rip+0]` followed by the absolute address.
void emit_jump(std::vector<uint8_t>& out, uint64_t slot_addr, uint64_t target) {
  const uint64_t at = slot_addr + out.size();
  const int64_t rel = distance(at + kJmpRel32Length, target);
  if (fits_int32(rel)) {
    out.push_back(0xe9);
    put_le32(out, static_cast<uint32_t>(rel));
    return;
  }
  out.insert(out.end(), {0xff, 0x25, 0x00, 0x00, 0x00, 0x00});
  put_le64(out, target);
}

// Legacy prefixes and REX in front of the opcode.
struct Prefixes {
  size_t length = 0;          // bytes before the opcode (legacy prefixes + REX)
  bool operand_size = false;  // 0x66
  bool address_size = false;  // 0x67
  bool fs_gs = false;         // 0x64 / 0x65 segment override
};

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
    } else if (b != 0xf0 && b != 0xf2 && b != 0xf3 && b != 0x2e && b != 0x36 && b != 0x3e &&
               b != 0x26 && (b & 0xf0) != 0x40) {  // a REX not next to the opcode is ignored
      break;
    }
  }
  p.length = i;
  return p;
}

enum class BranchKind { None, Call, Jump, CondJump, CountJump };

// A relative branch recognised from its opcode: `rel` is the signed displacement
// that ends the instruction.
struct RelBranch {
  BranchKind kind = BranchKind::None;
  uint8_t cond = 0;    // CondJump: the condition nibble of 0x7X / 0x0F 0x8X
  uint8_t opcode = 0;  // CountJump: 0xE0..0xE3 (loopne, loope, loop, jrcxz)
  int64_t rel = 0;
};

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

// The RIP-relative memory operand of an instruction, located in its bytes.
struct RipOperand {
  size_t disp_offset = 0;  // offset of the disp32 in the instruction
  int32_t disp = 0;
  uint8_t size = 0;  // operand size in bytes as reported by Capstone
};

// Finds the RIP-relative operand, if any. Sets `error` when the instruction looks
// RIP-relative but its displacement cannot be located with confidence.
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
  thread_local const Decoder decoder;
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
  r.text = in.mnemonic;
  if (in.op_str[0] != '\0') {
    r.text += ' ';
    r.text += in.op_str;
  }

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
