#include "postproc/heap_counts.h"

namespace ft::post {

void SiteCounter::begin_process(const TraceReader& /*reader*/) { last_alloc_.clear(); }

void SiteCounter::on_alloc(const Block& block) {
  HeapCounts& c = at(block.site);
  ++c.allocations;
  c.allocated_bytes += block.size;
  ++total_.allocations;
  total_.allocated_bytes += block.size;
  last_alloc_[block.tid] = block.address;
}

void SiteCounter::on_free(const Block& block, const Moment& when) {
  auto it = last_alloc_.find(when.tid);
  if (it == last_alloc_.end() || it->second != block.address || block.tid != when.tid) return;
  last_alloc_.erase(it);
  HeapCounts& c = at(block.site);
  ++c.temporary;
  c.temporary_bytes += block.size;
  ++total_.temporary;
  total_.temporary_bytes += block.size;
}

void SiteCounter::on_live_at_end(const Block& block, ImageEnd how) {
  if (at_ && how == ImageEnd::kExec) return;
  HeapCounts& c = at(block.site);
  ++c.leaked_blocks;
  c.leaked_bytes += block.size;
  ++total_.leaked_blocks;
  total_.leaked_bytes += block.size;
}

std::vector<std::pair<SiteId, HeapCounts>> SiteCounter::per_site() const {
  std::vector<std::pair<SiteId, HeapCounts>> out;
  for (size_t i = 0; i < counts_.size(); ++i) {
    if (!counts_[i].empty()) out.emplace_back(static_cast<SiteId>(i), counts_[i]);
  }
  return out;
}

}  // namespace ft::post
