#include "postproc/heap_replay.h"

#include <algorithm>

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
  // In address order, so that reports do not depend on the hash table's.
  std::vector<std::pair<uint64_t, Live>> blocks(live_.begin(), live_.end());
  std::sort(blocks.begin(), blocks.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [address, l] : blocks) observer_.on_live_at_end(block(address, l), how);
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
    if (type == "alloc") {
      ++heap_records;
      ++events_;
      auto address = r->get_hex("address");
      if (!address) continue;
      Moment when{r->tid, time_ns, r->seq};
      if (auto it = live_.find(*address); it != live_.end()) {
        observer_.on_free(block(*address, it->second), when);
        live_.erase(it);
      }
      uint64_t size = static_cast<uint64_t>(std::max<int64_t>(r->get_int("size").value_or(0), 0));
      if (!filter.accepts(r->tid, size, time_ns, r->seq)) continue;
      Live l{size, sites_.intern(*r, symbolizer_), r->tid, time_ns, r->seq};
      live_.emplace(*address, l);
      observer_.on_alloc(block(*address, l));
    } else if (type == "free") {
      ++heap_records;
      ++events_;
      auto address = r->get_hex("address");
      if (!address) continue;
      auto it = live_.find(*address);
      if (it == live_.end()) continue;
      observer_.on_free(block(*address, it->second), Moment{r->tid, time_ns, r->seq});
      live_.erase(it);
    } else if (type == "alloc_failed" || type == "bad_free" || type == "map" || type == "unmap") {
      ++heap_records;
    } else if (type == "exec") {
      end_image(ImageEnd::kExec);
    } else if (type == "lost") {
      lost += static_cast<uint64_t>(std::max<int64_t>(r->get_int("count").value_or(0), 0));
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
    const std::string* plugins = h != nullptr ? h->get_str("plugins") : nullptr;
    if (!header_lists_plugin(h, "memtrace")) {
      diag_.warning(reader.path() + ": traced without memtrace (plugins: " +
                    (plugins != nullptr ? *plugins : std::string("unknown")) +
                    "), so it has no heap records");
    }
  }
}

}  // namespace ft::post
