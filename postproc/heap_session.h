// HeapSession: what a heap report holds while it runs: the resolver, the interned
// sites of every trace it replays, and the grouping of those sites. One session may
// replay several sets of traces (diff replays two) so that their sites share one table
// and one resolver cache.
#pragma once

#include <string>
#include <vector>

#include "postproc/heap_replay.h"
#include "postproc/site_groups.h"
#include "postproc/site_table.h"
#include "postproc/symbolizer.h"

namespace ft::post {

class HeapSession {
 public:
  HeapSession(Diagnostics& diag, const ResolveOptions& resolve)
      : diag_(diag), symbolizer_(diag, resolve), grouper_(sites_, symbolizer_) {}
  HeapSession(const HeapSession&) = delete;
  HeapSession& operator=(const HeapSession&) = delete;

  // Replays `traces` into `observer`; returns the number of traces (processes) read.
  Result<uint64_t> replay(const std::vector<std::string>& traces, HeapObserver& observer,
                          const HeapReplayOptions& options) {
    HeapReplay replay(sites_, symbolizer_, observer, diag_, options);
    if (Status st = replay.run(traces); !st) return st.error();
    cut_short_ += replay.cut_short();
    return replay.processes();
  }
  // Of the traces replayed so far, those cut short (HeapReplay::cut_short()).
  uint64_t cut_short() const { return cut_short_; }

  SiteGrouper& grouper() { return grouper_; }
  Symbolizer& symbolizer() { return symbolizer_; }
  SiteTable& sites() { return sites_; }

 private:
  Diagnostics& diag_;
  Symbolizer symbolizer_;
  SiteTable sites_;
  SiteGrouper grouper_;
  uint64_t cut_short_ = 0;
};

}  // namespace ft::post
