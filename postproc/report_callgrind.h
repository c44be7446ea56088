// The callgrind report: the traced calls as a profile in valgrind's callgrind format
// ("Callgrind Format Specification", valgrind's docs/callgrind-format), for
// KCachegrind, qcachegrind and callgrind_annotate.
//
//   version: 1, creator:, pid: (one process), cmd:, positions: line, events: ns
//   ob=/fl=/fn=      each traced function (name compression: "(id) name" the first
//                    time, "(id)" after), at the module, source file and line of its
//                    entry address (Symbolizer; "???" and line 0 when unknown)
//   LINE SELF        its self time in ns at that line
//   fi=              when a call site is in another file than the function's entry
//   cob=/cfl=/cfn=   each function it called, per call site,
//   calls=N LINE     how often, the callee's line,
//   LINE INCLUSIVE   and the inclusive time of those calls, at the line of the call:
//                    the arc's call site (CallGraph) resolved at callsite - 1, the
//                    caller's own frame there (not code inlined into it); the
//                    caller's entry line when the site is unknown (older traces,
//                    calls through untraced functions, no DWARF line there).
//                    callgrind_annotate's annotated source then shows each call
//                    ("=> file:callee (Nx)") under the line that made it
//   summary:/totals: the sum of every self time
// Times come from CallGraph (postproc/call_graph.h): a recursive call adds its count
// but no inclusive time, as callgrind records it, so the inclusive time that
// callgrind_annotate --inclusive=yes and KCachegrind show for a function (the sum of
// its incoming calls) is the wall time spent in it. Outermost calls (their caller was
// not traced) come from the pseudo-function "(untraced caller)", which has no cost of
// its own.
//
// Several traces (processes) give one profile in which the costs of the same function
// (same module file and link-time address) are summed, as in the calls report; `desc:`
// lines name the processes. One part per process would not do: callgrind_annotate
// sums the functions of every part but shows only the last part's summary. For a
// profile per process, give one trace at a time.
#pragma once

#include "common/result.h"
#include "postproc/report.h"

namespace ft::post {

Status report_callgrind(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
