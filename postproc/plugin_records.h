// PluginRecords: what a replay of one plugin's records (heap: memtrace, descriptors:
// fileops) counts in each trace to warn when its figures cannot be trusted:
//  - events lost while tracing (`lost` records): the figures may be missing or wrong;
//  - none of the plugin's records in a trace whose header does not list the plugin:
//    the trace was recorded without it, which is not the same as "nothing happened";
// (Functions the engine could not trace, its `untraced` records, are warned about by
// TraceReader for every report.)
// One per replay; begin() at the start of each trace.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/trace_record.h"
#include "postproc/trace_reader.h"

namespace ft::post {

class PluginRecords {
 public:
  // `plugin`: its name (schema::plugin); `figures`: what the report counts from its
  // records, as in "heap figures" and "heap records".
  PluginRecords(const char* plugin, const char* figures) : plugin_(plugin), figures_(figures) {}

  void begin() {
    records_ = lost_ = 0;
  }
  // One of the plugin's records.
  void count() { ++records_; }
  // A `lost` record: adds the events it says were lost.
  void lost(const TraceRecord& r);

  uint64_t records() const { return records_; }

  // At the end of a trace: the warning about lost events, if any.
  void warn_lost(const TraceReader& reader, Diagnostics& diag) const;
  // At the end of a trace: the warning about a trace recorded without the plugin.
  void warn_without_plugin(const TraceReader& reader, Diagnostics& diag) const;

 private:
  const char* plugin_;
  const char* figures_;
  uint64_t records_ = 0;
  uint64_t lost_ = 0;
};

}  // namespace ft::post
