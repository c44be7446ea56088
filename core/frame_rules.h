// FrameRules: how to go from a frame to its caller's at one code address of a module,
// read from the module's .eh_frame with libdw (dwarf_getcfi_elf, dwarf_cfi_addrframe)
// and reduced to the few numbers an x86-64 stack walk needs.
//
// Nearly every frame of compiled code is described by "the CFA is rsp or rbp plus a
// constant, the return address is saved at CFA + k, rbp is unchanged or saved at
// CFA + k". Such a rule, once known for an address, lets the backtracer step through a
// frame with two reads from its stack window and no further work. Anything else (a
// DWARF expression, a signal frame, a CFA on another register, no CFI at all) is not
// reduced: the caller then lets libunwind walk the whole stack.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace ft {

class ElfImage;

// .eh_frame_hdr's binary-search table (LSB, "Exception Frame Header"): version 1,
// three encodings, the encoded .eh_frame pointer and FDE count, then (initial
// location, FDE) pairs. Only what every linker writes is accepted: a 4-byte FDE count
// and a table of datarel sdata4 pairs. Addresses are link-time.
struct EhFrameTable {
  uint64_t hdr = 0;    // .eh_frame_hdr itself: the base of the table's datarel values
  uint64_t table = 0;  // the first pair
  uint32_t count = 0;
};
std::optional<EhFrameTable> eh_frame_table(const ElfImage& elf);
// The link-time start of every function .eh_frame describes, sorted (empty if none).
std::vector<uint64_t> fde_starts(const ElfImage& elf);

struct FrameRule {
  enum class Base : uint8_t { Sp, Bp };
  // How the caller's value of a register is found: unchanged, lost (undefined), stored
  // in memory at CFA + off, or equal to CFA + off.
  enum class Saved : uint8_t { Same, Undefined, AtCfa, IsCfa };
  Base cfa_base = Base::Sp;
  Saved ra = Saved::AtCfa;  // Undefined: the outermost frame (_start, a thread's start)
  Saved bp = Saved::Same;
  int64_t cfa_off = 0, ra_off = 0, bp_off = 0;
};

class ModuleCfi {
 public:
  // The call frame information of elf's .eh_frame; nullptr if it has none or libdw
  // cannot read it. elf must outlive the result.
  static std::unique_ptr<ModuleCfi> open(const ElfImage& elf);
  ~ModuleCfi();
  ModuleCfi(const ModuleCfi&) = delete;
  ModuleCfi& operator=(const ModuleCfi&) = delete;

  // The rule at link-time address pc, if it has the simple form above and is not a
  // signal frame.
  std::optional<FrameRule> rule_at(uint64_t pc) const;
  // The same, and the link-time range [*start, *end) the CFI row holding pc covers
  // (whether or not its rule has that form); *end is 0 when no CFI covers pc.
  std::optional<FrameRule> rule_at(uint64_t pc, uint64_t* start, uint64_t* end) const;

 private:
  ModuleCfi() = default;
  struct Handles;
  std::unique_ptr<Handles> h_;
};

}  // namespace ft
