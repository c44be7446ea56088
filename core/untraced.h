// Untraced functions: a function the plugins asked for that the engine could not trace
// (its first instruction cannot be relocated, another tool's breakpoint is already on
// it, its IFUNC resolver chose code in no module). Its calls are missing from the
// trace, so the totals of every report built from it are incomplete: the trace says
// which function is missing (an `untraced` record, doc/trace-format.md §3.2), and the
// user is told once per function, in words that name the likely cause — an int3
// already there is most often a uprobe of bpftrace or perf.
#pragma once

#include <cstdint>
#include <string>

#include "core/process.h"

namespace ft {

void report_untraced(Process& p, const std::string& function, uint64_t addr, const std::string& reason);

}  // namespace ft
