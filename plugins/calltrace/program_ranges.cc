#include "program_ranges.h"

#include <algorithm>

namespace calltrace {

void ProgramRanges::mapped(int pid, const std::string& path, uint64_t base, uint64_t end) {
  Program& p = programs_[pid];
  if (p.path != path) p = Program{path, {}};
  p.ranges.emplace_back(base, end);
}

void ProgramRanges::unmapped(int pid, uint64_t base, uint64_t end) {
  auto it = programs_.find(pid);
  if (it == programs_.end()) return;
  auto& v = it->second.ranges;
  v.erase(std::remove(v.begin(), v.end(), std::make_pair(base, end)), v.end());
}

void ProgramRanges::forked(int parent, int child) {
  auto it = programs_.find(parent);
  if (it != programs_.end() && !programs_.count(child)) programs_[child] = it->second;
}

bool ProgramRanges::in_program(int pid, uint64_t address) const {
  auto it = programs_.find(pid);
  if (it == programs_.end()) return false;
  for (const auto& [base, end] : it->second.ranges)
    if (address >= base && address < end) return true;
  return false;
}

}  // namespace calltrace
