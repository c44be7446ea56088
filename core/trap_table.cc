#include "core/trap_table.h"

#include <algorithm>

namespace ft::trap_table {

void put(ft_rec_guard* g, std::vector<uint32_t>& slots, uint64_t at, uint64_t resume, uint64_t orig) {
  uint64_t i = ft_rec_addr_hash(at) & (FT_REC_TRAPS - 1);
  ft_rec_trap* gone = nullptr;
  for (uint32_t n = 0; n < FT_REC_TRAPS; ++n, i = (i + 1) & (FT_REC_TRAPS - 1)) {
    ft_rec_trap& e = g->traps[i];
    if (e.at == FT_REC_TRAP_GONE && !gone) gone = &e;
    if (e.at == at || e.at == 0) {
      ft_rec_trap& into = e.at == 0 && gone ? *gone : e;
      into.resume = resume;
      into.orig = orig;
      if (into.at == 0) {
        ++g->ntraps;
        slots.push_back(static_cast<uint32_t>(i));
      }
      // The address last: a handler reading meanwhile finds the entry whole or not at all.
      __atomic_store_n(&into.at, at, __ATOMIC_RELEASE);
      return;
    }
  }
}

void keep_only(ft_rec_guard* g, const std::vector<uint32_t>& slots, std::span<const uint64_t> keep) {
  for (uint32_t i : slots) {
    uint64_t at = g->traps[i].at;
    if (at != 0 && at != FT_REC_TRAP_GONE && !std::binary_search(keep.begin(), keep.end(), at))
      __atomic_store_n(&g->traps[i].at, uint64_t{FT_REC_TRAP_GONE}, __ATOMIC_RELEASE);
  }
}

void clear(ft_rec_guard* g, std::vector<uint32_t>& slots) {
  if (g->ntraps == slots.size()) {
    for (uint32_t i : slots) __atomic_store_n(&g->traps[i].at, 0, __ATOMIC_RELEASE);
  } else {
    for (ft_rec_trap& e : g->traps) __atomic_store_n(&e.at, 0, __ATOMIC_RELEASE);
  }
  slots.clear();
  g->ntraps = 0;
}

}  // namespace ft::trap_table
