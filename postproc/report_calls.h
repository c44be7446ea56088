// The calls report: per function, how often it was called and where the time went.
//
//   calls     activations (call records)
//   total_ns  inclusive time (end - call timestamp, end being the return or unwound
//             record), summed over the outermost activations only: an activation made
//             while another activation of the same function is open on the same thread
//             (recursion) is already inside that one's time, so it is not added again.
//             total_ns is then wall time spent in the function, as gprof and uftrace
//             report it, and never exceeds the span of the trace per thread.
//   self_ns   inclusive time minus the inclusive time of its traced direct callees,
//             summed over all activations (these intervals never overlap).
//   avg_ns    total_ns / calls, rounded down.
//   unwound   activations that ended without returning (longjmp, exception, exit, or
//             closed by the reader because the trace was cut short).
// Functions are keyed by mangled name across every process and thread given, and
// sorted by total_ns descending (then calls descending, then name).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "postproc/report.h"

namespace ft::post {

struct FunctionStats {
  std::string mangled;
  std::string name;  // demangled
  uint64_t calls = 0;
  uint64_t total_ns = 0;
  uint64_t self_ns = 0;
  uint64_t unwound = 0;
  uint64_t avg_ns() const { return calls ? total_ns / calls : 0; }
};

Result<std::vector<FunctionStats>> compute_call_stats(const ReportOptions& options,
                                                      Diagnostics& diag);

Status report_calls(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
