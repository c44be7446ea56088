// HeapPeak: the highest live heap of each process and what held it, gathered in one
// replay by a PeakObserver (a HeapObserver). The peak report shows it, the flame
// graph's `peak` metric draws it.
//
// A process's peak is the largest total of live bytes (bytes requested in live
// blocks, allocator overhead not included) after any allocation; the first moment it
// was reached is the peak's moment. The live bytes of every site at the peak are kept
// without copying the live set at each new maximum: every site remembers the epoch
// (number of maxima so far) of its last change, and when a site changes after a later
// maximum its value before the change is its value at that maximum. One pass, O(1)
// per event.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "postproc/heap_replay.h"
#include "postproc/site_table.h"

namespace ft::post {

// Live bytes and blocks.
struct LiveTotal {
  uint64_t bytes = 0;
  uint64_t blocks = 0;
  LiveTotal& operator+=(const LiveTotal& o) {
    bytes += o.bytes;
    blocks += o.blocks;
    return *this;
  }
};

// A process's peak and the sites live at it.
struct ProcessPeak {
  int64_t pid = 0;
  std::string trace;
  LiveTotal peak;
  uint64_t time_ns = 0;
  uint64_t seq = 0;
  std::vector<std::pair<SiteId, LiveTotal>> per_site;  // live at the peak
};

class PeakObserver : public HeapObserver {
 public:
  void begin_process(const TraceReader& /*reader*/) override {
    sites_.clear();
    now_ = {};
    peak_ = ProcessPeak{};
    epoch_ = 0;
  }

  void on_alloc(const Block& b) override {
    change(b.site, static_cast<int64_t>(b.size), 1);
    if (now_.bytes > peak_.peak.bytes) {
      ++epoch_;
      peak_.peak = now_;
      peak_.time_ns = b.time_ns;
      peak_.seq = b.seq;
    }
  }
  void on_free(const Block& b, const Moment& /*when*/) override {
    change(b.site, -static_cast<int64_t>(b.size), -1);
  }
  void on_live_at_end(const Block& b, ImageEnd /*how*/) override {
    change(b.site, -static_cast<int64_t>(b.size), -1);
  }

  void end_process(const TraceReader& reader) override {
    peak_.pid = reader.pid();
    peak_.trace = reader.path();
    for (size_t i = 0; i < sites_.size(); ++i) {
      const SiteState& s = sites_[i];
      LiveTotal at = s.epoch < epoch_ ? s.now : s.at_peak;
      if (at.blocks > 0) peak_.per_site.emplace_back(static_cast<SiteId>(i), at);
    }
    peaks.push_back(std::move(peak_));
  }

  std::vector<ProcessPeak> peaks;

 private:
  struct SiteState {
    LiveTotal now;
    LiveTotal at_peak;        // valid when epoch == epoch_ (changed since the last maximum)
    uint64_t epoch = 0;  // epoch_ at the last change
  };

  void change(SiteId site, int64_t bytes, int64_t blocks) {
    if (sites_.size() <= site) sites_.resize(site + 1);
    SiteState& s = sites_[site];
    if (s.epoch < epoch_) {
      s.at_peak = s.now;  // unchanged since the last maximum
      s.epoch = epoch_;
    }
    s.now.bytes = static_cast<uint64_t>(static_cast<int64_t>(s.now.bytes) + bytes);
    s.now.blocks = static_cast<uint64_t>(static_cast<int64_t>(s.now.blocks) + blocks);
    now_.bytes = static_cast<uint64_t>(static_cast<int64_t>(now_.bytes) + bytes);
    now_.blocks = static_cast<uint64_t>(static_cast<int64_t>(now_.blocks) + blocks);
  }

  std::vector<SiteState> sites_;
  LiveTotal now_;
  ProcessPeak peak_;
  uint64_t epoch_ = 0;
};


}  // namespace ft::post
