// The dot report: a call graph in graphviz's DOT language (dot -Tsvg, xdot).
//
// From calltrace traces (the default when a trace's header lists calltrace, or with
// --metric=calls or --metric=time): nodes are the traced functions, labelled with the
// demangled name, self and total time and calls (as the calls report counts them);
// an edge caller -> callee is labelled with the calls the caller made to the callee
// directly ("N calls"), and, with --metric=time, first the time spent in those calls
// (a call made while another activation of the callee is open on the thread, i.e.
// recursion, is inside that one's time and not added again).
// Calls with no traced caller (the outermost of a thread) make no edge.
//
// From memtrace traces (the default otherwise, or --metric=bytes): the graph of the
// recorded backtraces of every allocation, weighted by the bytes allocated: a node is
// a function of a backtrace (resolved like the leaks report, inlined frames included)
// or the allocator the program called (malloc, operator new); an edge caller -> callee
// is a call in a backtrace, labelled with the bytes and allocations of the backtraces
// that hold it ("N bytes\nM allocations"). A node's total is the bytes of the
// backtraces that hold it, its self the bytes it allocated itself.
//
// Pen width and colour (blue for the lightest, red for the heaviest) of nodes and
// edges scale with the metric. Node names are "fN"; function names are only in the
// labels, escaped for DOT's quoted strings, so any C++ name is fine.
#pragma once

#include "common/result.h"
#include "postproc/report.h"

namespace ft::post {

// `s` as the inside of a DOT quoted string: backslash, quote and newline escaped.
std::string dot_escape(std::string_view s);

Status report_dot(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
