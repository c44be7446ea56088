// Running out of memory, said and survived: functracer's own memory is bounded by
// the limits it runs under (RLIMIT_AS, a cgroup's memory.max). Near one, or when an
// allocation fails, it detaches from the traced processes cleanly (their traces end
// there) rather than being killed or aborting with them held.
//
//  - Under RLIMIT_AS, functracer's address space is compared with the limit as it runs
//    (take_exceeded), and at 75 % it lets go.
//  - An allocation that fails all the same (operator new): a reserve set aside at the
//    start is given back so that the detach has room, and the condition is noted; a
//    second failure, with the reserve gone, ends functracer with a line on stderr, as
//    a SIGKILL would (an attached program runs on: survival.h).
//  - A cgroup memory limit kills with SIGKILL (the OOM killer), which no handler
//    sees: the working set of functracer's cgroup (v2 or v1: its usage but for the
//    inactive file pages) is compared with its limit as it runs, and at 75 % the same
//    detach happens (75 %: the memory grows in steps, a hash table's buckets doubling). (In launch mode the
//    program shares the cgroup: its memory counts too.)
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ft::memory_budget {

// Sets the reserve aside and installs the new-handler. Once, at the start.
void install();
// Looks (the limits' files at most every 100 ms: cheap enough for every event and
// every idle moment); pending() then says whether functracer must let go.
void poll(uint64_t now_ns);
bool pending();
// Why functracer must let go now (one line's worth, for the error message), once; then
// nullopt. Polls first.
std::optional<std::string> take_exceeded(uint64_t now_ns);
// Whether it ever ran out (the run's exit status is then 1).
bool ran_out();
// Bytes functracer may still take before it would let go (UINT64_MAX: no limit
// known): what a large allocation (a leak scan's copy of a heap) checks first.
uint64_t room();

}  // namespace ft::memory_budget
