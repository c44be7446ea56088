#include "core/ssol_area.h"

namespace ft {

bool SsolArea::near(RemoteAddr a) const {
  constexpr uint64_t kReach = (1ull << 31) - kSize - (1ull << 20);
  uint64_t lo = base_.value(), v = a.value();
  return v >= lo ? v - lo < kReach : lo - v < kReach;
}

RemoteAddr SsolArea::allocate(uint64_t bytes) {
  uint64_t n = (bytes + kSlotSize - 1) / kSlotSize * kSlotSize;
  if (next_ + n > kSize) return RemoteAddr();
  RemoteAddr at = base_ + static_cast<int64_t>(next_);
  next_ += n;
  return at;
}

RemoteAddr SsolArea::allocate_slot() {
  if (next_ + kSlotSize > kSize) return RemoteAddr();
  RemoteAddr slot = base_ + static_cast<int64_t>(next_);
  next_ += kSlotSize;
  return slot;
}

}  // namespace ft
