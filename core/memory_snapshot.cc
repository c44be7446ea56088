#include "core/memory_snapshot.h"

#include <algorithm>
#include <vector>

#include "common/clock.h"
#include "core/log.h"
#include "core/memory_budget.h"
#include "core/module_map.h"
#include "core/ptrace.h"

namespace ft {
namespace {

void take(PluginHost& host, Process& p, Thread* at, const char* reason, TracerStats& stats) {
  uint64_t start = monotonic_ns();
  // Through the thread at hand: once the leader has exited, /proc/PID/maps is empty.
  auto maps = read_maps(at ? at->tid : p.pid());
  if (!maps) {
    log::warn("process {}: no memory snapshot ({})", p.pid(), maps.error().message);
    return;
  }
  // A leak scan copies what the program has allocated: within what functracer may
  // still take (memory_budget.h), or not at all.
  uint64_t writable = 0;
  for (const MapsEntry& m : *maps)
    if (m.r && m.w && !m.path.starts_with("/memfd:functracer")) writable += m.end - m.start;
  if (uint64_t room = memory_budget::room(); writable > room) {
    log::warn("process {}: no memory snapshot ({}): its {} MiB of writable memory would not fit in the {} MiB "
              "functracer has left before its memory limit", p.pid(), reason, writable >> 20, room >> 20);
    return;
  }
  std::vector<ft_snapshot_region> regions;
  regions.reserve(maps->size());
  for (const MapsEntry& m : *maps) {
    // functracer's own memory in the process (the recorder's buffers, also those an
    // earlier attach left, the return records) is not the program's: no plugin looks at
    // it. Reading a recorder region would also back every page of it (a sparse memfd of
    // a gigabyte).
    if (m.start == p.space.recorder.region.value() || m.start == p.space.fast_data.value() ||
        m.path.starts_with("/memfd:functracer"))
      continue;
    regions.push_back({m.start, m.end, m.offset, m.r, m.w, m.x, m.path.c_str()});
  }
  auto stack_end = [&](uint64_t sp) -> uint64_t {
    for (const MapsEntry& m : *maps)
      if (sp >= m.start && sp < m.end) return m.end;
    return 0;
  };
  // Registers of threads stopped now; those gone already left theirs at their exit stop.
  std::vector<Registers> regs;
  regs.reserve(p.threads().size());
  std::vector<ft_snapshot_thread> threads;
  for (const auto& [tid, t] : p.threads()) {
    if (t->exit_seen && t.get() != at) {
      regs.push_back(t->exit_regs);
    } else if (auto r = ptrace::get_regs(tid)) {
      regs.push_back(*r);
    } else {
      continue;
    }
    const Registers& r = regs.back();
    threads.push_back({tid, r.sp().value(), stack_end(r.sp().value()), reinterpret_cast<const uint64_t*>(&r.raw),
                       sizeof r.raw / sizeof(uint64_t)});
  }
  ft_snapshot snap{reason, threads.data(), threads.size(), regions.data(), regions.size()};
  Thread* th = at ? at : p.leader();
  ft_ctx ctx;
  ctx.process = &p;
  ctx.thread = th;
  ctx.now_ns = start;
  host.snapshot(ctx, snap);
  ++stats.snapshots;
  stats.snapshot_ns += monotonic_ns() - start;
}

}  // namespace

void snapshot_at_exit_stop(PluginHost& host, Process& p, Thread& t, TracerStats& stats) {
  if (t.exit_seen || !host.wants_snapshots() || p.silent) return;
  t.exit_seen = true;
  if (auto r = ptrace::get_regs(t.tid)) t.exit_regs = *r;
  bool last = std::all_of(p.threads().begin(), p.threads().end(), [](const auto& e) { return e.second->exit_seen; });
  if (last) take(host, p, &t, "exit", stats);
}

void snapshot_before_detach(PluginHost& host, Process& p, TracerStats& stats) {
  if (!host.wants_snapshots() || p.silent) return;
  take(host, p, nullptr, "detach", stats);
}

}  // namespace ft
