#include "postproc/heap_replay.h"

#include <algorithm>

#include "functracer/schema.h"

namespace ft::post {

Status HeapReplay::run(const std::vector<std::string>& traces) {
  for (const std::string& path : traces) {
    auto reader = TraceReader::open(path, diag_);
    if (!reader) return reader.error();
    replay(*reader);
    ++processes_;
  }
  return {};
}

void HeapReplay::end_image(ImageEnd how) {
  for (const Heap::Block& b : live_.sorted_blocks()) observer_.on_live_at_end(block(b), how);
  live_.clear();
}

void HeapReplay::replay(TraceReader& reader) {
  live_.clear();
  symbolizer_.begin_process();
  observer_.begin_process(reader);
  uint64_t lost = 0;
  uint64_t heap_records = 0;
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
      ++heap_records;
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
      ++heap_records;
      ++events_;
      auto f = schema::FreeRecord::read(*r);
      if (!f) continue;
      auto released = live_.release(f->address);
      if (released.block) observer_.on_free(block(*released.block), Moment{r->tid, time_ns, r->seq});
    } else if (type == rt::kAllocFailed || type == rt::kBadFree || type == rt::kMap || type == rt::kUnmap) {
      ++heap_records;
    } else if (type == rt::kExec) {
      end_image(ImageEnd::kExec);
    } else if (type == rt::kLost) {
      lost += static_cast<uint64_t>(std::max<int64_t>(r->get_int(schema::key::kCount).value_or(0), 0));
    }
  }
  end_image(stopped ? ImageEnd::kStop : ImageEnd::kEnd);
  observer_.end_process(reader);

  if (lost > 0) {
    diag_.warning(reader.path() + ": " + std::to_string(lost) +
                  (lost == 1 ? " event was" : " events were") +
                  " lost while tracing; heap figures may be missing or wrong");
  }
  if (heap_records == 0 && !stopped) {
    const TraceRecord* h = reader.header();
    const std::string* plugins = h != nullptr ? h->get_str(schema::key::kPlugins) : nullptr;
    if (!header_lists_plugin(h, "memtrace")) {
      diag_.warning(reader.path() + ": traced without memtrace (plugins: " +
                    (plugins != nullptr ? *plugins : std::string("unknown")) +
                    "), so it has no heap records");
    }
  }
}

}  // namespace ft::post
