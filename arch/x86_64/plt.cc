#include <cstring>

#include "arch/plt.h"

namespace ft::arch {

void decode_plt_x86_64(std::span<const uint8_t> code, uint64_t base,
                       const std::function<bool(uint64_t)>& is_slot, std::vector<PltStub>& out) {
  static constexpr uint8_t kEndbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
  const uint8_t* b = code.data();
  const size_t n = code.size();
  for (size_t i = 0; i + 6 <= n;) {
    if (b[i] == 0xff && b[i + 1] == 0x25) {
      uint32_t raw = static_cast<uint32_t>(b[i + 2]) | static_cast<uint32_t>(b[i + 3]) << 8 |
                     static_cast<uint32_t>(b[i + 4]) << 16 | static_cast<uint32_t>(b[i + 5]) << 24;
      auto disp = static_cast<int32_t>(raw);
      uint64_t target = base + i + 6 + static_cast<uint64_t>(static_cast<int64_t>(disp));
      if (is_slot(target)) {
        size_t start = i;
        if (start >= 1 && (b[start - 1] == 0xf2 || b[start - 1] == 0x3e)) --start;  // bnd, notrack
        if (start >= 4 && std::memcmp(b + start - 4, kEndbr64, 4) == 0) start -= 4;
        if (start % 8 == 0) {
          out.push_back(PltStub{base + start, target});
          i += 6;
          continue;
        }
      }
    }
    ++i;
  }
}

}  // namespace ft::arch
