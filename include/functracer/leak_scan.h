/* leak_scan.h: tells the heap blocks a process still holds by how they can be
 * reached from its roots, with valgrind memcheck's four kinds (valgrind user manual,
 * "Memory leak detection"; memcheck/mc_leakcheck.c):
 *
 * - still reachable: a chain of pointers to block starts leads to it from a root;
 * - possibly lost: reached from a root, but only through a pointer into its middle
 *   (an "interior pointer") somewhere on the way, or only from a possibly lost block;
 * - definitely lost: no pointer of any kind to it from a root or a reachable block;
 *   when lost blocks point to each other (a cycle, a list), the block of lowest
 *   address that nothing lost points to leads the group ("clique") and is the
 *   definitely lost one;
 * - indirectly lost: reached, by start or interior pointers, only from definitely
 *   lost blocks.
 *
 * A pointer is any aligned 8-byte word whose value lies in a block ([start, start +
 * size), or equal to the start of a block of size 0). The roots are what the caller
 * feeds in (memory ranges, register words); a block is scanned whole once reached.
 * memcheck's default heuristics turn some interior pointers into start pointers,
 * and so does this scanner: "stdstring" (pointer at +24 into a libstdc++ COW string
 * whose capacity fills the block), "length64" (at +8, the first word being the size
 * of the rest), "newarray" (at +8, the first word an element count dividing the
 * rest). memcheck's "multipleinheritance" needs to know vtables and is not applied.
 * Unlike memcheck, which skips words it knows to be uninitialised, every word is read.
 *
 * Header-only C++20, no functracer internals: used by memtrace, tested on its own. */
#ifndef FUNCTRACER_LEAK_SCAN_H
#define FUNCTRACER_LEAK_SCAN_H

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "functracer/schema.h"

namespace ft::heap {

enum class LeakKind : uint8_t { kReachable, kPossible, kIndirect, kDefinite };

/* The names used in the trace (doc/trace-format.md) and reports. */
inline const char* leak_kind_name(LeakKind k) {
  switch (k) {
    case LeakKind::kReachable: return schema::leak_kind::kReachable;
    case LeakKind::kPossible: return schema::leak_kind::kPossible;
    case LeakKind::kIndirect: return schema::leak_kind::kIndirect;
    case LeakKind::kDefinite: return schema::leak_kind::kDefinite;
  }
  return "?";
}

class LeakScanner {
 public:
  struct Block {
    uint64_t address = 0, size = 0;
  };

