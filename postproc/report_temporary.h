// The temporary report: temporary allocations, as heaptrack counts them: blocks freed
// by the thread that allocated them with no other allocation by that thread in between
// (heap_counts.h). They cost allocator time and do nothing a stack buffer could not.
// Groups are sorted by the number of temporary allocations (--sort count, the
// default) or their bytes (--sort bytes); each also says how many allocations its
// backtrace made in all.
//
// JSON: {"temporary", "temporary_bytes", "allocations", "processes", "groups_total",
// "groups": [{"temporary", "temporary_bytes", "allocations", "function", "mangled",
// "frames": [...]}]} (frames as in the leaks report; "allocations" at the top is every
// allocation of the run).
#pragma once

#include "common/result.h"
#include "postproc/report.h"

namespace ft::post {

Status report_temporary(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
