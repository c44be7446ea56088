#include "postproc/plugin_records.h"

#include <algorithm>

#include "functracer/schema.h"

namespace ft::post {

void PluginRecords::lost(const TraceRecord& r) {
  lost_ += static_cast<uint64_t>(std::max<int64_t>(r.get_int(schema::key::kCount).value_or(0), 0));
}

void PluginRecords::warn_lost(const TraceReader& reader, Diagnostics& diag) const {
  if (lost_ == 0) return;
  diag.warning(reader.path() + ": " + std::to_string(lost_) + (lost_ == 1 ? " event was" : " events were") +
               " lost while tracing; " + figures_ + " figures may be missing or wrong");
}

void PluginRecords::warn_without_plugin(const TraceReader& reader, Diagnostics& diag) const {
  const TraceRecord* h = reader.header();
  if (records_ > 0 || header_lists_plugin(h, plugin_)) return;
  const std::string* plugins = header_plugins(h);
  diag.warning(reader.path() + ": traced without " + plugin_ + " (plugins: " +
               (plugins != nullptr ? *plugins : std::string("unknown")) + "), so it has no " + figures_ +
               " records");
}

}  // namespace ft::post
