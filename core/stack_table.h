// StackTable: the call stacks a trace file has written so far, each under a number,
// so that a backtrace met again is written as that number (`stack=N`) instead of its
// frames (doc/trace-format.md §3.2, `stack` records). Programs allocate from a few
// thousand distinct places; writing the eight hex frames of each event again was most
// of the bytes of an `alloc` line and of the cost of formatting and compressing it.
//
// One table per trace file (a process: a forked child starts its own). Ids count from
// 1 in the order stacks are added. The table is bounded: once it holds kMaxStacks
// stacks or kMaxFrames frames, intern() adds no more and returns 0, and the writer
// writes the frames themselves, as a trace that never refers to a stack does. So are
// lists longer than kMaxStackFrames (common/trace_record.h), which readers refuse as
// stacks.
//
// Open addressing over a flat array of frames: a lookup hashes the frames and
// compares with at most a few candidates; nothing is allocated per lookup.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ft {

class StackTable {
 public:
  static constexpr size_t kMaxStacks = size_t{1} << 20;
  static constexpr size_t kMaxFrames = size_t{8} << 20;  // 64 MiB of frames

  explicit StackTable(size_t max_stacks = kMaxStacks, size_t max_frames = kMaxFrames);

  struct Interned {
    uint64_t id = 0;     // 0: not in the table and not added (n == 0 or too long, or the table is full)
    bool added = false;  // the stack is new: its `stack` record must be written first
  };
  Interned intern(const uint64_t* frames, size_t n);

  size_t size() const { return entries_.size(); }
  // Stacks that were not added because the table was full (written inline).
  uint64_t refused() const { return refused_; }

 private:
  struct Entry {
    size_t offset;  // into frames_
    uint32_t count;
    uint32_t hash;
  };
  static uint64_t hash(const uint64_t* frames, size_t n);
  bool same(const Entry& e, const uint64_t* frames, size_t n) const;
  void grow();

  size_t max_stacks_;
  size_t max_frames_;
  std::vector<uint64_t> frames_;  // every stack's frames, one after the other
  std::vector<Entry> entries_;    // id - 1 -> its frames
  std::vector<uint32_t> slots_;   // open addressing: id, 0 = empty; size a power of two
  uint64_t refused_ = 0;
};

}  // namespace ft
