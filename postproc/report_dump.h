// The dump report: every record of every trace, in file order. Records show their
// backtraces as `frames` (the reader resolves `stack=N`; `stack` records are not shown).
//
// Text: each record's line prefixed by the pid, "PID: SEQ TID TS TYPE fields...".
// --json: JSON Lines, one object per record:
//   {"pid": P, "tid": T, "seq": S, "ts_ns": N, "type": "call", FIELD: VALUE, ...}
// with every field under its own key: integers as numbers, hex values as "0x..."
// strings, hex lists as arrays of "0x..." strings, strings as strings (bytes that are
// not UTF-8 become U+FFFD). A "function" field is followed by "function_demangled".
// A field whose key is already taken (pid, tid, seq, ts_ns, type, or a repeated key)
// is written as "field_KEY"; the header's pid field, equal to "pid", is not repeated.
#pragma once

#include <string>

#include "common/demangle.h"
#include "common/result.h"
#include "common/trace_record.h"
#include "postproc/report.h"

namespace ft::post {

// One record as the JSON object described above (no newline).
void append_record_json(std::string& out, int64_t pid, const TraceRecord& r,
                        Demangler& demangler);

Status report_dump(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
