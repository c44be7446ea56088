// The speedscope report: the traces in speedscope's own file format
// (https://www.speedscope.app/file-format-schema.json, the types of its
// src/lib/file-format-spec.ts), one JSON file that https://www.speedscope.app and the
// `speedscope` command open offline, with every profile in one file:
//
//  - call records (calltrace): one "evented" profile per thread, "EXE pid P tid T",
//    unit nanoseconds: an open-frame event ("O") at each call and a close-frame event
//    ("C") at its return or unwinding, as the CallModel (call_model.h) rebuilds the
//    activations; so speedscope's time of a function is the calls report's. Times are
//    counted from the earliest call among the traces (the traces share
//    CLOCK_MONOTONIC). speedscope needs the events of a profile in non-decreasing time
//    and properly nested; the engine writes them so, and in a trace that does not hold
//    to it an event is moved to the time of the one before it.
//  - heap records (memtrace): one "sampled" profile per metric with a value, each
//    sample a backtrace group (heap_stacks.h: resolved, outermost frame first, the
//    allocating function as the leaf) weighted by its value: allocated (bytes),
//    allocations, leaked (bytes), leaked blocks, peak (bytes live at each process's
//    peak, summed over the processes), temporary (bytes) and temporary allocations.
//    The weights of a profile add up to the total of the leaks, allocators, peak or
//    temporary report. Resolved frames carry their file and line.
// --tid keeps one thread's calls (and allocations); the block and group filters of
// the heap reports apply to the heap profiles. Traces without call or heap records
// give a file without profiles, and a warning.
#pragma once

#include "common/result.h"
#include "postproc/report.h"

namespace ft::post {

Status report_speedscope(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
