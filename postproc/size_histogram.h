// SizeHistogram: allocations by size in power-of-two buckets (0, 1, 2-3, 4-7, ...,
// 2^(k-1)..2^k-1), with their bytes and how many of them leaked, gathered in one heap
// replay. The histogram report lists it, the html page draws it.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "postproc/heap_replay.h"

namespace ft::post {

struct SizeBucket {
  uint64_t allocations = 0;
  uint64_t bytes = 0;
  uint64_t leaked = 0;
};

class SizeHistogram : public HeapObserver {
 public:
  // Bucket 0 holds size 0; bucket k >= 1 holds [2^(k-1), 2^k - 1].
  static size_t bucket_of(uint64_t size) { return size == 0 ? 0 : static_cast<size_t>(std::bit_width(size)); }
  static uint64_t bucket_min(size_t k) { return k == 0 ? 0 : uint64_t{1} << (k - 1); }
  static uint64_t bucket_max(size_t k) { return k == 0 ? 0 : k == 64 ? UINT64_MAX : (uint64_t{1} << k) - 1; }

  void on_alloc(const Block& b) override {
    SizeBucket& k = buckets[bucket_of(b.size)];
    ++k.allocations;
    k.bytes += b.size;
  }
  void on_live_at_end(const Block& b, ImageEnd /*how*/) override { ++buckets[bucket_of(b.size)].leaked; }

  std::array<SizeBucket, 65> buckets{};
};

}  // namespace ft::post
