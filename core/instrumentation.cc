#include "core/instrumentation.h"

#include <cstring>

#include "arch/arch.h"
#include "core/fast_path.h"
#include "core/fast_return.h"
#include "core/log.h"
#include "core/ssol_area.h"

namespace ft {

void adopt_areas(Process& p, const std::vector<MapsEntry>& maps) {
  for (const auto& e : maps) {
    if (e.path.empty() && e.end - e.start == fastret::kDataSize && e.r && e.w && !e.x && p.space.fast_data.null()) {
      // The return records of an earlier functracer (fast_return.h): every block is
      // free again, their tops are reset as threads take them.
      if (auto mark = p.mem().read_u64(RemoteAddr(e.start)); mark && *mark == fastret::kDataMark) {
        p.space.fast_data = RemoteAddr(e.start);
        FT_DEBUG("process {}: adopted the return records at {:#x}", p.pid(), e.start);
      }
      continue;
    }
    if (!e.path.empty() || e.end - e.start != SsolArea::kSize || !e.r || e.w || !e.x) continue;
    uint8_t head[SsolArea::kMarkOffset + 16] = {};
    if (!p.mem().read_exact(RemoteAddr(e.start), head)) continue;
    uint64_t mark = 0, next = 0;
    std::memcpy(&mark, head + SsolArea::kMarkOffset, 8);
    std::memcpy(&next, head + SsolArea::kMarkOffset + 8, 8);
    bool ours = mark == SsolArea::kMark && arch::host().is_area_header(head, SsolArea::kSyscallOffset) &&
                next >= SsolArea::kFirstSlotOffset && next <= SsolArea::kSize && next % SsolArea::kSlotSize == 0;
    if (!ours) continue;
    // Slots below `next` may still be run by a thread; new ones go after them. The
    // mark is cleared while this functracer uses the area.
    static constexpr uint8_t kZero[16] = {};
    if (!p.mem().write(RemoteAddr(e.start + SsolArea::kMarkOffset), kZero)) continue;
    auto area = std::make_unique<SsolArea>(RemoteAddr(e.start), next);
    if (p.space.trampoline.null()) p.space.trampoline = area->trampoline();
    FT_DEBUG("process {}: adopted the out-of-line area at {:#x} ({} bytes used)", p.pid(), e.start, next);
    p.space.areas.push_back(std::move(area));
  }
}

void remove_instrumentation(Process& p) {
  for (const auto& a : p.space.areas) {
    uint64_t mark[2] = {SsolArea::kMark, a->next_offset()};
    (void)p.mem().write(a->base() + SsolArea::kMarkOffset, {reinterpret_cast<const uint8_t*>(mark), sizeof mark});
  }
  for (const auto& [addr, bp] : p.space.breakpoints) (void)p.mem().write(bp.addr, {&bp.orig_byte, 1});
  FastPath::give_back_held(p);
  FastPath::remove(p);
  if (p.space.trampoline.null()) return;
  for (const auto& [tid, t] : p.threads())
    for (const auto& f : t->stack.frames()) {
      if (!f.armed || f.tail || f.site) continue;
      auto v = p.mem().read_u64(f.slot);
      if (v && p.space.is_return_hook(RemoteAddr(*v))) (void)p.mem().write_u64(f.slot, f.real_ret.value());
    }
}

}  // namespace ft
