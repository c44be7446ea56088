// Fuzz target: the instruction relocators (x86-64 and AArch64) on arbitrary code
// bytes at arbitrary addresses. Whatever the bytes, the relocator decides (emulate,
// run out of line, or refuse with a reason) within the promised bounds.
#include <cstdint>
#include <cstring>
#include <span>

#include "arch/relocation.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

void check(const ft::arch::Relocation& r, size_t code_size, unsigned max_insn) {
  using Kind = ft::arch::Relocation::Kind;
  switch (r.kind) {
    case Kind::Refuse:
      ft::fuzz::require(!r.reason.empty(), "a refusal says why");
      break;
    case Kind::Emulate:
      ft::fuzz::require(r.insn_length > 0 && r.insn_length <= code_size &&
                            r.insn_length <= max_insn,
                        "an emulated instruction lies in the bytes given");
      break;
    case Kind::OutOfLine:
      ft::fuzz::require(r.insn_length > 0 && r.insn_length <= code_size &&
                            r.insn_length <= max_insn,
                        "a relocated instruction lies in the bytes given");
      ft::fuzz::require(!r.slot_code.empty() && r.slot_code.size() <= ft::arch::kMaxSlotCode,
                        "slot code fits a slot");
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The first 16 bytes choose the instruction's and the slot's addresses; the rest is
  // the code at the breakpoint.
  if (size < 16) return 0;
  uint64_t insn_addr = 0, slot_delta = 0;
  std::memcpy(&insn_addr, data, 8);
  std::memcpy(&slot_delta, data + 8, 8);
  // Slots are mapped near the code (within +-2 GiB) in practice, but any distance
  // must be refused cleanly rather than mis-encoded.
  uint64_t slot_addr = (slot_delta & 1) ? insn_addr + (static_cast<int64_t>(slot_delta) >> 33)
                                        : slot_delta;
  std::span<const uint8_t> code(data + 16, size - 16);
  if (code.size() > ft::arch::kMaxInsnBytes) code = code.first(ft::arch::kMaxInsnBytes);
  check(ft::arch::relocate_x86_64(code, insn_addr, slot_addr), code.size(), 15);
  check(ft::arch::relocate_aarch64(code, insn_addr & ~uint64_t{3}, slot_addr & ~uint64_t{3}),
        code.size(), 4);
  return 0;
}
