// HeapTimeline: the live heap of each process over time (bytes requested in live
// blocks after each allocation and release), for the chart of the html report. A
// HeapObserver: one pass, memory bounded by kMaxPoints per process. When a process
// has more events, consecutive changes are merged into buckets of equal event count
// and each bucket keeps its largest value, so the peak is never lost.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "postproc/heap_replay.h"

namespace ft::post {

struct HeapPoint {
  uint64_t time_ns = 0;
  uint64_t bytes = 0;
};

struct ProcessTimeline {
  int64_t pid = 0;
  std::string trace;
  std::vector<HeapPoint> points;  // in time order
  uint64_t end_ns = 0;            // time of the last record
};

class HeapTimeline : public HeapObserver {
 public:
  static constexpr size_t kMaxPoints = 2000;

  void begin_process(const TraceReader& /*reader*/) override {
    current_ = ProcessTimeline{};
    live_ = 0;
    bucket_ = 1;
    in_bucket_ = 0;
    current_.points.push_back({0, 0});
  }
  void on_alloc(const Block& b) override {
    live_ += b.size;
    point(b.time_ns);
  }
  void on_free(const Block& b, const Moment& when) override {
    live_ -= std::min(live_, b.size);
    point(when.time_ns);
  }
  // An exec empties the heap (heap_replay.h).
  void on_discard(const Block& b, const Moment& when) override { on_free(b, when); }
  void end_process(const TraceReader& reader) override {
    current_.pid = reader.pid();
    current_.trace = reader.path();
    current_.end_ns = current_.points.back().time_ns;
    processes.push_back(std::move(current_));
  }

  std::vector<ProcessTimeline> processes;

 private:
  void point(uint64_t time_ns) {
    std::vector<HeapPoint>& p = current_.points;
    if (in_bucket_ > 0 && in_bucket_ < bucket_) {
      ++in_bucket_;
      if (live_ >= p.back().bytes) p.back() = {time_ns, live_};
      return;
    }
    if (p.size() >= kMaxPoints) {
      // Halve the resolution: merge pairs, keeping the larger of each.
      size_t n = 0;
      for (size_t i = 0; i < p.size(); i += 2) {
        p[n++] = (i + 1 < p.size() && p[i + 1].bytes >= p[i].bytes) ? p[i + 1] : p[i];
      }
      p.resize(n);
      bucket_ *= 2;
    }
    p.push_back({time_ns, live_});
    in_bucket_ = 1;
  }

  ProcessTimeline current_;
  uint64_t live_ = 0;
  uint64_t bucket_ = 1;
  uint64_t in_bucket_ = 0;
};

}  // namespace ft::post
