#include "postproc/heap_counts.h"

#include "postproc/heap_session.h"

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

void SiteCounter::on_live_at_end(const Block& block, ImageEnd /*how*/) {
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

Result<RankedGroups> rank_groups(const std::vector<std::string>& traces,
                                 const HeapReplayOptions& replay, const ResolveOptions& resolve,
                                 const GroupFilter& filter, CountRank rank,
                                 std::optional<size_t> top, Diagnostics& diag) {
  HeapSession session(diag, resolve);
  SiteCounter counter;
  auto processes = session.replay(traces, counter, replay);
  if (!processes) return processes.error();
  std::vector<std::pair<SiteId, HeapCounts>> ranked;
  for (const auto& [site, c] : counter.per_site()) {
    if (rank(c) != std::pair<uint64_t, uint64_t>(0, 0)) ranked.emplace_back(site, c);
  }
  auto greater = [rank](const HeapCounts& a, const HeapCounts& b) { return rank(a) > rank(b); };
  RankedGroups out;
  out.selection = select_groups(session.grouper(), ranked, filter, greater, top);
  out.all = counter.total();
  out.processes = *processes;
  out.cut_short = session.cut_short();
  return out;
}

}  // namespace ft::post
