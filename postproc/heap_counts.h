// HeapCounts: what the heap reports count per site, gathered in one replay by a
// SiteCounter (a HeapObserver).
//
//  - allocations / allocated_bytes: every block allocated (leaks or not);
//  - leaked_blocks / leaked_bytes: blocks still live at the end of the trace, or at
//    the --at moment; blocks an exec discarded (heap_replay.h) are not leaks;
//  - temporary / temporary_bytes: temporary allocations, as heaptrack counts them: a
//    block freed by the thread that allocated it with no other allocation by that
//    thread in between (malloc, use, free right away: pure allocator churn).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "postproc/group_filter.h"
#include "postproc/heap_replay.h"
#include "postproc/site_groups.h"

namespace ft::post {

// Three counts of blocks and their bytes, as listed above.
struct HeapCounts {
  uint64_t allocations = 0, allocated_bytes = 0;
  uint64_t leaked_blocks = 0, leaked_bytes = 0;
  uint64_t temporary = 0, temporary_bytes = 0;

  HeapCounts& operator+=(const HeapCounts& o) {
    allocations += o.allocations;
    allocated_bytes += o.allocated_bytes;
    leaked_blocks += o.leaked_blocks;
    leaked_bytes += o.leaked_bytes;
    temporary += o.temporary;
    temporary_bytes += o.temporary_bytes;
    return *this;
  }
  bool empty() const { return allocations == 0 && leaked_blocks == 0; }
};

class SiteCounter : public HeapObserver {
 public:
  void begin_process(const TraceReader& reader) override;
  void on_alloc(const Block& block) override;
  void on_free(const Block& block, const Moment& when) override;
  void on_live_at_end(const Block& block, ImageEnd how) override;

  // The sites with any count, in SiteId order.
  std::vector<std::pair<SiteId, HeapCounts>> per_site() const;
  const HeapCounts& total() const { return total_; }

 private:
  HeapCounts& at(SiteId site) {
    if (counts_.size() <= site) counts_.resize(site + 1);
    return counts_[site];
  }

  std::vector<HeapCounts> counts_;
  HeapCounts total_;
  // Per thread, the address of its last allocation while that block is live and no
  // other allocation followed.
  std::unordered_map<int64_t, uint64_t> last_alloc_;
};

// The reports that rank backtraces by one pair of counts (leaks, allocators,
// temporary): replays the traces with a SiteCounter, keeps the sites whose `rank` is
// not (0, 0), and selects their groups, largest `rank` first (select_groups).
using CountRank = std::pair<uint64_t, uint64_t> (*)(const HeapCounts&);

struct RankedGroups {
  GroupSelection<HeapCounts> selection;
  HeapCounts all;  // every site, before the filter
  uint64_t processes = 0;
  uint64_t cut_short = 0;  // traces without their end record (HeapReplay::cut_short())
};

Result<RankedGroups> rank_groups(const std::vector<std::string>& traces,
                                 const HeapReplayOptions& replay, const ResolveOptions& resolve,
                                 const GroupFilter& filter, CountRank rank,
                                 std::optional<size_t> top, Diagnostics& diag);

}  // namespace ft::post
