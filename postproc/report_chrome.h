// The chrome report: the traces as Chrome Trace Event Format JSON ("JSON Object
// Format"), which Perfetto UI (ui.perfetto.dev), chrome://tracing and speedscope open,
// showing every thread's calls as a flame chart on one timeline with the heap.
//
//   {"traceEvents": [
//     {"name": "fib", "cat": "call", "ph": "X", "ts": 12.345, "dur": 3.5, "pid": 7,
//      "tid": 7, "args": {"args": "5", "return": "5"}},
//     ...],
//    "displayTimeUnit": "ns",
//    "otherData": {"command_line": "./app 5", ...}}
//
// Events, one per line, in the order they are known (viewers sort by time):
//  - "X" (complete) per activation of a traced function (CallModel), at its end:
//    name the demangled function, "cat" "call", args: "args" and "return" as the tree
//    report shows them (call_values.h), "unwound" with the reason when the frame was
//    left without returning (longjmp, exception, exit), "implicit": true when no record
//    ended it (call_model.h).
//  - "M" (metadata) process_name ("EXE (pid N)", the image the process ran last),
//    process_labels (its command line), thread_name ("main" or "thread N", N counting
//    the threads in order of appearance) and thread_sort_index.
//  - "i" (instant) for the lifecycle: process start, exec, exit, killed, detach
//    (process scope); thread start, thread exit, signals, lost events (thread scope).
//  - "C" (counter) "heap" with args {"live_bytes": N} for traces with memtrace
//    records: a sample when the process starts (0) and one per change of its live heap
//    (live_heap.h); changes with the same timestamp give one sample, the total after
//    the last of them.
//
// Times: "ts" and "dur" are microseconds with three decimals, so exact to the
// nanosecond, counted from the earliest start among the traces given (they share one
// clock, CLOCK_MONOTONIC), which keeps the numbers small: the viewers read them into
// doubles, which hold every nanosecond only up to 2^53 ns (104 days of uptime).
// otherData says where that zero is, and gives the command line and executable of the
// process that started first (with -f, the one launched). Each thread's events nest
// properly in whole nanoseconds: a callee that would start before its caller or before
// its previous sibling's end is moved to start there, and a caller ends no earlier than
// its last callee (only traces with records out of order need it).
//
// --tid N keeps the calls and thread-scope events of thread N only; the process-scope
// events and the heap counter stay whole. Memory is bounded by the open frames, the
// threads and the live heap blocks: events are written as they are known.
#pragma once

#include "common/result.h"
#include "postproc/report.h"

namespace ft::post {

Status report_chrome(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
