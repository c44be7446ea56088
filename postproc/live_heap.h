// LiveHeap: the total of live heap bytes of one process as its memtrace records
// (doc/trace-format.md §3.5) arrive one by one, for reports that draw the heap over
// time (the chrome report's counter track).
//
// The rules are HeapReplay's (heap_replay.h) and memtrace's, from the one heap model
// (functracer/heap_model.h), without sites or filters: an `alloc` makes its block live, replacing a live block at the same address (its release was
// not recorded); a `free` of a live block ends it; a `free` of an address that is not
// live (from before an attach, or inherited from the parent of a fork) is ignored; at
// an `exec` the heap starts empty. Other records change nothing.
//
// Memory is one hash-table entry per live block.
#pragma once

#include <cstdint>

#include "common/trace_record.h"
#include "functracer/heap_model.h"

namespace ft::post {

class LiveHeap {
 public:
  // Applies one record; true when the live total changed.
  bool apply(const TraceRecord& r);

  uint64_t bytes() const { return live_.live_bytes(); }
  uint64_t blocks() const { return live_.blocks(); }
  void clear() { live_.clear(); }

 private:
  heap::HeapModel<> live_;
};

}  // namespace ft::post