  /* `blocks` need not be sorted; they must not overlap. Their bytes are read through
   * `read(addr, buf, n)` -> bytes read (fewer at unreadable memory), in large pieces:
   * blocks closer than kGap to each other are read together. */
  template <class Read>
  LeakScanner(std::vector<Block> blocks, Read&& read) : blocks_(std::move(blocks)) {
    std::sort(blocks_.begin(), blocks_.end(), [](const Block& a, const Block& b) { return a.address < b.address; });
    state_.assign(blocks_.size(), State::kUnreached);
    offset_.resize(blocks_.size());
    for (size_t i = 0; i < blocks_.size();) {
      uint64_t start = blocks_[i].address, end = start + blocks_[i].size;
      size_t j = i;
      while (j < blocks_.size() && blocks_[j].address <= end + kGap) {
        offset_[j] = copy_.size() + (blocks_[j].address - start);
        end = std::max(end, blocks_[j].address + blocks_[j].size);
        ++j;
      }
      size_t base = copy_.size();
      copy_.resize(base + (end - start));
      for (uint64_t at = 0; at < end - start;) {
        size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, end - start - at));
        long got = read(start + at, copy_.data() + base + at, want);
        if (got <= 0) got = static_cast<long>(want);  // unreadable: stays zero
        at += static_cast<uint64_t>(got);
      }
      i = j;
    }
  }

  /* Roots: memory [start, end) of the process, read in large pieces. */
  template <class Read>
  void scan_range(uint64_t start, uint64_t end, Read&& read) {
    std::vector<uint8_t> buf;
    start = (start + 7) & ~uint64_t{7};
    for (uint64_t at = start; at + 8 <= end;) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, (end - at) & ~uint64_t{7}));
      buf.resize(want);
      long got = read(at, buf.data(), want);
      if (got <= 0) {  // an unreadable page: skip it
        at = (at | 4095) + 1;
        continue;
      }
      scan_words(buf.data(), static_cast<size_t>(got) / 8, kRoot);
      at += static_cast<uint64_t>(got) & ~uint64_t{7};
      roots_bytes_ += static_cast<uint64_t>(got);
    }
    propagate(kRoot);
  }

  /* Roots: words that are not in memory (registers). */
  void scan_words(std::span<const uint64_t> words) {
    for (uint64_t w : words) reach(w, true);
    propagate(kRoot);
  }

  /* After the roots: the lost blocks, grouped in cliques. Then kind() is final. */
  void finish() {
    for (size_t i = 0; i < blocks_.size(); ++i) {
      if (state_[i] != State::kUnreached) continue;
      stack_.push_back(i);
      propagate(i);
    }
  }

  size_t size() const { return blocks_.size(); }
  const Block& block(size_t i) const { return blocks_[i]; }
  LeakKind kind(size_t i) const {
    switch (state_[i]) {
      case State::kReachable: return LeakKind::kReachable;
      case State::kPossible: return LeakKind::kPossible;
      case State::kIndirect: return LeakKind::kIndirect;
      case State::kUnreached: return LeakKind::kDefinite;
    }
    return LeakKind::kDefinite;
  }
  uint64_t roots_bytes() const { return roots_bytes_; }

  static constexpr uint64_t kGap = 4096;
  static constexpr size_t kChunk = 1 << 20;

 private:
  enum class State : uint8_t { kUnreached, kPossible, kReachable, kIndirect };
  static constexpr size_t kRoot = ~size_t{0};

  // The block holding p, or npos.
  size_t find(uint64_t p) const {
    auto it = std::upper_bound(blocks_.begin(), blocks_.end(), p,
                               [](uint64_t v, const Block& b) { return v < b.address; });
    if (it == blocks_.begin()) return kNone;
    const Block& b = *--it;
    if (p < b.address + b.size || p == b.address) return static_cast<size_t>(it - blocks_.begin());
    return kNone;
  }

  uint64_t word_of(size_t i, uint64_t off) const {
    uint64_t w = 0;
    if (off + 8 <= blocks_[i].size) std::memcpy(&w, copy_.data() + offset_[i] + off, 8);
    return w;
  }

  // memcheck's default heuristics for an interior pointer at `off` into block i.
  bool heuristic(size_t i, uint64_t off) const {
    uint64_t size = blocks_[i].size;
    if (off == 24) {  // stdstring: length, capacity, refcount, chars
      uint64_t length = word_of(i, 0), capacity = word_of(i, 8);
      if (size >= 24 && 3 * 8 + capacity + 1 == size && length <= capacity) return true;
    }
    if (off == 8) {
      uint64_t first = word_of(i, 0);
      if (first > 0 && size - 8 == first) return true;          // length64
      if (first > 0 && (size - 8) % first == 0) return true;    // newarray
    }
    return false;
  }

  // A pointer found in a root (prior_definite) or in a reached block.
  void reach(uint64_t p, bool prior_definite) {
    size_t i = find(p);
    if (i == kNone || state_[i] == State::kReachable) return;
    uint64_t off = p - blocks_[i].address;
    bool start = off == 0 || heuristic(i, off);
    if (start && prior_definite) {
      state_[i] = State::kReachable;
      stack_.push_back(i);
    } else if (state_[i] == State::kUnreached) {
      state_[i] = State::kPossible;
      stack_.push_back(i);
    }
  }

  // In the clique of `leader`: every unreached block it reaches is indirectly lost.
  void absorb(uint64_t p, size_t leader) {
    size_t i = find(p);
    if (i == kNone || i == leader || state_[i] != State::kUnreached) return;
    state_[i] = State::kIndirect;
    stack_.push_back(i);
  }

  void scan_words(const uint8_t* data, size_t n, size_t leader) {
    for (size_t k = 0; k < n; ++k) {
      uint64_t w;
      std::memcpy(&w, data + 8 * k, 8);
      if (w < 4096) continue;
      if (leader == kRoot) reach(w, true);
      else absorb(w, leader);
    }
  }

  // Scans the blocks on the stack: from the roots (leader kRoot), or in a clique.
  void propagate(size_t leader) {
    while (!stack_.empty()) {
      size_t i = stack_.back();
      stack_.pop_back();
      const uint8_t* data = copy_.data() + offset_[i];
      // Word-aligned in the process: blocks start aligned.
      uint64_t skip = (8 - (blocks_[i].address & 7)) & 7;
      if (blocks_[i].size <= skip) continue;
      size_t n = static_cast<size_t>((blocks_[i].size - skip) / 8);
      if (leader == kRoot) {
        bool definite = state_[i] == State::kReachable;
        for (size_t k = 0; k < n; ++k) {
          uint64_t w;
          std::memcpy(&w, data + skip + 8 * k, 8);
          if (w >= 4096) reach(w, definite);
        }
      } else {
        scan_words(data + skip, n, leader);
      }
    }
  }

  static constexpr size_t kNone = ~size_t{0};
  std::vector<Block> blocks_;
  std::vector<State> state_;
  std::vector<uint64_t> offset_;  // of each block's bytes in copy_
  std::vector<uint8_t> copy_;
  std::vector<size_t> stack_;
  uint64_t roots_bytes_ = 0;
};

}  // namespace ft::heap

#endif /* FUNCTRACER_LEAK_SCAN_H */
