#include "postproc/heap_stacks.h"

#include <fmt/format.h>

#include "postproc/heap_counts.h"
#include "postproc/heap_peak.h"
#include "postproc/heap_session.h"

namespace ft::post {

uint64_t HeapValues::of(FlameMetric metric) const {
  switch (metric) {
    case FlameMetric::kAllocated: return allocated;
    case FlameMetric::kAllocations: return allocations;
    case FlameMetric::kLeaked: return leaked;
    case FlameMetric::kPeak: return peak;
    case FlameMetric::kTemporary: return temporary;
    default: return 0;
  }
}

std::string frame_name(const ReportFrame& f) {
  if (f.function) return *f.function;
  if (f.module) {
    std::string_view m = *f.module;
    size_t slash = m.rfind('/');
    if (slash != std::string_view::npos) m.remove_prefix(slash + 1);
    return fmt::format("{}+{:#x}", m, f.module_offset);
  }
  return fmt::format("{:#x}", f.address);
}

Result<HeapStacks> collect_heap_stacks(const ReportOptions& options, Diagnostics& diag) {
  auto filter = group_filter(options);
  if (!filter) return filter.error();
  HeapSession session(diag, options.resolve);
  SiteCounter counter;
  PeakObserver peak;
  HeapObserverSet both({&counter, &peak});
  auto processes = session.replay(options.traces, both, heap_replay_options(options));
  if (!processes) return processes.error();

  HeapStacks out;
  out.processes = *processes;
  auto add = [&](const auto& sel, int64_t pid, auto values) {
    for (const auto& g : sel.groups) {
      HeapStack s;
      s.frames = g.frames;
      s.function = g.head.function.empty() ? std::string("??") : g.head.function;
      s.values = values(g.counts);
      s.pid = pid;
      out.stacks.push_back(std::move(s));
    }
  };
  auto by_allocated = [](const HeapCounts& a, const HeapCounts& b) {
    return a.allocated_bytes > b.allocated_bytes;
  };
  add(select_groups(session.grouper(), counter.per_site(), *filter, by_allocated, std::nullopt), 0,
      [](const HeapCounts& c) {
        HeapValues v;
        v.allocated = c.allocated_bytes;
        v.allocations = c.allocations;
        v.leaked = c.leaked_bytes;
        v.leaked_blocks = c.leaked_blocks;
        v.temporary = c.temporary_bytes;
        v.temporary_count = c.temporary;
        return v;
      });
  auto by_bytes = [](const LiveCount& a, const LiveCount& b) { return a.bytes > b.bytes; };
  for (const ProcessPeak& p : peak.peaks) {
    std::vector<std::pair<SiteId, LiveCount>> live;
    for (const auto& [site, c] : p.per_site) {
      if (c.bytes > 0) live.emplace_back(site, c);
    }
    add(select_groups(session.grouper(), live, *filter, by_bytes, std::nullopt), p.pid,
        [](const LiveCount& c) {
          HeapValues v;
          v.peak = c.bytes;
          v.peak_blocks = c.blocks;
          return v;
        });
  }
  return out;
}

}  // namespace ft::post
