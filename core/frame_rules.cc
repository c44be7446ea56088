#include "core/frame_rules.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <libelf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "arch/arch.h"
#include "core/elf_image.h"

namespace ft {
namespace {

struct FreeFrame {
  void operator()(Dwarf_Frame* f) const { std::free(f); }
};

// The CFA rule: a single "register + offset" on rsp or rbp.
bool cfa_rule(Dwarf_Frame* frame, FrameRule& r) {
  Dwarf_Op* ops = nullptr;
  size_t nops = 0;
  if (dwarf_frame_cfa(frame, &ops, &nops) != 0 || nops != 1 || !ops) return false;
  int reg;
  int64_t off;
  if (ops[0].atom == DW_OP_bregx) {
    reg = static_cast<int>(ops[0].number);
    off = static_cast<int64_t>(ops[0].number2);
  } else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
    reg = ops[0].atom - DW_OP_breg0;
    off = static_cast<int64_t>(ops[0].number);
  } else {
    return false;
  }
  if (reg == arch::host().stack_pointer) r.cfa_base = FrameRule::Base::Sp;
  else if (reg == arch::host().frame_pointer) r.cfa_base = FrameRule::Base::Bp;
  else return false;
  r.cfa_off = off;
  return true;
}

// A register's rule: same value, undefined, or (the location or the value) CFA + k.
bool register_rule(Dwarf_Frame* frame, int regno, FrameRule::Saved& how, int64_t& off) {
  Dwarf_Op mem[3];
  Dwarf_Op* ops = nullptr;
  size_t nops = 0;
  if (dwarf_frame_register(frame, regno, mem, &ops, &nops) != 0) return false;
  off = 0;
  if (nops == 0) {
    how = ops ? FrameRule::Saved::Undefined : FrameRule::Saved::Same;
    return true;
  }
  if (ops[0].atom != DW_OP_call_frame_cfa) return false;
  size_t i = 1;
  if (i < nops && ops[i].atom == DW_OP_plus_uconst) {
    off = static_cast<int64_t>(ops[i].number);  // a negative offset arrives wrapped
    ++i;
  } else if (i + 1 < nops && ops[i].atom == DW_OP_consts && ops[i + 1].atom == DW_OP_plus) {
    off = static_cast<int64_t>(ops[i].number);
    i += 2;
  }
  how = FrameRule::Saved::AtCfa;
  if (i < nops && ops[i].atom == DW_OP_stack_value) {
    how = FrameRule::Saved::IsCfa;
    ++i;
  }
  return i == nops;
}

constexpr uint8_t kDwEhPeUdata4 = 0x03, kDwEhPeSdata4 = 0x0b, kDwEhPeDatarel = 0x30;

}  // namespace

std::optional<EhFrameTable> eh_frame_table(const ElfImage& elf) {
  if (elf.eh_frame_hdr() == 0) return std::nullopt;
  auto hdr = elf.read_only_bytes(elf.eh_frame_hdr(), 12);
  if (hdr.size() != 12 || hdr[0] != 1) return std::nullopt;
  uint8_t ptr_enc = hdr[1], count_enc = hdr[2], table_enc = hdr[3];
  if ((ptr_enc & 0x0f) != kDwEhPeSdata4 && (ptr_enc & 0x0f) != kDwEhPeUdata4) return std::nullopt;
  if (count_enc != kDwEhPeUdata4 || table_enc != (kDwEhPeDatarel | kDwEhPeSdata4)) return std::nullopt;
  EhFrameTable t;
  std::memcpy(&t.count, hdr.data() + 8, 4);
  t.hdr = elf.eh_frame_hdr();
  t.table = t.hdr + 12;
  return t;
}

std::vector<uint64_t> fde_starts(const ElfImage& elf) {
  std::vector<uint64_t> out;
  auto t = eh_frame_table(elf);
  if (!t) return out;
  auto pairs = elf.read_only_bytes(t->table, uint64_t{t->count} * 8);
  if (pairs.size() != uint64_t{t->count} * 8) return out;
  out.reserve(t->count);
  for (uint32_t i = 0; i < t->count; ++i) {
    int32_t loc = 0;
    std::memcpy(&loc, pairs.data() + 8 * i, 4);
    out.push_back(t->hdr + static_cast<uint64_t>(static_cast<int64_t>(loc)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct ModuleCfi::Handles {
  Elf* elf = nullptr;
  Dwarf_CFI* cfi = nullptr;
  ~Handles() {
    if (cfi) dwarf_cfi_end(cfi);
    if (elf) elf_end(elf);
  }
};

std::unique_ptr<ModuleCfi> ModuleCfi::open(const ElfImage& image) {
  auto bytes = image.file_bytes();
  if (bytes.empty()) return nullptr;
  elf_version(EV_CURRENT);
  auto h = std::make_unique<Handles>();
  // libelf reads the image in place and does not write to it.
  h->elf = elf_memory(const_cast<char*>(reinterpret_cast<const char*>(bytes.data())), bytes.size());
  if (!h->elf) return nullptr;
  h->cfi = dwarf_getcfi_elf(h->elf);
  if (!h->cfi) return nullptr;
  std::unique_ptr<ModuleCfi> m(new ModuleCfi);
  m->h_ = std::move(h);
  return m;
}

ModuleCfi::~ModuleCfi() = default;

std::optional<FrameRule> ModuleCfi::rule_at(uint64_t pc) const { return rule_at(pc, nullptr, nullptr); }

std::optional<FrameRule> ModuleCfi::rule_at(uint64_t pc, uint64_t* start, uint64_t* end) const {
  if (end) *end = 0;
  Dwarf_Frame* raw = nullptr;
  if (dwarf_cfi_addrframe(h_->cfi, pc, &raw) != 0 || !raw) return std::nullopt;
  std::unique_ptr<Dwarf_Frame, FreeFrame> frame(raw);
  bool signal = false;
  Dwarf_Addr lo = 0, hi = 0;
  int ra_reg = dwarf_frame_info(frame.get(), &lo, &hi, &signal);
  if (start) *start = lo;
  if (end) *end = hi;
  if (ra_reg < 0 || signal) return std::nullopt;
  FrameRule r;
  if (!cfa_rule(frame.get(), r)) return std::nullopt;
  if (!register_rule(frame.get(), ra_reg, r.ra, r.ra_off)) return std::nullopt;
  if (r.ra == FrameRule::Saved::Same || r.ra == FrameRule::Saved::IsCfa) return std::nullopt;
  if (!register_rule(frame.get(), arch::host().frame_pointer, r.bp, r.bp_off)) return std::nullopt;
  // Where the caller's rsp is not simply the CFA, leave the frame to libunwind.
  FrameRule::Saved sp_how;
  int64_t sp_off = 0;
  if (!register_rule(frame.get(), arch::host().stack_pointer, sp_how, sp_off)) return std::nullopt;
  if (!(sp_how == FrameRule::Saved::Same || (sp_how == FrameRule::Saved::IsCfa && sp_off == 0))) return std::nullopt;
  return r;
}

}  // namespace ft
