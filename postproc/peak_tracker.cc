#include "postproc/peak_tracker.h"

namespace ft::post {

void PeakTracker::reset() { *this = PeakTracker(); }

bool PeakTracker::alloc(const Block& b) {
  change(b.site, static_cast<int64_t>(b.size), 1);
  if (now_.bytes <= peak_.bytes) return false;
  ++epoch_;
  peak_ = now_;
  peak_time_ns_ = b.time_ns;
  peak_seq_ = b.seq;
  return true;
}

void PeakTracker::release(const Block& b) { change(b.site, -static_cast<int64_t>(b.size), -1); }

void PeakTracker::change(SiteId site, int64_t bytes, int64_t blocks) {
  if (sites_.size() <= site) sites_.resize(site + 1);
  SiteState& s = sites_[site];
  if (s.epoch < epoch_) {
    s.at_peak = s.now;  // unchanged since the last maximum
    s.epoch = epoch_;
  }
  auto add = [](uint64_t& v, int64_t d) { v = static_cast<uint64_t>(static_cast<int64_t>(v) + d); };
  add(s.now.bytes, bytes);
  add(s.now.blocks, blocks);
  add(now_.bytes, bytes);
  add(now_.blocks, blocks);
}

std::vector<std::pair<SiteId, LiveCount>> PeakTracker::live_at_peak() const {
  std::vector<std::pair<SiteId, LiveCount>> out;
  for (size_t i = 0; i < sites_.size(); ++i) {
    const SiteState& s = sites_[i];
    LiveCount at = s.epoch < epoch_ ? s.now : s.at_peak;
    if (at.blocks > 0) out.emplace_back(static_cast<SiteId>(i), at);
  }
  return out;
}

std::vector<std::pair<SiteId, LiveCount>> PeakTracker::live_now() const {
  std::vector<std::pair<SiteId, LiveCount>> out;
  for (size_t i = 0; i < sites_.size(); ++i) {
    if (sites_[i].now.blocks > 0) out.emplace_back(static_cast<SiteId>(i), sites_[i].now);
  }
  return out;
}

}  // namespace ft::post
