#include "core/stack_table.h"

#include <algorithm>

#include "common/trace_record.h"

namespace ft {

StackTable::StackTable(size_t max_stacks, size_t max_frames)
    : max_stacks_(std::min<size_t>(max_stacks, UINT32_MAX - 1)), max_frames_(max_frames), slots_(1024, 0) {}

uint64_t StackTable::hash(const uint64_t* frames, size_t n) {
  // Return addresses differ mostly in their low bits; each is mixed in with a
  // multiply-xorshift step so that stacks differing in one frame spread over slots.
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
  for (size_t i = 0; i < n; ++i) {
    h ^= frames[i];
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
  }
  h *= 0x94d049bb133111ebULL;
  return h ^ (h >> 29);
}

bool StackTable::same(const Entry& e, const uint64_t* frames, size_t n) const {
  return e.count == n && std::equal(frames, frames + n, frames_.begin() + static_cast<ptrdiff_t>(e.offset));
}

void StackTable::grow() {
  std::vector<uint32_t> slots(slots_.size() * 2, 0);
  size_t mask = slots.size() - 1;
  for (size_t i = 0; i < entries_.size(); ++i) {
    size_t s = entries_[i].hash & mask;
    while (slots[s] != 0) s = (s + 1) & mask;
    slots[s] = static_cast<uint32_t>(i + 1);
  }
  slots_.swap(slots);
}

StackTable::Interned StackTable::intern(const uint64_t* frames, size_t n) {
  if (n == 0 || n > kMaxStackFrames) return {};
  uint64_t h64 = hash(frames, n);
  uint32_t h = static_cast<uint32_t>(h64 ^ (h64 >> 32));
  size_t mask = slots_.size() - 1;
  size_t s = h & mask;
  for (; slots_[s] != 0; s = (s + 1) & mask) {
    const Entry& e = entries_[slots_[s] - 1];
    if (e.hash == h && same(e, frames, n)) return {slots_[s], false};
  }
  if (entries_.size() >= max_stacks_ || frames_.size() + n > max_frames_ || n > UINT32_MAX) {
    ++refused_;
    return {};
  }
  entries_.push_back({frames_.size(), static_cast<uint32_t>(n), h});
  frames_.insert(frames_.end(), frames, frames + n);
  uint32_t id = static_cast<uint32_t>(entries_.size());
  slots_[s] = id;
  if (entries_.size() * 2 > slots_.size()) grow();  // at most half full: short probes
  return {id, true};
}

}  // namespace ft
