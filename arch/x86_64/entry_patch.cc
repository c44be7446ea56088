// x86-64 entry patch analysis (arch/entry_patch.h).
//
// endbr64 stays at the entry. Under IBT an indirect call or a tracked indirect jump
// must land on an endbr64, and indirect calls to a function land on its entry: a jump
// written over the endbr64 would make every such call fault on a CPU that enforces
// IBT. So the window starts with the endbr64 (it is part of the window for the branch
// check: a branch to entry + 4 would now run the patch without being a call) and the
// jump is written right after it. The trampoline is reached by a direct jump and needs
// no endbr64 of its own; the copy does not repeat it.
//
// Indirect jumps. A jump through a register or through memory (a jump table,
// `jmp rax`, a computed goto, a tail call through a pointer) has targets linear
// decoding cannot know, so the function is refused, with one exception that can be
// shown harmless: in code built for IBT (the function starts with endbr64) the
// compiler marks the jumps that may land anywhere (jump tables) `notrack`, and every
// other indirect jump may only land on an endbr64. Every endbr64 of the function is
// therefore counted as a branch target, and a tracked indirect jump adds nothing new.
// `notrack` jumps, and any indirect jump in code without endbr64, are refused.
//
// The relocated copy keeps each instruction whole; only its RIP-relative disp32 and
// relative branches are re-encoded:
//   jmp rel            -> jump to the original target (rel32, or [rip+0] + address)
//   jcc / loop / jrcxz -> `op +2; jmp short over; jump to target; over:`, so the CPU
//                         evaluates the condition and falls through into the copy
#include "arch/entry_patch.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "arch/x86_64/decoding.h"

