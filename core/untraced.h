// Untraced functions: a function the plugins asked for that the engine could not trace
// (its first instruction cannot be relocated, another tool's breakpoint is already on
// it, no out-of-line area could be mapped near it, its code cannot be read or written,
// its IFUNC resolver failed or chose code in no module — the vDSO —, the process ended
// before its IFUNC was resolved, a forked child got no recorder for its patched entry),
// or a whole module whose file cannot be read. Its calls are missing from the trace, so
// the totals of every report built from it are incomplete: the trace says which
// function is missing (an `untraced` record, doc/trace-format.md §3.2), and the user is
// told once per function, even with -q since the numbers are affected, in words that
// name the likely cause — an int3 already there is most often a uprobe of bpftrace or
// perf.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/process.h"

namespace ft {

// Writes the record and tells the user (once per function in the session).
void report_untraced(Process& p, const std::string& function, uint64_t addr, const std::string& reason);
// A module none of whose functions can be traced (its file cannot be read, a main
// program of another architecture): its path stands for its functions, unknown
// without its symbols.
void report_untraced_module(Process& p, const std::string& path, uint64_t base, const std::string& reason);
// Whether the user has not been told about `function` yet in this session (each
// process of -f, each exec, would repeat it); true once.
bool first_telling(const std::string& function);
// Writes the record only: for a caller that tells the user itself, in one line for
// several functions (IFUNCs whose resolvers chose the vDSO).
void record_untraced(Process& p, const std::string& function, uint64_t addr, const std::string& reason);
// Every function (or module) found untraced in this session, each once, in the order
// found, whether or not a trace file was written: the run summary's "not traced" line.
const std::vector<std::string>& untraced_so_far();

}  // namespace ft
