#include "postproc/live_heap.h"

#include <algorithm>

namespace ft::post {

bool LiveHeap::apply(const TraceRecord& r) {
  uint64_t before = bytes_;
  if (r.type == "alloc") {
    auto address = r.get_hex("address");
    if (!address) return false;
    uint64_t size = static_cast<uint64_t>(std::max<int64_t>(r.get_int("size").value_or(0), 0));
    auto [it, inserted] = live_.try_emplace(*address, size);
    if (!inserted) {
      bytes_ -= it->second;
      it->second = size;
    }
    bytes_ += size;
  } else if (r.type == "free") {
    auto address = r.get_hex("address");
    if (!address) return false;
    auto it = live_.find(*address);
    if (it == live_.end()) return false;
    bytes_ -= it->second;
    live_.erase(it);
  } else if (r.type == "exec") {
    clear();
  }
  return bytes_ != before;
}

void LiveHeap::clear() {
  live_.clear();
  bytes_ = 0;
}

}  // namespace ft::post