namespace ft::arch {

using namespace x86;

namespace {

constexpr unsigned kEndbr64Length = 4;
constexpr uint64_t kTopOfCode = ~uint64_t{0} - 0xfff;

// A branch seen by linear decoding: where it is and where it goes. Also counted as
// branches: an endbr64, the landing pad of indirect branches (recorded as a branch to
// itself), and an address computed by an instruction (a RIP-relative operand, an
// immediate): what is taken as an address may be jumped to, or read as code.
struct Branch {
  enum class Kind : uint8_t { Direct, Landing, Reference };
  uint64_t from = 0;
  uint64_t to = 0;
  Kind kind = Kind::Direct;
};

struct IndirectJump {
  uint64_t at = 0;
  bool notrack = false;
};

// What linear decoding of one range found.
struct Scan {
  std::vector<uint64_t> starts;  // instruction addresses, in order
  std::vector<unsigned> ids;     // their Capstone ids
  std::vector<Branch> branches;  // direct targets and landing pads
  std::vector<IndirectJump> indirect_jumps;
};

bool is_jump_or_call(const cs_insn& insn) {
  return in_group(insn, X86_GRP_JUMP) || in_group(insn, X86_GRP_CALL) ||
         in_group(insn, X86_GRP_BRANCH_RELATIVE) || insn.id == X86_INS_XBEGIN;
}

// Decodes `range` instruction by instruction; nullopt and `reason` on bytes that do
// not decode (or an instruction cut by the range's end).
std::optional<Scan> scan_range(const CodeRange& range, std::string& reason) {
  const Decoder& dec = decoder();
  InsnPtr insn(cs_malloc(dec.handle()));
  if (insn == nullptr) {
    reason = "disassembler unavailable";
    return std::nullopt;
  }
  Scan scan;
  const uint8_t* code = range.bytes.data();
  size_t size = range.bytes.size();
  uint64_t addr = range.addr;
  while (size > 0) {
    const uint64_t at = addr;
    if (!cs_disasm_iter(dec.handle(), &code, &size, &addr, insn.get())) {
      reason = fmt::format("undecodable bytes at {:#x}", at);
      return std::nullopt;
    }
    const cs_insn& in = *insn;
    scan.starts.push_back(at);
    scan.ids.push_back(in.id);
    if (in.id == X86_INS_ENDBR64 || in.id == X86_INS_ENDBR32) {
      scan.branches.push_back({.from = at, .to = at, .kind = Branch::Kind::Landing});
      continue;
    }
    const cs_x86& x = in.detail->x86;
    if (!is_jump_or_call(in)) {
      for (uint8_t i = 0; i < x.op_count; ++i) {
        const cs_x86_op& op = x.operands[i];
        uint64_t to = 0;
        if (op.type == X86_OP_IMM) {
          to = static_cast<uint64_t>(op.imm);
        } else if (op.type == X86_OP_MEM && op.mem.base == X86_REG_RIP) {
          to = addr + static_cast<uint64_t>(op.mem.disp);  // addr: the next instruction's
        } else {
          continue;
        }
        scan.branches.push_back({.from = at, .to = to, .kind = Branch::Kind::Reference});
      }
      continue;
    }
    if (x.op_count == 1 && x.operands[0].type == X86_OP_IMM) {
      scan.branches.push_back({.from = at, .to = static_cast<uint64_t>(x.operands[0].imm)});
    } else if (!in_group(in, X86_GRP_CALL)) {
      const Prefixes p = scan_prefixes(std::span<const uint8_t>(in.bytes, in.size));
      scan.indirect_jumps.push_back({at, p.ds});
    }
  }
  return scan;
}

}  // namespace

void branch_targets_x86_64(const CodeRange& range, std::vector<uint64_t>& out) {
  const Decoder& dec = decoder();
  InsnPtr insn(cs_malloc(dec.handle()));
  if (insn == nullptr) return;
  const uint8_t* code = range.bytes.data();
  size_t size = range.bytes.size();
  uint64_t addr = range.addr;
  while (size > 0 && cs_disasm_iter(dec.handle(), &code, &size, &addr, insn.get())) {
    const cs_insn& in = *insn;
    const cs_x86& x = in.detail->x86;
    for (uint8_t i = 0; i < x.op_count; ++i) {
      const cs_x86_op& op = x.operands[i];
      if (op.type == X86_OP_IMM) {
        out.push_back(static_cast<uint64_t>(op.imm));
      } else if (op.type == X86_OP_MEM && op.mem.base == X86_REG_RIP) {
        out.push_back(addr + static_cast<uint64_t>(op.mem.disp));  // addr: the next instruction's
      }
    }
  }
}

namespace {

// Multi-byte nops of 1..8 bytes, as the processor manuals recommend them.
void put_nops(std::vector<uint8_t>& out, size_t n) {
  static constexpr uint8_t kNops[8][8] = {
      {0x90},
      {0x66, 0x90},
      {0x0f, 0x1f, 0x00},
      {0x0f, 0x1f, 0x40, 0x00},
      {0x0f, 0x1f, 0x44, 0x00, 0x00},
      {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},
      {0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00},
      {0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
  };
  while (n > 0) {
    const size_t k = std::min<size_t>(n, 8);
    out.insert(out.end(), kNops[k - 1], kNops[k - 1] + k);
    n -= k;
  }
}

// Why a window instruction cannot run from the trampoline; empty if it can.
std::string unrelocatable(const cs_insn& in) {
  if (in_group(in, X86_GRP_CALL)) return "call in the patched bytes";
  if (in_group(in, X86_GRP_RET) || in_group(in, X86_GRP_IRET)) return "return in the patched bytes";
  if (is_breakpoint_trap(in) || in.id == X86_INS_INT1 || in.id == X86_INS_INT ||
      in.id == X86_INS_INTO || in.id == X86_INS_UD2) {
    return "trap in the patched bytes";
  }
  if (in.id == X86_INS_SYSCALL || in.id == X86_INS_SYSENTER || in_group(in, X86_GRP_INT)) {
    return "system call in the patched bytes";
  }
  if (in_group(in, X86_GRP_PRIVILEGE)) return "privileged instruction in the patched bytes";
  if (is_port_io(in.id)) return "port I/O in the patched bytes";
  return {};
}

// Appends `in` (at its original address) re-encoded for copy + out.size(). Returns
// a refusal reason, or empty.
std::string relocate_into(std::vector<uint8_t>& out, const cs_insn& in, uint64_t copy) {
  if (std::string why = unrelocatable(in); !why.empty()) return why;
  const std::span<const uint8_t> bytes(in.bytes, in.size);
  const uint64_t next = in.address + in.size;
  const Prefixes prefixes = scan_prefixes(bytes);
  const RelBranch br = parse_rel_branch(bytes, prefixes);
  if (br.kind != BranchKind::None || in_group(in, X86_GRP_BRANCH_RELATIVE) ||
      in.id == X86_INS_XBEGIN) {
    if (br.kind == BranchKind::None || br.kind == BranchKind::Call) {
      return fmt::format("relative {} in the patched bytes", in.mnemonic);
    }
    if (prefixes.operand_size) return "operand-size prefix on a relative branch";
    const uint64_t target = next + static_cast<uint64_t>(br.rel);
    const cs_x86& x = in.detail->x86;
    if (x.op_count != 1 || x.operands[0].type != X86_OP_IMM ||
        static_cast<uint64_t>(x.operands[0].imm) != target) {
      return "inconsistent branch decoding";
    }
    if (br.kind == BranchKind::Jump) {
      emit_jump(out, copy, target);
      return {};
    }
    // op +2 (over the short jmp) -> the jump to the target; short jmp -> past it.
    if (br.kind == BranchKind::CountJump) {
      if (prefixes.address_size) out.push_back(0x67);
      out.push_back(br.opcode);
    } else {
      out.push_back(static_cast<uint8_t>(0x70 | br.cond));
    }
    out.push_back(0x02);
    std::vector<uint8_t> jump;
    emit_jump(jump, copy + out.size() + 2, target);
    out.push_back(0xeb);
    out.push_back(static_cast<uint8_t>(jump.size()));
    out.insert(out.end(), jump.begin(), jump.end());
    return {};
  }
  std::string rip_error;
  const std::optional<RipOperand> rip = find_rip_operand(in, rip_error);
  if (!rip_error.empty()) return rip_error;
  const size_t at = out.size();
  out.insert(out.end(), bytes.begin(), bytes.end());
  if (rip) {
    const uint64_t mem = next + static_cast<uint64_t>(static_cast<int64_t>(rip->disp));
    const int64_t disp = distance(copy + at + in.size, mem);
    if (!fits_int32(disp)) return "RIP-relative operand out of reach of the trampoline";
    write_le32(&out[at + rip->disp_offset], static_cast<int32_t>(disp));
  }
  return {};
}

}  // namespace

namespace {

using RegFamily = std::span<const x86_reg>;

bool in_family(x86_reg r, RegFamily family) { return std::find(family.begin(), family.end(), r) != family.end(); }

// The registers a first instruction kept in place may write (besides the flags and,
// by push and sub, rsp): none an argument is passed in, nor rsp or rbp (which the
// recorder reads for the call's stack), nor a callee-saved one. rax carries only a
// variadic call's vector count (read by the callee, never written first); r10 a
// static chain (read, likewise); r11 nothing. Empty for any other register.
RegFamily writable_family(x86_reg r) {
  static constexpr x86_reg kRax[] = {X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL, X86_REG_AH};
  static constexpr x86_reg kR10[] = {X86_REG_R10, X86_REG_R10D, X86_REG_R10W, X86_REG_R10B};
  static constexpr x86_reg kR11[] = {X86_REG_R11, X86_REG_R11D, X86_REG_R11W, X86_REG_R11B};
  for (RegFamily f : {RegFamily(kRax), RegFamily(kR10), RegFamily(kR11)})
    if (in_family(r, f)) return f;
  return {};
}

// How far a first instruction that can stay in place moves the stack pointer down
// (see EntryPatch::kept_length), or nullopt when it cannot stay.
std::optional<int64_t> kept_stack_delta(const cs_insn& in) {
  const cs_x86& x = in.detail->x86;
  switch (in.id) {
    case X86_INS_TEST:
    case X86_INS_CMP:
      return 0;
    case X86_INS_PUSH:
      if (x.op_count == 1 && x.operands[0].type == X86_OP_REG && x.operands[0].size == 8) return 8;
      return std::nullopt;
    case X86_INS_SUB:
      if (x.op_count == 2 && x.operands[0].type == X86_OP_REG && x.operands[0].reg == X86_REG_RSP &&
          x.operands[1].type == X86_OP_IMM && x.operands[1].imm > 0 && x.operands[1].imm % 8 == 0 &&
          x.operands[1].imm <= (1 << 20))
        return x.operands[1].imm;
      return std::nullopt;
    case X86_INS_MOV:
    case X86_INS_MOVABS:
    case X86_INS_MOVZX:
    case X86_INS_MOVSXD:
    case X86_INS_LEA: {
      if (x.op_count != 2 || x.operands[0].type != X86_OP_REG) return std::nullopt;
      const auto family = writable_family(x.operands[0].reg);
      if (family.empty()) return std::nullopt;
      const cs_x86_op& src = x.operands[1];
      if (src.type == X86_OP_REG && in_family(src.reg, family)) return std::nullopt;
      if (src.type == X86_OP_MEM && (in_family(src.mem.base, family) || in_family(src.mem.index, family)))
        return std::nullopt;
      return 0;
    }
    default:
      return std::nullopt;
  }
}

// The patch with its window starting at instruction `first` of the body, the bytes
// before it (patch_offset of them) staying in place.
EntryPatch plan_window(const EntryPatchRequest& req, const Scan& body, size_t first, unsigned patch_offset) {
  EntryPatch patch;
  patch.patch_offset = patch_offset;
  const uint64_t patch_addr = req.entry + patch.patch_offset;
  const uint64_t size = req.function.size();
  size_t last = first;  // one past the window's last instruction
  while (last < body.starts.size() && body.starts[last] < patch_addr + kJmpRel32Length) ++last;
  const uint64_t window_end = last < body.starts.size() ? body.starts[last] : req.entry + size;
  if (window_end < patch_addr + kJmpRel32Length) {
    return refuse_entry_patch(
        fmt::format("function too short ({} byte{})", size, size == 1 ? "" : "s"));
  }
  patch.window_length = static_cast<unsigned>(window_end - req.entry);
  const auto inside = [&](uint64_t a) { return a > req.entry && a < window_end; };

  // Every branch that can be seen, against the window.
  std::string reason;
  std::vector<IndirectJump> indirect = body.indirect_jumps;
  const auto check_branches = [&](const Scan& scan) -> std::string {
    for (const Branch& b : scan.branches) {
      if (!inside(b.to)) continue;
      switch (b.kind) {
        case Branch::Kind::Landing:
          return fmt::format("endbr64 inside the patched bytes at {:#x}", b.to);
        case Branch::Kind::Reference:
          return fmt::format("address inside the patched bytes taken at {:#x}", b.from);
        case Branch::Kind::Direct:
          break;
      }
      return fmt::format("branch into the patched bytes at {:#x} from {:#x}", b.to, b.from);
    }
    return {};
  };
  if (std::string why = check_branches(body); !why.empty()) return refuse_entry_patch(why);
  for (const CodeRange& part : req.other_parts) {
    const std::optional<Scan> scan = scan_range(part, reason);
    if (!scan) return refuse_entry_patch(reason + " (other part)");
    if (std::string why = check_branches(*scan); !why.empty()) return refuse_entry_patch(why);
    indirect.insert(indirect.end(), scan->indirect_jumps.begin(), scan->indirect_jumps.end());
  }
  for (uint64_t t : req.branch_targets) {
    if (inside(t)) {
      return refuse_entry_patch(fmt::format("known branch target {:#x} inside the patched bytes", t));
    }
  }
  const bool ibt = body.ids.front() == X86_INS_ENDBR64;
  for (const IndirectJump& j : indirect) {
    if (j.notrack) {
      return refuse_entry_patch(fmt::format("notrack indirect jump at {:#x} (jump table)", j.at));
    }
    if (!ibt) {
      return refuse_entry_patch(fmt::format("indirect jump at {:#x} (targets unknown)", j.at));
    }
  }

  // The copy, instruction by instruction.
  const Decoder& dec = decoder();
  for (size_t i = first; i < last; ++i) {
    const uint64_t at = body.starts[i];
    const InsnPtr insn = dec.decode(req.function.subspan(at - req.entry), at);
    if (insn == nullptr) return refuse_entry_patch(fmt::format("undecodable bytes at {:#x}", at));
    patch.moved_pcs.push_back({.from = static_cast<unsigned>(at - req.entry),
                               .to = static_cast<unsigned>(patch.relocated.size())});
    if (std::string why = relocate_into(patch.relocated, *insn, req.copy); !why.empty()) {
      return refuse_entry_patch(why);
    }
  }
  emit_jump(patch.relocated, req.copy, window_end);

  // The jump at the entry.
  const int64_t rel = distance(patch_addr + kJmpRel32Length, req.trampoline);
  if (!fits_int32(rel)) return refuse_entry_patch("trampoline out of reach of a jmp rel32");
  patch.patch.push_back(0xe9);
  put_le32(patch.patch, static_cast<uint32_t>(rel));
  put_nops(patch.patch, window_end - patch_addr - kJmpRel32Length);
  patch.original.assign(req.function.begin() + patch.patch_offset,
                        req.function.begin() + patch.window_length);
  patch.ok = true;
  return patch;
}

}  // namespace

EntryPatch plan_entry_patch_x86_64(const EntryPatchRequest& req) {
  if (req.function.empty()) return refuse_entry_patch("no code bytes");
  // Window arithmetic on addresses must not wrap; no code lives in the last page.
  if (req.entry > kTopOfCode || req.function.size() > kTopOfCode - req.entry) {
    return refuse_entry_patch("code at the top of the address space");
  }
  if (!decoder().ok()) return refuse_entry_patch("disassembler unavailable");

  std::string reason;
  const std::optional<Scan> body = scan_range({req.function, req.entry}, reason);
  if (!body) return refuse_entry_patch(reason);

  // endbr64 stays; then the first instruction stays too where it can, else the window
  // starts with it.
  const bool endbr = body->ids.front() == X86_INS_ENDBR64;
  const size_t first = endbr ? 1 : 0;
  const unsigned offset = endbr ? kEndbr64Length : 0;
  if (first + 1 < body->starts.size()) {
    const uint64_t at = body->starts[first];
    const InsnPtr insn = decoder().decode(req.function.subspan(at - req.entry), at);
    const std::optional<int64_t> delta = insn ? kept_stack_delta(*insn) : std::nullopt;
    if (delta) {
      const unsigned length = static_cast<unsigned>(body->starts[first + 1] - at);
      EntryPatch patch = plan_window(req, *body, first + 1, offset + length);
      std::vector<uint8_t> kept;
      const uint64_t kept_at = req.copy + patch.relocated.size() + req.kept_copy_gap;
      if (patch.ok && relocate_into(kept, *insn, kept_at).empty()) {
        emit_jump(kept, kept_at, req.copy);
        patch.kept_length = length;
        patch.stack_delta = *delta;
        patch.kept_relocated = std::move(kept);
        return patch;
      }
    }
  }
  return plan_window(req, *body, first, offset);
}

}  // namespace ft::arch
