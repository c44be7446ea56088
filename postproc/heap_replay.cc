#include "postproc/heap_replay.h"

#include "functracer/schema.h"

namespace ft::post {

Status HeapReplay::run(const std::vector<std::string>& traces) {
  return replay_each_trace(traces, diag_, [this](TraceReader& reader) {
    replay(reader);
    ++processes_;
  });
}

void HeapReplay::end_image(ImageEnd how) {
  for (const Heap::Block& b : live_.sorted_blocks()) observer_.on_live_at_end(block(b), how);
  live_.clear();
}

void HeapReplay::discard_image(const Moment& when) {
  for (const Heap::Block& b : live_.sorted_blocks()) observer_.on_discard(block(b), when);
  live_.clear();
}

void HeapReplay::replay(TraceReader& reader) {
  live_.clear();
  symbolizer_.begin_process();
  observer_.begin_process(reader);
  records_.begin();
  std::optional<uint64_t> start_ts;
  if (const TraceRecord* h = reader.header()) start_ts = h->ts_ns;
  const BlockFilter& filter = options_.filter;
  bool stopped = false;

  while (const TraceRecord* r = reader.next()) {
    if (!start_ts) start_ts = r->ts_ns;
    uint64_t time_ns = r->ts_ns > *start_ts ? r->ts_ns - *start_ts : 0;
    if (options_.stop && options_.stop->before(time_ns, r->seq)) {
      stopped = true;
      break;
    }
    symbolizer_.observe(*r);
    const std::string& type = r->type;
    namespace rt = schema::type;
    if (type == rt::kAlloc) {
      records_.count();
      ++events_;
      auto a = schema::AllocRecord::read(*r);
      if (!a) continue;
      // A block still live at the address ends first; the new one is followed only
      // when the filter accepts it.
      if (auto old = live_.take(a->address)) observer_.on_free(block(*old), Moment{r->tid, time_ns, r->seq});
      if (!filter.accepts(r->tid, a->size, time_ns, r->seq)) continue;
      Origin origin{sites_.intern(*r, symbolizer_), r->tid, time_ns, r->seq};
      live_.alloc(a->address, a->size, origin);
      observer_.on_alloc(Block{a->address, a->size, origin.site, origin.tid, origin.time_ns, origin.seq});
    } else if (type == rt::kFree) {
      records_.count();
      ++events_;
      auto f = schema::FreeRecord::read(*r);
      if (!f) continue;
      auto released = live_.release(f->address);
      if (released.block) observer_.on_free(block(*released.block), Moment{r->tid, time_ns, r->seq});
    } else if (type == rt::kAllocFailed || type == rt::kBadFree || type == rt::kMap || type == rt::kUnmap) {
      records_.count();
    } else if (type == rt::kExec) {
      discard_image(Moment{r->tid, time_ns, r->seq});
    } else if (type == rt::kLost) {
      records_.lost(*r);
    }
  }
  end_image(stopped ? ImageEnd::kStop : ImageEnd::kEnd);
  observer_.end_process(reader);

  records_.warn_lost(reader, diag_);
  if (stopped) reader.stop_early();
  if (!stopped) records_.warn_without_plugin(reader, diag_);
  if (!stopped && !reader.has_end_record()) ++cut_short_;
}

}  // namespace ft::post
