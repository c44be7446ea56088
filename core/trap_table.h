// The trap table of the guard (core/recorder_abi.h, struct ft_rec_guard) as functracer
// fills it: open addressing by the int3's address, read by the program's SIGTRAP
// handler (ft_recorder_trap) at any moment, functracer being the only writer.
// `slots` lists the entries functracer filled, so that emptying the table touches
// those alone. An entry taken out keeps its place (FT_REC_TRAP_GONE), so that a
// lookup goes on past it to the entries placed after it, and is used again by the
// next trap put in its chain. g->ntraps counts the entries in use and those taken
// out. survival.cc says what goes in.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/recorder_abi.h"

namespace ft::trap_table {

// Puts (or updates) the trap whose int3 is at `at`.
void put(ft_rec_guard* g, std::vector<uint32_t>& slots, uint64_t at, uint64_t resume, uint64_t orig);
// Takes out every entry functracer filled whose address is not in `keep` (sorted).
void keep_only(ft_rec_guard* g, const std::vector<uint32_t>& slots, std::span<const uint64_t> keep);
// Empties the table: the entries functracer filled, or every one when the table holds
// others (a process sharing the region, vfork's child, added them).
void clear(ft_rec_guard* g, std::vector<uint32_t>& slots);

}  // namespace ft::trap_table
