#include "core/go_stacks.h"

#include "arch/arch.h"
#include "core/remote_memory.h"

namespace ft {

GoStacks::Place GoStacks::place(const RemoteMemory& mem, const Registers& regs, RemoteAddr sp) {
  uint64_t g = regs.get(arch::host().go_g);
  uint64_t bounds[2] = {0, 0};  // g.stack.lo, g.stack.hi
  if (g == 0 || !mem.read_exact(RemoteAddr(g), {reinterpret_cast<uint8_t*>(bounds), sizeof bounds})) return {sp, 0};
  uint64_t lo = bounds[0], hi = bounds[1];
  if (sp.value() < lo || sp.value() >= hi || hi - lo >= kWindow) return {sp, 0};
  auto [it, added] = index_.try_emplace(g, static_cast<uint32_t>(index_.size() + 1));
  if (added) stacks_.emplace_back();
  return {RemoteAddr(kBase + it->second * kWindow - (hi - sp.value())), it->second};
}

}  // namespace ft
