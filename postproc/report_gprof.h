// The gprof report: the traced calls of a program as a gmon.out file, so that
// `gprof PROGRAM gmon.out` prints a flat profile and a call graph of a program that was
// never compiled with -pg. Written to gmon.out in the current directory unless -o
// names another file.
//
// The format is glibc's (<sys/gmon_out.h>), in this machine's byte order, with
// addresses the size of a pointer:
//   header      "gmon", version 1 (4 bytes), 12 bytes of padding
//   tag 0       GMON_TAG_TIME_HIST: low_pc, high_pc, hist_size (bins), prof_rate,
//               dimension "seconds" (15 bytes, zero-padded), abbreviation 's', then
//               hist_size 16-bit bins, each counting samples of 1/prof_rate seconds
//               of the code in [low_pc + i * bin, low_pc + (i + 1) * bin)
//   tag 1       GMON_TAG_CG_ARC: from_pc, self_pc, count (32 bits)
// Addresses are the executable's link-time addresses (runtime address minus the load
// bias of its mapping, Symbolizer::key), so position-independent executables work,
// and gprof finds them in the executable's symbol table.
//
// Time: each traced function's self time (CallGraph) becomes samples spread evenly
// over the histogram bins that lie wholly inside its ELF symbol, so gprof gives all of
// it to that function. A bin is 2 bytes (gprof's UNIT), doubled until the histogram
// holds at most 4M bins. prof_rate is the largest power of ten up to 1 GHz for which
// every function's samples fit into its bins (65535 per bin): with it, times are
// exact to 1 ns, and the resolution ("Each sample counts as ...") coarsens only for
// functions with a lot of time and few bytes.
//
// Arcs: for each caller -> callee pair of traced functions and each call site, how
// often. from_pc is the call site (CallGraph's arc site: the call record's return
// address, at link time) minus 1, inside the call instruction, so that `gprof -l`
// names the line of the call (a return address may be the first byte of the next
// line's code) and each call site is an arc of its own; the caller's entry address
// when the site is unknown (older traces, calls through untraced functions). self_pc
// is the callee's entry. gprof can only name functions of the executable: functions in shared
// libraries and the arcs that touch them are left out, and so are outermost calls,
// whose caller was not traced (gprof shows such a function as <spontaneous>; trace
// its caller, e.g. main, to see those calls). A line on stderr says how many.
//
// Several traces must be processes of the same executable (same build-id, else an
// error names both); their samples and arcs are summed.
#pragma once

#include "common/result.h"
#include "postproc/report.h"

namespace ft::post {

Status report_gprof(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
