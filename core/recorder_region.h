// RecorderRegion: functracer's side of the memory it shares with the in-process
// recorder (core/recorder_abi.h: the layout and the protocol): setting a region up,
// giving a thread a ring and taking it back, and reading what the threads recorded.
//
// functracer is the only writer of the key table and of a ring's set-up, and writes
// them only for a thread that is stopped (the thread is the only producer of its
// ring; its signal handlers run on it). The rings are read at any time: what a
// running thread commits meanwhile is read at the next drain.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/recorder_abi.h"

namespace ft {

// One record, as read out of a ring (words points into the reader's buffer, valid
// until the next record).
struct RecordedEvent {
  uint16_t kind = 0;
  uint32_t fn = 0;
  uint32_t flags = 0;
  uint64_t tsc = 0;
  std::span<const uint64_t> words;
};

class RecorderRegion {
 public:
  // The region at base (region_size(ring_bytes) bytes of zeroed, shared memory,
  // already mapped in functracer): writes its header. ring_bytes: a power of two,
  // at least 4096.
  // own: where the own part (ft_rec_own) is in the process.
  static RecorderRegion create(void* base, uint64_t ring_bytes, uint64_t own);
  // A region set up before (by create, possibly by another functracer): checks its
  // header; nullopt if it is not one.
  static std::optional<RecorderRegion> adopt(void* base, uint64_t size);
  static uint64_t region_size(uint64_t ring_bytes) { return ft_rec_region_size(ring_bytes); }

  ft_rec_header* header() const { return h_; }
  uint64_t ring_bytes() const { return h_->ring_bytes; }

  // Gives the thread whose thread pointer is tp a ring (emptied), or returns the one it
  // has; nullopt when every ring is taken or tp cannot be a key.
  std::optional<uint32_t> add_thread(uint64_t tp);
  // The ring of tp, if it has one.
  std::optional<uint32_t> ring_of(uint64_t tp) const;
  // The thread is gone (or its thread pointer changed): its key is removed, its ring
  // freed. Drain it first.
  void remove_thread(uint64_t tp);
  size_t threads() const { return used_count_; }

  // Reads every committed record of ring `index` in order, handing each to `each`,
  // and frees their space; stops at the first record not committed yet, or whose time
  // stamp is at or after `cut` (left in the ring). Returns how many were read.
  template <class F>
  size_t drain(uint32_t index, F&& each, uint64_t cut = UINT64_MAX) {
    ft_rec_ring* r = ft_rec_ring_at(h_, index);
    size_t n = 0;
    RecordedEvent ev;
    while (next(r, ev, cut)) {
      each(ev);
      ++n;
    }
    return n;
  }
  // Events a full ring could not take, for ring index (cumulative).
  uint64_t lost(uint32_t index) const { return ft_rec_ring_at(h_, index)->lost_events; }
  // Rings found overwritten (by the program: they are its memory) and emptied.
  uint64_t corrupt() const { return corrupt_; }

 private:
  explicit RecorderRegion(ft_rec_header* h);
  bool next(ft_rec_ring* r, RecordedEvent& ev, uint64_t cut);
  // Where tp's key is, or where it would go.
  ft_rec_key* slot_for(uint64_t tp) const;

  ft_rec_header* h_ = nullptr;
  std::vector<bool> used_;  // by ring index
  size_t used_count_ = 0;
  std::vector<uint64_t> scratch_;
  uint64_t corrupt_ = 0;
};

}  // namespace ft
