#include "arch/plt.h"

namespace ft::arch {
namespace {

uint32_t insn_at(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

}  // namespace

void decode_plt_aarch64(std::span<const uint8_t> code, uint64_t base,
                        const std::function<bool(uint64_t)>& is_slot, std::vector<PltStub>& out) {
  constexpr uint32_t kBtiC = 0xd503245f;
  const uint8_t* b = code.data();
  const size_t n = code.size();
  for (size_t i = 0; i + 8 <= n; i += 4) {
    uint32_t adrp = insn_at(b + i);
    uint32_t ldr = insn_at(b + i + 4);
    if ((adrp & 0x9f00001fu) != 0x90000010u) continue;  // adrp x16, ...
    if ((ldr & 0xffc003ffu) != 0xf9400211u) continue;   // ldr x17, [x16, #imm12 * 8]
    uint64_t imm = ((adrp >> 29) & 3u) | (((adrp >> 5) & 0x7ffffu) << 2);
    if (imm & (1u << 20)) imm |= ~uint64_t{0} << 21;  // sign-extend 21 bits
    uint64_t page = ((base + i) & ~uint64_t{0xfff}) + (imm << 12);
    uint64_t target = page + ((ldr >> 10) & 0xfffu) * 8;
    if (!is_slot(target)) continue;
    size_t start = i;
    if (start >= 4 && insn_at(b + start - 4) == kBtiC) start -= 4;
    out.push_back(PltStub{base + start, target});
  }
}

}  // namespace ft::arch
