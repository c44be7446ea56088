// What functracer leaves in a traced process's memory, and how it is taken out or taken
// over: entry breakpoint bytes, hijacked return addresses, out-of-line areas and the
// return records of returns handled in the process (fast_return.h).
//
// Taking out (detach, a fork child that is not followed, functracer's own fault): the
// original bytes go back under every breakpoint and every hijacked return address is
// put back; the areas stay mapped (a thread may still run in one, e.g. a signal
// handler interrupted there) and are marked with how much of them is used, so that
// the next functracer to attach adopts them instead of mapping more.
#pragma once

#include <vector>

#include "core/procfs.h"
#include "core/process.h"

namespace ft {

// Every breakpoint byte and hijacked return address out of p; its areas marked for
// the next functracer. Best effort: a process that is gone has nothing left to fix.
void remove_instrumentation(Process& p);

// Attach: takes over the areas and return records an earlier functracer left in p
// (found in its maps by their size, permissions and mark).
void adopt_areas(Process& p, const std::vector<MapsEntry>& maps);

}  // namespace ft
