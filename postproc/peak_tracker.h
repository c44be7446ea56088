// PeakTracker: the live heap of one process, per site, and its highest point. The peak
// report shows the peak; the massif report draws the live heap over time and marks the
// peak in it. Both feed it the same way from a HeapObserver: alloc() for each block
// made live, release() for each block that stops being live.
//
// The peak is the first moment the live bytes reach their maximum (a later moment with
// the same bytes is not a new peak), as the alloc that reached it: its time and event.
//
// The live bytes of every site at the peak are kept without copying the live set at
// each new maximum: every site remembers the epoch (number of maxima so far) of its
// last change, and when a site changes after a later maximum its value before the
// change is its value at that maximum. O(1) per event, O(sites) memory.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "postproc/heap_replay.h"
#include "postproc/site_table.h"

namespace ft::post {

struct LiveCount {
  uint64_t bytes = 0;
  uint64_t blocks = 0;
  LiveCount& operator+=(const LiveCount& o) {
    bytes += o.bytes;
    blocks += o.blocks;
    return *this;
  }
};

class PeakTracker {
 public:
  // Forgets everything: call at the start of each process.
  void reset();

  // The block is live from now on; returns whether this made a new peak.
  bool alloc(const Block& block);
  // The block is no longer live.
  void release(const Block& block);

  const LiveCount& now() const { return now_; }
  const LiveCount& peak() const { return peak_; }
  uint64_t peak_time_ns() const { return peak_time_ns_; }
  uint64_t peak_seq() const { return peak_seq_; }

  // The sites with live blocks, in SiteId order: at the peak, and now.
  std::vector<std::pair<SiteId, LiveCount>> live_at_peak() const;
  std::vector<std::pair<SiteId, LiveCount>> live_now() const;

 private:
  struct SiteState {
    LiveCount now;
    LiveCount at_peak;   // valid when epoch == epoch_ (changed since the last maximum)
    uint64_t epoch = 0;  // epoch_ at the last change
  };
  void change(SiteId site, int64_t bytes, int64_t blocks);

  std::vector<SiteState> sites_;
  LiveCount now_;
  LiveCount peak_;
  uint64_t peak_time_ns_ = 0;
  uint64_t peak_seq_ = 0;
  uint64_t epoch_ = 0;
};

}  // namespace ft::post
