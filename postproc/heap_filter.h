// Which heap blocks a report looks at: the block-level filters of the heap reports
// (--tid, --size, --from, --to) and the moments they and --at name.
//
// A moment in a trace (When) is either a time since the start of the trace (its header
// record's TS), written with a unit: "250ms", "1.5s", "40us", "1200ns"; or an event,
// written "#SEQ" with the record's sequence number (the first column of a trace line,
// and the "seq" of `dump`). Each trace file is measured from its own start.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace ft::post {

struct When {
  enum class Kind { kTime, kEvent };
  Kind kind = Kind::kTime;
  uint64_t value = 0;  // ns since the start of the trace, or a sequence number

  // An event's position on this moment's axis: its time or its sequence number.
  uint64_t position(uint64_t time_ns, uint64_t seq) const {
    return kind == Kind::kTime ? time_ns : seq;
  }
  // Whether an event at (time_ns, seq) comes after this moment.
  bool before(uint64_t time_ns, uint64_t seq) const { return position(time_ns, seq) > value; }
};

Result<When> parse_when(std::string_view text);
std::string format_when(const When& when);

// Sizes in bytes, both ends included: "64", "1k-4k", "100-", "-1M" (suffixes k, M, G
// are powers of 1024).
struct SizeRange {
  uint64_t min = 0;
  uint64_t max = UINT64_MAX;
  bool contains(uint64_t size) const { return size >= min && size <= max; }
};

Result<SizeRange> parse_size_range(std::string_view text);

struct BlockFilter {
  std::optional<int64_t> tid;   // allocated by this thread
  SizeRange size;               // of this size
  std::optional<When> from;     // allocated at or after
  std::optional<When> to;       // allocated at or before

  bool accepts(int64_t block_tid, uint64_t block_size, uint64_t time_ns, uint64_t seq) const;
  bool empty() const {
    return !tid && size.min == 0 && size.max == UINT64_MAX && !from && !to;
  }
};

}  // namespace ft::post
