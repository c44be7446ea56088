#include "core/recorder_region.h"

#include <cstring>

#include "common/check.h"


namespace ft {

RecorderRegion::RecorderRegion(ft_rec_header* h) : h_(h), used_(h->max_threads, false) {}

RecorderRegion RecorderRegion::create(void* base, uint64_t ring_bytes, uint64_t own) {
  FT_CHECK(ring_bytes >= 4096 && (ring_bytes & (ring_bytes - 1)) == 0, "ring size %llu is not a power of two >= 4096",
           static_cast<unsigned long long>(ring_bytes));
  auto* h = static_cast<ft_rec_header*>(base);
  h->version = FT_REC_VERSION;
  h->max_threads = FT_REC_MAX_THREADS;
  h->ring_bytes = ring_bytes;
  h->rings_offset = ft_rec_rings_offset();
  h->ring_stride = sizeof(ft_rec_ring) + ring_bytes;
  h->own = own;
  h->guard_offset = ft_rec_guard_offset(ring_bytes);
  h->enabled = 1;
  __atomic_store_n(&h->magic, FT_REC_MAGIC, __ATOMIC_RELEASE);
  return RecorderRegion(h);
}

std::optional<RecorderRegion> RecorderRegion::adopt(void* base, uint64_t size) {
  if (size < sizeof(ft_rec_header)) return std::nullopt;
  auto* h = static_cast<ft_rec_header*>(base);
  if (h->magic != FT_REC_MAGIC || h->version != FT_REC_VERSION || h->max_threads != FT_REC_MAX_THREADS ||
      h->ring_bytes < 4096 || (h->ring_bytes & (h->ring_bytes - 1)) != 0 ||
      ft_rec_region_size(h->ring_bytes) != size || h->rings_offset != ft_rec_rings_offset() ||
      h->ring_stride != sizeof(ft_rec_ring) + h->ring_bytes)
    return std::nullopt;
  RecorderRegion r(h);
  // Keys of an earlier session name threads that may be gone: start from none.
  for (ft_rec_key& k : h->keys) k.tp = FT_REC_KEY_EMPTY;
  return r;
}

ft_rec_key* RecorderRegion::slot_for(uint64_t tp) const {
  uint64_t i = ft_rec_key_hash(tp);
  ft_rec_key* free_slot = nullptr;
  for (uint32_t n = 0; n < FT_REC_KEYS; ++n, i = (i + 1) & (FT_REC_KEYS - 1)) {
    ft_rec_key& k = h_->keys[i];
    if (k.tp == tp) return &k;
    if (k.tp == FT_REC_KEY_REMOVED) {
      if (!free_slot) free_slot = &k;
      continue;
    }
    if (k.tp == FT_REC_KEY_EMPTY) return free_slot ? free_slot : &k;
  }
  return free_slot;
}

std::optional<uint32_t> RecorderRegion::ring_of(uint64_t tp) const {
  if (tp <= FT_REC_KEY_REMOVED) return std::nullopt;
  ft_rec_key* k = slot_for(tp);
  if (!k || k->tp != tp) return std::nullopt;
  return static_cast<uint32_t>(k->ring);
}

std::optional<uint32_t> RecorderRegion::add_thread(uint64_t tp) {
  if (tp <= FT_REC_KEY_REMOVED) return std::nullopt;
  if (auto have = ring_of(tp)) return have;
  ft_rec_key* k = slot_for(tp);
  if (!k) return std::nullopt;
  uint32_t index = 0;
  while (index < used_.size() && used_[index]) ++index;
  if (index == used_.size()) return std::nullopt;
  // An empty ring: what an earlier owner left was drained or is given up.
  ft_rec_ring* r = ft_rec_ring_at(h_, index);
  std::memset(ft_rec_ring_data(r), 0, h_->ring_bytes);
  r->head = r->tail = 0;
  r->lost_events = r->lost_bytes = 0;
  used_[index] = true;
  ++used_count_;
  k->ring = index;
  __atomic_store_n(&k->tp, tp, __ATOMIC_RELEASE);  // the ring index is there first
  return index;
}

void RecorderRegion::remove_thread(uint64_t tp) {
  if (tp <= FT_REC_KEY_REMOVED) return;
  ft_rec_key* k = slot_for(tp);
  if (!k || k->tp != tp) return;
  uint64_t index = k->ring;
  __atomic_store_n(&k->tp, FT_REC_KEY_REMOVED, __ATOMIC_RELEASE);
  if (index < used_.size() && used_[index]) {
    used_[index] = false;
    --used_count_;
  }
}

bool RecorderRegion::next(ft_rec_ring* r, RecordedEvent& ev, uint64_t cut) {
  const uint64_t bytes = h_->ring_bytes;
  uint64_t tail = r->tail;
  uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
  if (tail == head) return false;
  uint8_t* data = ft_rec_ring_data(r);
  auto word = [&](uint64_t pos) -> uint64_t& { return *reinterpret_cast<uint64_t*>(data + (pos & (bytes - 1))); };
  uint64_t first = __atomic_load_n(&word(tail), __ATOMIC_ACQUIRE);
  uint32_t size = static_cast<uint32_t>(first);
  if (size == 0) return false;  // reserved, not committed yet
  uint16_t nwords = static_cast<uint16_t>(first >> 48);
  if (size != FT_REC_EVENT_HEADER + 8u * nwords || size > head - tail || head - tail > bytes) {
    // The ring is the program's memory: a stray write of its own can break it. What
    // is in it cannot be trusted any more; it is emptied and the loss counted.
    ++corrupt_;
    std::memset(data, 0, bytes);
    __atomic_store_n(&r->tail, head, __ATOMIC_RELEASE);
    return false;
  }
  ev.tsc = word(tail + 16);
  if (ev.tsc >= cut) return false;
  ev.kind = static_cast<uint16_t>(first >> 32);
  uint64_t w1 = word(tail + 8);
  ev.fn = static_cast<uint32_t>(w1);
  ev.flags = static_cast<uint32_t>(w1 >> 32);
  scratch_.resize(nwords);
  for (uint32_t i = 0; i < nwords; ++i) scratch_[i] = word(tail + FT_REC_EVENT_HEADER + 8u * i);
  ev.words = {scratch_.data(), nwords};
  for (uint64_t at = tail; at < tail + size; at += 8) word(at) = 0;
  __atomic_store_n(&r->tail, tail + size, __ATOMIC_RELEASE);
  return true;
}

}  // namespace ft
