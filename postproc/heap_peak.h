// HeapPeak: the highest live heap of each process and what held it, gathered in one
// replay by a PeakObserver: a HeapObserver over a PeakTracker (peak_tracker.h, where
// the peak is defined). The peak report shows it, the flame graph's `peak` metric
// draws it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "postproc/heap_replay.h"
#include "postproc/peak_tracker.h"
#include "postproc/site_table.h"

namespace ft::post {

// A process's peak and the sites live at it.
struct ProcessPeak {
  int64_t pid = 0;
  std::string trace;
  LiveCount peak;
  uint64_t time_ns = 0;
  uint64_t seq = 0;
  std::vector<std::pair<SiteId, LiveCount>> per_site;  // live at the peak
};

class PeakObserver : public HeapObserver {
 public:
  void begin_process(const TraceReader& /*reader*/) override { tracker_.reset(); }
  void on_alloc(const Block& b) override { tracker_.alloc(b); }
  void on_free(const Block& b, const Moment& /*when*/) override { tracker_.release(b); }
  void on_live_at_end(const Block& b, ImageEnd /*how*/) override { tracker_.release(b); }
  void on_discard(const Block& b, const Moment& /*when*/) override { tracker_.release(b); }

  void end_process(const TraceReader& reader) override {
    ProcessPeak p;
    p.pid = reader.pid();
    p.trace = reader.path();
    p.peak = tracker_.peak();
    p.time_ns = tracker_.peak_time_ns();
    p.seq = tracker_.peak_seq();
    p.per_site = tracker_.live_at_peak();
    peaks.push_back(std::move(p));
  }

  std::vector<ProcessPeak> peaks;

 private:
  PeakTracker tracker_;
};

}  // namespace ft::post
