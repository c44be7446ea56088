// HeapReplay: replays the memtrace records of trace files (doc/trace-format.md §3.5)
// into block lifetimes, which the heap reports (leaks, peak, temporary, histogram,
// allocators, diff) observe.
//
// Each trace is one process, replayed on its own through the heap model memtrace
// follows while tracing (functracer/heap_model.h): an `alloc` makes its block live, a
// `free` of a live block ends it; a `free` of an address that is not live is ignored
// (a block from before an attach, or inherited from the parent of a fork), and
// `alloc_failed`, `bad_free`, `map` and `unmap` are not heap blocks. An `alloc` at an
// address that is already live ends that block first (its release was not recorded).
// The blocks live at the end of the trace (its end record or, for a trace cut short,
// the cut), or at the --at moment where the replay was told to stop, are reported as
// live at the end. An `exec` discards the heap of the image that made it, as valgrind
// does: the blocks live then are reported as discarded, neither released by the
// program nor live at its end (so never leaks), and the new image starts empty.
//
// Memory is bounded by the live blocks and the distinct sites, not by the number of
// events: records are streamed (TraceReader) and each block keeps a 32-bit SiteId
// (site_table.h). Blocks rejected by the BlockFilter are not followed at all.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "functracer/heap_model.h"
#include "functracer/schema.h"
#include "postproc/heap_filter.h"
#include "postproc/plugin_records.h"
#include "postproc/site_table.h"
#include "postproc/symbolizer.h"
#include "postproc/trace_reader.h"

namespace ft::post {

struct Block {
  uint64_t address = 0;
  uint64_t size = 0;
  SiteId site = 0;
  int64_t tid = 0;
  uint64_t time_ns = 0;  // since the start of the trace
  uint64_t seq = 0;
};

// Where a record happened: thread, time since the start of the trace, sequence number.
struct Moment {
  int64_t tid = 0;
  uint64_t time_ns = 0;
  uint64_t seq = 0;
};

enum class ImageEnd { kEnd, kStop };

class HeapObserver {
 public:
  virtual ~HeapObserver() = default;
  virtual void begin_process(const TraceReader& /*reader*/) {}
  virtual void on_alloc(const Block& /*block*/) {}
  // A live block ended: freed, or replaced by an alloc at its address.
  virtual void on_free(const Block& /*block*/, const Moment& /*when*/) {}
  // A block still live at the end of the trace or at the --at moment.
  virtual void on_live_at_end(const Block& /*block*/, ImageEnd /*how*/) {}
  // A block live when its image exec'd: the exec discarded it with the whole heap.
  virtual void on_discard(const Block& /*block*/, const Moment& /*when*/) {}
  virtual void end_process(const TraceReader& /*reader*/) {}
};

// Several observers fed by one replay, each event to each in turn (not owned).
class HeapObserverSet : public HeapObserver {
 public:
  explicit HeapObserverSet(std::vector<HeapObserver*> observers) : observers_(std::move(observers)) {}
  void begin_process(const TraceReader& reader) override {
    for (HeapObserver* o : observers_) o->begin_process(reader);
  }
  void on_alloc(const Block& block) override {
    for (HeapObserver* o : observers_) o->on_alloc(block);
  }
  void on_free(const Block& block, const Moment& when) override {
    for (HeapObserver* o : observers_) o->on_free(block, when);
  }
  void on_live_at_end(const Block& block, ImageEnd how) override {
    for (HeapObserver* o : observers_) o->on_live_at_end(block, how);
  }
  void on_discard(const Block& block, const Moment& when) override {
    for (HeapObserver* o : observers_) o->on_discard(block, when);
  }
  void end_process(const TraceReader& reader) override {
    for (HeapObserver* o : observers_) o->end_process(reader);
  }

 private:
  std::vector<HeapObserver*> observers_;
};

struct HeapReplayOptions {
  BlockFilter filter;
  std::optional<When> stop;  // --at: replay each trace only up to this moment
};

class HeapReplay {
 public:
  HeapReplay(SiteTable& sites, Symbolizer& symbolizer, HeapObserver& observer,
             Diagnostics& diag, HeapReplayOptions options = {})
      : sites_(sites), symbolizer_(symbolizer), observer_(observer), diag_(diag),
        options_(std::move(options)) {}

  // Replays each trace in turn. Fails only when a file cannot be opened or is not a
  // trace; problems inside a trace are warnings.
  Status run(const std::vector<std::string>& traces);

  uint64_t processes() const { return processes_; }
  uint64_t events() const { return events_; }  // alloc and free records read
  // Traces replayed to their end that have no end record: cut short (a full disk, a
  // killed functracer), so their blocks live at the end may have been freed later.
  uint64_t cut_short() const { return cut_short_; }

 private:
  void replay(TraceReader& reader);
  void end_image(ImageEnd how);
  void discard_image(const Moment& when);

  // What is kept of a live block besides its address and size.
  struct Origin {
    SiteId site = 0;
    int64_t tid = 0;
    uint64_t time_ns = 0;
    uint64_t seq = 0;
  };
  using Heap = heap::HeapModel<Origin>;
  static Block block(const Heap::Block& b) {
    return Block{b.address, b.size, b.info.site, b.info.tid, b.info.time_ns, b.info.seq};
  }

  SiteTable& sites_;
  Symbolizer& symbolizer_;
  HeapObserver& observer_;
  Diagnostics& diag_;
  HeapReplayOptions options_;
  Heap live_;
  PluginRecords records_{schema::plugin::kMemtrace, "heap"};
  uint64_t processes_ = 0;
  uint64_t events_ = 0;
  uint64_t cut_short_ = 0;
};

}  // namespace ft::post
