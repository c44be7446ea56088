// HeapRankReport: the reports that list backtrace groups ranked by one pair of heap
// counts and differ only in which counts and words they show (allocators,
// temporary). Each gives its ranking and its words; the ranking (rank_groups), the
// JSON layout {TOTALS..., "processes", "groups_total", "groups": [{COUNTS...,
// "function", "mangled", "frames"}]} and the text layout (a summary line, then per
// group a headline and its frames) are written once, here.
#pragma once

#include <string>

#include "common/result.h"
#include "postproc/heap_counts.h"
#include "postproc/json_writer.h"
#include "postproc/report.h"

namespace ft::post {

struct HeapRankReport {
  CountRank by_count;  // the order by default and with --sort count
  CountRank by_bytes;  // with --sort bytes
  // JSON: the totals that open the object, before "processes".
  void (*totals_json)(JsonWriter& w, const RankedGroups& ranked);
  // JSON: a group's counts, before its function and frames.
  void (*counts_json)(JsonWriter& w, const HeapCounts& counts);
  // Text: the summary line up to and with its "(", which the group totals close.
  std::string (*summary)(const RankedGroups& ranked);
  // Text: the line that heads a group.
  std::string (*headline)(const SelectedGroup<HeapCounts>& group);
};

Status write_heap_rank_report(const HeapRankReport& report, const ReportOptions& options, Output& out,
                              Diagnostics& diag);

}  // namespace ft::post
