// The tree report: for each process (in the order the traces are given) and each of
// its threads (in order of first appearance), the calls as an indented tree:
//
//   == pid 100 tid 100 ==
//   main(0x1, 0x7ffd5b3c8e48) {
//     puts@plt("hello") = 0x6
//     parse(0x1) {
//       lex(0x1) <unwound: exception>
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
#pragma once

#include "common/result.h"
#include "postproc/report.h"

namespace ft::post {

Status report_tree(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
