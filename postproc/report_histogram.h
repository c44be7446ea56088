// The histogram report: how many allocations were made of each size, in power-of-two
// buckets (0, 1, 2-3, 4-7, ..., 2^k..2^(k+1)-1), with their bytes and how many of them
// leaked, over every trace given. Small-block churn and odd sizes show at a glance.
//
// JSON: {"allocations", "allocated_bytes", "leaked_blocks", "buckets": [{"min", "max",
// "allocations", "bytes", "leaked_blocks"}]}: the buckets from the smallest to the
// largest size seen, empty ones between included.
#pragma once

#include "common/result.h"
#include "postproc/report.h"

namespace ft::post {

Status report_histogram(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
