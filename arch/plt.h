// PLT stub decoding. A PLT stub is a few instructions that load a GOT slot and jump
// to the address it holds; the relocation at that slot (JUMP_SLOT, GLOB_DAT or
// IRELATIVE) names the function, so a stub is identified by decoding which slot it
// loads. The decoder of each architecture (arch/<arch>/plt.cc) scans a PLT section's
// bytes for its stub pattern; the ELF reader (core/elf_image.cc) matches the slots.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace ft::arch {

struct PltStub {
  uint64_t addr = 0;      // link-time address of the stub's first instruction
  uint64_t got_slot = 0;  // link-time address of the GOT slot it jumps through
};

// Decodes the stubs of a section whose bytes are `code`, at link-time address base,
// appending to out every stub whose GOT slot is_slot accepts.
using PltDecoder = void (*)(std::span<const uint8_t> code, uint64_t base,
                            const std::function<bool(uint64_t)>& is_slot, std::vector<PltStub>& out);

// x86-64: every `jmp *disp32(%rip)` (ff 25) through a known slot starts a stub, together
// with an immediately preceding bnd / notrack prefix and endbr64, 8-byte aligned.
void decode_plt_x86_64(std::span<const uint8_t> code, uint64_t base,
                       const std::function<bool(uint64_t)>& is_slot, std::vector<PltStub>& out);
// AArch64: `adrp x16, page; ldr x17, [x16, #off]` loads the slot; a preceding `bti c`
// belongs to the stub.
void decode_plt_aarch64(std::span<const uint8_t> code, uint64_t base,
                        const std::function<bool(uint64_t)>& is_slot, std::vector<PltStub>& out);

}  // namespace ft::arch
