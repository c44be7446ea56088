#include "postproc/report_histogram.h"

#include <fmt/format.h>

#include "postproc/heap_session.h"
#include "postproc/size_histogram.h"

namespace ft::post {

namespace {

// A bucket bound for the text table: "512", "4K", "2M", "1G".
std::string size_text(uint64_t n) {
  if (n >= (uint64_t{1} << 30) && n % (uint64_t{1} << 30) == 0) return fmt::format("{}G", n >> 30);
  if (n >= (uint64_t{1} << 20) && n % (uint64_t{1} << 20) == 0) return fmt::format("{}M", n >> 20);
  if (n >= 1024 && n % 1024 == 0) return fmt::format("{}K", n >> 10);
  return std::to_string(n);
}

}  // namespace

Status report_histogram(const ReportOptions& options, Output& out, Diagnostics& diag) {
  HeapSession session(diag, options.resolve);
  SizeHistogram observer;
  auto processes = session.replay(options.traces, observer, heap_replay_options(options));
  if (!processes) return processes.error();

  SizeBucket total;
  size_t first = observer.buckets.size(), last = 0;
  for (size_t k = 0; k < observer.buckets.size(); ++k) {
    const SizeBucket& b = observer.buckets[k];
    total.allocations += b.allocations;
    total.bytes += b.bytes;
    total.leaked += b.leaked;
    if (b.allocations > 0) {
      first = std::min(first, k);
      last = k;
    }
  }

  std::string text;
  if (options.json) {
    JsonWriter w(text, 2);
    w.begin_object();
    w.key("allocations").unsigned_integer(total.allocations);
    w.key("allocated_bytes").unsigned_integer(total.bytes);
    w.key("leaked_blocks").unsigned_integer(total.leaked);
    w.key("buckets").begin_array();
    for (size_t k = first; k <= last && first < observer.buckets.size(); ++k) {
      const SizeBucket& b = observer.buckets[k];
      w.begin_object();
      w.key("min").unsigned_integer(SizeHistogram::bucket_min(k));
      w.key("max").unsigned_integer(SizeHistogram::bucket_max(k));
      w.key("allocations").unsigned_integer(b.allocations);
      w.key("bytes").unsigned_integer(b.bytes);
      w.key("leaked_blocks").unsigned_integer(b.leaked);
      w.end_object();
    }
    w.end_array();
    w.end_object();
    text += '\n';
    out.write(text);
    return {};
  }

  auto it = std::back_inserter(text);
  fmt::format_to(it, "{} of {} ({})\n", plural(total.allocations, "allocation", "allocations"),
                 plural(total.bytes, "byte", "bytes"), plural(*processes, "process", "processes"));
  if (first == observer.buckets.size()) {
    out.write(text);
    return {};
  }
  uint64_t most = 0;
  for (size_t k = first; k <= last; ++k) most = std::max(most, observer.buckets[k].allocations);
  text += "\nsize from    below   allocations          bytes   leaked\n";
  constexpr uint64_t kBarWidth = 40;
  for (size_t k = first; k <= last; ++k) {
    const SizeBucket& b = observer.buckets[k];
    uint64_t bar = most == 0 ? 0 : (b.allocations * kBarWidth + most - 1) / most;
    std::string below = k == 64 ? std::string("16E") : size_text(SizeHistogram::bucket_max(k) + 1);
    fmt::format_to(it, "{:>9} {:>8} {:>13} {:>14} {:>8} {}\n", size_text(SizeHistogram::bucket_min(k)), below,
                   b.allocations, b.bytes, b.leaked, std::string(bar, '#'));
  }
  out.write(text);
  return {};
}

}  // namespace ft::post
