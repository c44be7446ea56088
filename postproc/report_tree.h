// The tree report: for each process (in the order the traces are given) and each of
// its threads (in order of first appearance), the calls as an indented tree:
//
//   == pid 100 tid 100 ==
//   main(0x1, 0x7ffd5b3c8e48) { [libc-start.c:58]
//     puts@plt("hello") = 0x6 [app.c:12]
//     parse(0x1) { [app.c:13]
//       lex(0x1) <unwound: exception> [parse.c:40]
//     } <unwound: exception>
//   } = 0x0
//
// Names are demangled without their parameter list (the values follow instead).
// Arguments: the first `nargs` argument registers when the call record says how many
// parameters the function has, otherwise all six recorded; in hex, except that an
// argument with a string value (strI field) is shown as a quoted, escaped string.
// A call without callees is one line; one with callees opens a brace that closes with
// its return value. Frames left without returning show "<unwound: REASON>". Signals,
// lost events and exec show as "<...>" lines at the depth where they happened.
// With --time each finished call also shows its inclusive duration, "<1.250 us>".
// Each call line ends with where the call was made, " [FILE:LINE]" (the file's last
// path component): the call record's callsite (a return address) resolved at
// callsite - 1 through the Symbolizer, the innermost source frame, so a call made in
// code inlined into its caller shows the inlined code's line. Nothing is shown when
// the trace has no callsite (older traces) or the line is unknown (no DWARF there);
// --no-callsite leaves them all out. --sysroot and --debug-dir say where the files are.
#pragma once

#include "common/result.h"
#include "postproc/report.h"

namespace ft::post {

Status report_tree(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
