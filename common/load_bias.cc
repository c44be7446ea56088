#include "common/load_bias.h"

namespace ft {

std::optional<uint64_t> load_bias(bool dyn, std::span<const LoadSegment> loads, uint64_t base,
                                  uint64_t offset, uint64_t page_size) {
  if (!dyn) return 0;
  const uint64_t page_mask = ~(page_size - 1);
  for (const LoadSegment& s : loads) {
    if ((s.offset & page_mask) == offset) return base - (s.vaddr & page_mask);
  }
  // Inside a segment, or pages larger than page_size: within 64 KiB before the
  // segment's first byte (the largest page size in use) up to its last file byte.
  constexpr uint64_t kLargestPage = 0x10000;
  for (const LoadSegment& s : loads) {
    if (offset + kLargestPage > s.offset && offset < s.offset + (s.filesz > 0 ? s.filesz : 1)) {
      return base - (s.vaddr + offset - s.offset);
    }
  }
  return std::nullopt;
}

}  // namespace ft
