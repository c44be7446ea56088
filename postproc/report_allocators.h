// The allocators report: the backtraces that allocate most often (--sort count, the
// default) or the most bytes (--sort bytes), over the whole run, freed or not; what
// heaptrack calls the top allocators. Each group: allocations, bytes allocated, and
// how many of those blocks leaked.
//
// JSON: {"allocations", "allocated_bytes", "processes", "groups_total", "groups":
// [{"allocations", "bytes", "leaked_blocks", "function", "mangled", "frames": [...]}]}
// (frames as in the leaks report).
#pragma once

#include "common/result.h"
#include "postproc/report.h"

namespace ft::post {

Status report_allocators(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
