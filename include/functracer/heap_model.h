/*
 * functracer heap model — what allocator calls do to a process's set of live heap
 * blocks, written once for every side that follows blocks: the memtrace plugin while
 * tracing, and functracer-postproc's HeapReplay and LiveHeap when reading its records
 * (doc/trace-format.md, section 3.5).
 *
 * Two parts:
 *  - the outcome of one allocator call from its arguments and result (realloc to 0
 *    releases, realloc(NULL, n) only allocates, a failed realloc leaves the block
 *    live, posix_memalign's block is in memory, ...): what memtrace records;
 *  - HeapModel, the live blocks of one process: an allocation makes a block live,
 *    replacing a live block at the same address (its release went by a path that
 *    was not seen); a release of a live block ends it; a release of an address that
 *    is not live is a double release (released before and not allocated since) or
 *    an unknown one, and changes nothing. An exec discards the whole heap: the blocks
 *    live then went with the old image (neither released by the program nor leaked,
 *    as valgrind counts them) and the new image starts empty; a forked child starts
 *    with a copy of its parent's blocks.
 *
 * Releases the allocator makes for itself (reason "allocator" in bad_free records)
 * are told apart by memtrace from the call stack; the model only says that the
 * address was not live.
 *
 * Header-only C++20 like schema.h, so that plugins (which see only include/functracer/)
 * can use it. Memory: one hash-table entry per live block, plus one per released
 * address when the model remembers releases (memtrace does, to tell double releases
 * from unknown ones; the post-processor does not need to).
 */
#ifndef FUNCTRACER_HEAP_MODEL_H
#define FUNCTRACER_HEAP_MODEL_H

#include <algorithm>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ft::heap {

// What one allocator call did, from its arguments and its result.
struct Outcome {
  uint64_t released = 0;   // a block it released (0: none)
  uint64_t allocated = 0;  // the block it returned (0: none)
  bool failed = false;     // no memory: an alloc_failed record
  bool operator==(const Outcome&) const = default;
};

// malloc, calloc, memalign, valloc, operator new, ...: the block, or NULL.
inline Outcome allocation_outcome(uint64_t ret) {
  Outcome o;
  if (ret == 0) o.failed = true;
  else o.allocated = ret;
  return o;
}

// realloc(ptr, size) and reallocarray (size_overflow: nmemb * size did not fit).
// NULL is either the old block freed (size 0) or a failure that left it live;
// realloc(NULL, n) only allocates.
inline Outcome realloc_outcome(uint64_t ptr, uint64_t size, bool size_overflow, uint64_t ret) {
  Outcome o;
  if (ret == 0) {
    if (ptr != 0 && size == 0 && !size_overflow) o.released = ptr;
    else o.failed = true;
    return o;
  }
  o.released = ptr;
  o.allocated = ret;
  return o;
}

// posix_memalign(&p, align, size): 0 and the block stored at p, or an error number.
// `stored`: what was read at p after the call (nothing when it could not be read).
inline Outcome posix_memalign_outcome(int ret, std::optional<uint64_t> stored) {
  Outcome o;
  if (ret == 0 && stored && *stored != 0) o.allocated = *stored;
  else o.failed = true;
  return o;
}

// No information kept per block besides its size.
struct NoInfo {};

// The live blocks of one process, each with an Info of the user's choosing (the
// post-processor keeps the allocation site and moment).
template <class Info = NoInfo>
class HeapModel {
 public:
  struct Block {
    uint64_t address = 0;
    uint64_t size = 0;
    Info info{};
  };

  enum class Release {
    kFreed,    // the address was live: its block ended
    kDouble,   // released before and not allocated since (only when remembering releases)
    kUnknown,  // never allocated as far as the model knows
  };

  struct Released {
    Release kind = Release::kUnknown;
    std::optional<Block> block;  // with kFreed
  };

  explicit HeapModel(bool remember_releases = false) : remember_releases_(remember_releases) {}

  // A block became live at `address`. Returns the live block it replaces, if any.
  std::optional<Block> alloc(uint64_t address, uint64_t size, Info info = {}) {
    std::optional<Block> replaced;
    auto [it, fresh] = live_.try_emplace(address, Entry{size, std::move(info)});
    if (!fresh) {
      replaced = Block{address, it->second.size, std::move(it->second.info)};
      bytes_ -= it->second.size;
      it->second = Entry{size, std::move(info)};
    }
    if (remember_releases_) released_.erase(address);
    ++allocations_;
    bytes_ += size;
    peak_ = std::max(peak_, bytes_);
    return replaced;
  }

  // Ends the live block at `address`, if any, without counting a release: an
  // allocation is about to replace it but will not be followed itself.
  std::optional<Block> take(uint64_t address) {
    auto it = live_.find(address);
    if (it == live_.end()) return std::nullopt;
    Block b{address, it->second.size, std::move(it->second.info)};
    bytes_ -= b.size;
    live_.erase(it);
    return b;
  }

  // A release of `address` (not NULL: free(NULL) does nothing and is not recorded).
  Released release(uint64_t address) {
    Released r;
    if (auto b = take(address)) {
      if (remember_releases_) released_.insert(address);
      ++releases_;
      r.kind = Release::kFreed;
      r.block = std::move(b);
      return r;
    }
    r.kind = released_.count(address) != 0 ? Release::kDouble : Release::kUnknown;
    return r;
  }

  // A new image: nothing is live, nothing was released.
  void clear() {
    live_.clear();
    released_.clear();
    bytes_ = 0;
  }

  // The copy a forked child starts with: the same blocks and releases, no counts yet,
  // its peak starting at what is live.
  HeapModel fork_copy() const {
    HeapModel child(remember_releases_);
    child.live_ = live_;
    child.released_ = released_;
    child.bytes_ = child.peak_ = bytes_;
    return child;
  }

  // The live blocks in address order (reports must not depend on the hash order).
  std::vector<Block> sorted_blocks() const {
    std::vector<Block> out;
    out.reserve(live_.size());
    for (const auto& [address, e] : live_) out.push_back(Block{address, e.size, e.info});
    std::sort(out.begin(), out.end(), [](const Block& a, const Block& b) { return a.address < b.address; });
    return out;
  }

  bool is_live(uint64_t address) const { return live_.count(address) != 0; }
  size_t blocks() const { return live_.size(); }
  uint64_t live_bytes() const { return bytes_; }
  uint64_t peak_bytes() const { return peak_; }
  uint64_t allocations() const { return allocations_; }
  uint64_t releases() const { return releases_; }

 private:
  struct Entry {
    uint64_t size = 0;
    Info info{};
  };
  bool remember_releases_;
  std::unordered_map<uint64_t, Entry> live_;
  std::unordered_set<uint64_t> released_;
  uint64_t bytes_ = 0, peak_ = 0, allocations_ = 0, releases_ = 0;
};

}  // namespace ft::heap

#endif /* FUNCTRACER_HEAP_MODEL_H */
