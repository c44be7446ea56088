// AArch64 entry patch analysis (arch/entry_patch.h).
//
// The patch is one `b` (4 bytes, +-128 MiB) over the first instruction, so the window
// is one instruction. A `bti` at the entry stays there (indirect calls land on it when
// BTI is enforced, like endbr64 on x86-64) and the window is the instruction after it.
//
// Branches are found from their fixed encodings, word by word over the body: b, bl,
// b.cond, cbz/cbnz, tbz/tbnz (targets), adr and ldr literal (addresses taken), and
// every bti, pacia/bsp (landing pads of indirect branches). An indirect `br` is refused
// unless the function starts with a bti: in BTI code every `br` must land on a landing
// pad, and those are all checked. adrp names a 4 KiB page, not an address: a page
// holding the window is not treated as a reference (code addresses are formed with
// adr or adrp + add; the add is not followed).
//
// The window's instruction is relocated by relocate_aarch64 (arch/aarch64/relocator.cc),
// which rewrites the PC-relative classes for the copy's address.
#include <fmt/format.h>

#include "arch/entry_patch.h"
#include "arch/relocation.h"

namespace ft::arch {

namespace {

constexpr unsigned kInsnSize = 4;
constexpr uint32_t kB = 0x14000000;
constexpr int64_t kBReach = int64_t{1} << 27;
constexpr uint64_t kTopOfCode = ~uint64_t{0} - 0xfff;

uint32_t word_at(std::span<const uint8_t> code, size_t offset) {
  uint32_t w = 0;
  for (unsigned i = 0; i < kInsnSize; ++i) w |= static_cast<uint32_t>(code[offset + i]) << (8 * i);
  return w;
}

int64_t sign_extend(uint64_t value, unsigned bits) {
  const uint64_t sign = uint64_t{1} << (bits - 1);
  value &= (uint64_t{1} << bits) - 1;
  return static_cast<int64_t>((value ^ sign) - sign);
}

bool is_bti(uint32_t w) { return (w & 0xffffff3f) == 0xd503241f; }
bool is_pac_landing(uint32_t w) { return w == 0xd503233f || w == 0xd503237f; }  // paci[ab]sp
bool is_br(uint32_t w) {
  return (w & 0xfffffc1f) == 0xd61f0000 || (w & 0xfefff800) == 0xd61f0800;  // br, bra[ab][z]
}

struct Word {
  enum class Kind : uint8_t { Other, Target, Reference, Landing, IndirectJump };
  Kind kind = Kind::Other;
  uint64_t to = 0;
};

Word classify(uint32_t w, uint64_t pc) {
  const auto at = [pc](int64_t delta) { return pc + static_cast<uint64_t>(delta); };
  if ((w & 0x7c000000) == 0x14000000) return {Word::Kind::Target, at(sign_extend(w, 26) * 4)};
  if ((w & 0xff000000) == 0x54000000 || (w & 0x7e000000) == 0x34000000) {
    return {Word::Kind::Target, at(sign_extend(w >> 5, 19) * 4)};  // b.cond, cbz, cbnz
  }
  if ((w & 0x7e000000) == 0x36000000) return {Word::Kind::Target, at(sign_extend(w >> 5, 14) * 4)};
  if ((w & 0x9f000000) == 0x10000000) {  // adr
    return {Word::Kind::Reference, at(sign_extend(((w >> 5) & 0x7ffff) << 2 | ((w >> 29) & 3), 21))};
  }
  if ((w & 0x3b000000) == 0x18000000) return {Word::Kind::Reference, at(sign_extend(w >> 5, 19) * 4)};
  if (is_bti(w) || is_pac_landing(w)) return {Word::Kind::Landing, pc};
  if (is_br(w)) return {Word::Kind::IndirectJump, pc};
  return {};
}

// Why the window's instruction cannot run from the copy; empty if it can.
std::string unrelocatable(uint32_t w) {
  if ((w & 0x7c000000) == 0x14000000 && (w & 0x80000000) != 0) return "call in the patched bytes";
  if ((w & 0xfe000000) == 0xd6000000) {
    const uint32_t opc = (w >> 21) & 0xf;
    if (opc == 1 || opc == 9) return "call in the patched bytes";
    if (opc == 2 || opc == 10 || opc == 4) return "return in the patched bytes";
  }
  if ((w & 0xff000000) == 0xd4000000) return "exception or trap in the patched bytes";
  if ((w & 0xffff0000) == 0) return "trap in the patched bytes";  // udf
  return {};
}

}  // namespace

void branch_targets_aarch64(const CodeRange& range, std::vector<uint64_t>& out) {
  if (range.addr % kInsnSize != 0) return;
  for (size_t off = 0; off + kInsnSize <= range.bytes.size(); off += kInsnSize) {
    const Word w = classify(word_at(range.bytes, off), range.addr + off);
    if (w.kind == Word::Kind::Target || w.kind == Word::Kind::Reference) out.push_back(w.to);
  }
}

EntryPatch plan_entry_patch_aarch64(const EntryPatchRequest& req) {
  const std::span<const uint8_t> fn = req.function;
  if (fn.empty()) return refuse_entry_patch("no code bytes");
  if (req.entry > kTopOfCode || fn.size() > kTopOfCode - req.entry) {
    return refuse_entry_patch("code at the top of the address space");
  }
  if (req.entry % kInsnSize != 0 || fn.size() % kInsnSize != 0 || req.copy % kInsnSize != 0 ||
      req.trampoline % kInsnSize != 0) {
    return refuse_entry_patch("misaligned code");
  }

  EntryPatch patch;
  patch.patch_offset = is_bti(word_at(fn, 0)) ? kInsnSize : 0;
  patch.window_length = patch.patch_offset + kInsnSize;
  if (fn.size() < patch.window_length) {
    return refuse_entry_patch(fmt::format("function too short ({} bytes)", fn.size()));
  }
  const uint64_t window_end = req.entry + patch.window_length;
  const auto inside = [&](uint64_t a) { return a > req.entry && a < window_end; };

  const auto check = [&](std::span<const uint8_t> code, uint64_t addr) -> std::string {
    if (code.size() % kInsnSize != 0 || addr % kInsnSize != 0) return "misaligned code (other part)";
    for (size_t off = 0; off < code.size(); off += kInsnSize) {
      const uint64_t pc = addr + off;
      const Word w = classify(word_at(code, off), pc);
      switch (w.kind) {
        case Word::Kind::Other:
          break;
        case Word::Kind::IndirectJump:
          if (patch.patch_offset == 0) return fmt::format("indirect jump at {:#x} (targets unknown)", pc);
          break;
        case Word::Kind::Landing:
          if (inside(w.to)) return fmt::format("landing pad inside the patched bytes at {:#x}", pc);
          break;
        case Word::Kind::Reference:
          if (inside(w.to)) return fmt::format("address inside the patched bytes taken at {:#x}", pc);
          break;
        case Word::Kind::Target:
          if (inside(w.to)) {
            return fmt::format("branch into the patched bytes at {:#x} from {:#x}", w.to, pc);
          }
          break;
      }
    }
    return {};
  };
  if (std::string why = check(fn, req.entry); !why.empty()) return refuse_entry_patch(why);
  for (const CodeRange& part : req.other_parts) {
    if (std::string why = check(part.bytes, part.addr); !why.empty()) return refuse_entry_patch(why);
  }
  for (uint64_t t : req.branch_targets) {
    if (inside(t)) {
      return refuse_entry_patch(fmt::format("known branch target {:#x} inside the patched bytes", t));
    }
  }

  const uint64_t patch_addr = req.entry + patch.patch_offset;
  const uint32_t insn = word_at(fn, patch.patch_offset);
  if (std::string why = unrelocatable(insn); !why.empty()) return refuse_entry_patch(why);
  Relocation r = relocate_aarch64(fn.subspan(patch.patch_offset, kInsnSize), patch_addr, req.copy);
  if (r.kind == Relocation::Kind::Refuse) return refuse_entry_patch(r.reason);
  if (r.kind == Relocation::Kind::Emulate) {
    // b, nop-like hints: the same branch from the copy; anything else is refused.
    const int64_t rel = static_cast<int64_t>(r.emulation.target.value() - req.copy);
    if (r.emulation.kind != Emulation::Kind::SetIp || rel < -kBReach || rel >= kBReach) {
      return refuse_entry_patch("branch in the patched bytes out of reach of the copy");
    }
    const uint32_t b = kB | (static_cast<uint32_t>(rel >> 2) & 0x03ffffff);
    for (unsigned i = 0; i < kInsnSize; ++i) patch.relocated.push_back(static_cast<uint8_t>(b >> (8 * i)));
  } else {
    patch.relocated = std::move(r.slot_code);  // ends in the jump back to window_end
  }
  patch.moved_pcs.push_back({.from = patch.patch_offset, .to = 0});

  const int64_t rel = static_cast<int64_t>(req.trampoline - patch_addr);
  if (rel < -kBReach || rel >= kBReach) return refuse_entry_patch("trampoline out of reach of a b");
  const uint32_t b = kB | (static_cast<uint32_t>(rel >> 2) & 0x03ffffff);
  for (unsigned i = 0; i < kInsnSize; ++i) patch.patch.push_back(static_cast<uint8_t>(b >> (8 * i)));
  patch.original.assign(fn.begin() + patch.patch_offset, fn.begin() + patch.window_length);
  patch.ok = true;
  return patch;
}

}  // namespace ft::arch
