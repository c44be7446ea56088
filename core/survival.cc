#include "core/survival.h"

#include <signal.h>
#include <sys/syscall.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>
#include <vector>

#include "arch/arch.h"
#include "core/injector.h"
#include "core/log.h"
#include "core/module_map.h"
#include "core/breakpoint.h"
#include "core/recorder_space.h"
#include "core/process.h"
#include "core/ptrace.h"
#include "core/recorder_abi.h"
#include "core/ssol_area.h"
#include "core/trap_table.h"

namespace ft::survival {
namespace {

// rt_sigaction flags (the kernel's, x86-64 and AArch64).
constexpr uint64_t kSaSiginfo = 0x4;
constexpr uint64_t kSaOnstack = 0x08000000;
constexpr uint64_t kSaRestart = 0x10000000;
constexpr uint64_t kSaRestorer = 0x04000000;
// Reads of a dead session's tables, in pieces.
constexpr size_t kReadChunk = 1 << 20;

bool failed(const Result<uint64_t>& rc) { return !rc || *rc > static_cast<uint64_t>(-4096); }

ft_rec_guard* guard(const Process& p) {
  ft_rec_header* h = p.space.recorder.header();
  return h ? ft_rec_guard_of(h) : nullptr;
}

// Where `field` (inside p's guard, in functracer's mapping) is in the process.
RemoteAddr remote(const Process& p, const void* field) {
  const RecorderSpace& rs = p.space.recorder;
  auto off = static_cast<int64_t>(static_cast<const char*>(field) - static_cast<const char*>(rs.mapping->base()));
  return rs.region + off;
}

void put_trap(RecorderSpace& rs, ft_rec_guard* g, uint64_t at, uint64_t resume, uint64_t orig) {
  trap_table::put(g, rs.trap_slots, at, resume, orig);
}

void clear_traps(RecorderSpace& rs, ft_rec_guard* g) { trap_table::clear(g, rs.trap_slots); }

void put_return(ft_rec_guard* g, uint64_t slot, uint64_t real) {
  uint64_t i = ft_rec_addr_hash(slot) & (FT_REC_RETURNS - 1);
  for (uint32_t n = 0; n < FT_REC_RETURNS; ++n, i = (i + 1) & (FT_REC_RETURNS - 1)) {
    ft_rec_return& e = g->returns[i];
    if (e.slot == slot || e.slot == 0) {
      // The new value first: a handler reading meanwhile finds the old one or this.
      __atomic_store_n(&e.real_ret, real, __ATOMIC_RELEASE);
      if (e.slot == 0) ++g->nreturns;
      __atomic_store_n(&e.slot, slot, __ATOMIC_RELEASE);
      return;
    }
  }
}

// The return table again from what the threads' shadow stacks hold: entries of
// frames that have returned since are dropped.
void rebuild_returns(Process& p, ft_rec_guard* g) {
  for (ft_rec_return& e : g->returns) __atomic_store_n(&e.slot, 0, __ATOMIC_RELEASE);
  g->nreturns = 0;
  for (const auto& [tid, t] : p.threads()) {
    for (const ShadowFrame& f : t->stack.frames())
      if (f.armed && !f.tail && !f.site && !f.recorded) put_return(g, f.slot.value(), f.real_ret.value());
    if (!t->held_at.null()) put_return(g, t->held_at.value(), t->held_return.value());
  }
  p.space.recorder.returns_noted = 0;
}

// Reads n entries of T at `at` in the process, in pieces.
template <class T>
std::vector<T> read_table(Process& p, RemoteAddr at, size_t n) {
  std::vector<T> out(n);
  auto* bytes = reinterpret_cast<uint8_t*>(out.data());
  size_t total = n * sizeof(T);
  for (size_t done = 0; done < total;) {
    size_t len = std::min(kReadChunk, total - done);
    if (!p.mem().read_exact(at + static_cast<int64_t>(done), {bytes + done, len})) return {};
    done += len;
  }
  return out;
}

// A region of an earlier session (at `region`, `size` bytes) whose handler is still
// installed: that functracer died (or the program had replaced its handler when it
// detached). Its patches and breakpoints come out (every thread is held); its
// recording goes off. Its handler stays in the chain: ours forwards the traps it does
// not know to it, and it knows the return addresses that session replaced.
bool take_over(Process& p, uint64_t region, uint64_t size) {
  ft_rec_header h;
  if (!p.mem().read_exact(RemoteAddr(region), {reinterpret_cast<uint8_t*>(&h), sizeof h}) || h.magic != FT_REC_MAGIC ||
      h.version != FT_REC_VERSION || h.guard_offset == 0 || ft_rec_region_size(h.ring_bytes) != size)
    return false;
  RemoteAddr g_at = RemoteAddr(region) + static_cast<int64_t>(h.guard_offset);
  // The guard up to its tables (the whole is megabytes).
  constexpr size_t kHead = offsetof(ft_rec_guard, traps);
  std::vector<uint8_t> head(kHead);
  if (!p.mem().read_exact(g_at, head)) return false;
  auto field = [&](size_t off) {
    uint64_t v;
    std::memcpy(&v, head.data() + off, 8);
    return v;
  };
  if (field(offsetof(ft_rec_guard, installed)) == 0) return false;
  uint64_t zero = 0;
  // Recording off in the old region: its trampolines go straight on.
  (void)p.mem().write(RemoteAddr(region) + static_cast<int64_t>(offsetof(ft_rec_header, enabled)),
                      {reinterpret_cast<const uint8_t*>(&zero), 8});
  size_t patches = 0, traps = 0;
  auto pt = read_table<ft_rec_patch>(p, g_at + static_cast<int64_t>(offsetof(ft_rec_guard, patches)),
                                     std::min<uint64_t>(field(offsetof(ft_rec_guard, npatches)), FT_REC_PATCHES));
  for (const ft_rec_patch& e : pt) {
    if (e.len == 0 || e.len > sizeof e.patched) continue;
    std::vector<uint8_t> now(e.len);
    if (!p.mem().read_exact(RemoteAddr(e.at), now) || std::memcmp(now.data(), e.patched, e.len) != 0) continue;
    if (p.mem().write(RemoteAddr(e.at), {e.original, e.len})) ++patches;
  }
  auto tt = read_table<ft_rec_trap>(p, g_at + static_cast<int64_t>(offsetof(ft_rec_guard, traps)), FT_REC_TRAPS);
  for (const ft_rec_trap& e : tt) {
    if (e.at == 0 || e.at == FT_REC_TRAP_GONE || !(e.orig & (FT_REC_TRAP_RESTORE << 8))) continue;
    uint8_t now = 0;
    if (!p.mem().read_exact(RemoteAddr(e.at), {&now, 1}) || now != 0xcc) continue;
    uint8_t orig = static_cast<uint8_t>(e.orig);
    if (p.mem().write(RemoteAddr(e.at), {&orig, 1})) ++traps;
  }
  // Done: a later attach finds nothing more to take out here.
  (void)p.mem().write(g_at + static_cast<int64_t>(offsetof(ft_rec_guard, installed)),
                      {reinterpret_cast<const uint8_t*>(&zero), 8});
  log::info("process {}: took out what an earlier functracer left in it ({} patched entries, {} breakpoints)",
            p.pid(), patches, traps);
  return true;
}

// When `handler` is the SIGTRAP handler of an earlier session that detached cleanly
// (its entry: endbr64; movabs rcx, REGION; ...): the program's action it kept.
std::optional<ft_rec_kaction> detached_session_action(Process& p, uint64_t handler) {
  static constexpr uint8_t kEntry[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0xb9};
  if (handler <= 1) return std::nullopt;
  uint8_t entry[sizeof kEntry + 8];
  if (!p.mem().read_exact(RemoteAddr(handler), entry) || std::memcmp(entry, kEntry, sizeof kEntry) != 0)
    return std::nullopt;
  uint64_t region;
  std::memcpy(&region, entry + sizeof kEntry, 8);
  ft_rec_header h;
  if (!p.mem().read_exact(RemoteAddr(region), {reinterpret_cast<uint8_t*>(&h), sizeof h}) || h.magic != FT_REC_MAGIC ||
      h.version != FT_REC_VERSION || h.guard_offset == 0)
    return std::nullopt;
  RemoteAddr g_at = RemoteAddr(region) + static_cast<int64_t>(h.guard_offset);
  auto detached = p.mem().read_u64(g_at + static_cast<int64_t>(offsetof(ft_rec_guard, detached)));
  auto own = p.mem().read_u64(g_at + static_cast<int64_t>(offsetof(ft_rec_guard, handler)));
  if (!detached || *detached != 1 || !own || *own != handler) return std::nullopt;
  ft_rec_kaction kept;
  if (!p.mem().read_exact(g_at + static_cast<int64_t>(offsetof(ft_rec_guard, old_action)),
                          {reinterpret_cast<uint8_t*>(&kept), sizeof kept}))
    return std::nullopt;
  return kept;
}

// The guard's action and tables, for the handler at rs.trap_handler with the program's
// action in g->old_action.
void fill(Process& p, ft_rec_guard* g, bool rings) {
  RecorderSpace& rs = p.space.recorder;
  g->action.handler = rs.trap_handler.value();
  g->action.flags = kSaSiginfo | kSaRestorer | kSaOnstack | (g->old_action.flags & kSaRestart);
  g->action.restorer = rs.trap_restorer.value();
  g->action.mask = g->old_action.mask;
  g->handler = rs.trap_handler.value();
  g->rings = rings ? 1 : 0;
  sync_traps(p);
  rebuild_returns(p, g);
}

void mark_installed(Process& p, ft_rec_guard* g) {
  __atomic_store_n(&g->installed, 1, __ATOMIC_RELEASE);
  p.space.recorder.guard_installed = true;
  FT_DEBUG("process {}: SIGTRAP handler at {:#x} (the program's was {:#x})", p.pid(), g->handler,
           g->old_action.handler);
}

}  // namespace

void clean_up_dead(Process& p, const std::vector<MapsEntry>& maps) {
  bool dead = false;
  for (const MapsEntry& e : maps)
    if (e.r && e.w && !e.x && e.path.starts_with("/memfd:functracer")) dead |= take_over(p, e.start, e.end - e.start);
  // The return blocks of that session are still in use by the stubs its hooked return
  // addresses lead to: this session maps its own.
  if (dead) p.space.fast_data = RemoteAddr();
}

bool install(Injector& injector, Process& p, Thread& t, Registers& regs, bool rings) {
  RecorderSpace& rs = p.space.recorder;
  ft_rec_guard* g = guard(p);
  if (rs.guard_installed || !g || rs.trap_handler.null() || p.space.areas.empty() || rs.borrowed) return false;
  RemoteAddr stub = p.space.areas.front()->syscall_stub();
  if (failed(injector.syscall(t, regs, stub, SYS_rt_sigaction, {SIGTRAP, 0, remote(p, &g->old_action).value(), 8}))) {
    log::warn("process {}: its SIGTRAP action cannot be read: it will not survive functracer's death", p.pid());
    return false;
  }
  // The handler of an earlier session that detached cleanly answers for nothing: the
  // program's action is the one it kept.
  for (int depth = 0; depth < 64; ++depth) {
    auto earlier = detached_session_action(p, g->old_action.handler);
    if (!earlier) break;
    g->old_action = *earlier;
  }
  // A fork child has its parent's handler (the same code, at the same address, now
  // on the child's region): the program's action is the one the parent's kept.
  if (g->old_action.handler == rs.trap_handler.value() && rs.inherited_action) g->old_action = *rs.inherited_action;
  if (g->old_action.handler == rs.trap_handler.value()) {
    log::warn("process {}: its SIGTRAP action is not known: it will not survive functracer's death", p.pid());
    return false;
  }
  fill(p, g, rings);
  if (failed(injector.syscall(t, regs, stub, SYS_rt_sigaction, {SIGTRAP, remote(p, &g->action).value(), 0, 8}))) {
    log::warn("process {}: its SIGTRAP action cannot be set: it will not survive functracer's death", p.pid());
    return false;
  }
  mark_installed(p, g);
  return true;
}

bool install_inherited(Process& p, bool rings) {
  RecorderSpace& rs = p.space.recorder;
  ft_rec_guard* g = guard(p);
  if (rs.guard_installed || !g || rs.trap_handler.null() || rs.borrowed || !rs.inherited_action) return false;
  g->old_action = *rs.inherited_action;
  fill(p, g, rings);
  mark_installed(p, g);
  return true;
}

void retire(Process& p) {
  RecorderSpace& rs = p.space.recorder;
  ft_rec_guard* g = guard(p);
  if (!rs.guard_installed || !g) return;
  // Nothing of ours traps any more and the patches are out: the tables go. The
  // handler stays the program's action (changing it needs a system call in a thread
  // of a process that is being let go of); it forwards every SIGTRAP to the program's
  // own action, and the next attach takes it out of the way (install).
  clear_traps(rs, g);
  for (ft_rec_return& e : g->returns) e.slot = 0;
  g->nreturns = 0;
  g->npatches = 0;
  __atomic_store_n(&g->detached, 1, __ATOMIC_RELEASE);
  __atomic_store_n(&g->installed, 0, __ATOMIC_RELEASE);
  rs.guard_installed = false;
}

namespace {

// A trap as the guard's table holds it: where its int3 is, where the handler sends the
// thread (0: the return address the thread's stack or the table of returns gives) and
// what it writes back first (FT_REC_TRAP_* << 8 | the original byte).
struct Trap {
  uint64_t at, resume, orig;
};

Trap return_trap(RemoteAddr at) { return {at.value(), 0, uint64_t{FT_REC_TRAP_RETURN} << 8}; }

Trap trap_of(const Breakpoint& bp) {
  if (bp.entry.null())
    // An entry breakpoint (or a hook's): its byte goes back and the code runs as it is.
    return {bp.addr.value(), bp.slot.value(), bp.orig_byte | uint64_t{FT_REC_TRAP_RESTORE} << 8};
  // A trampoline's stop path: on to the relocated first instructions.
  return {bp.addr.value(), bp.slot.value(), 0};
}

// Every trap functracer has in p, once: what sync_traps puts in and keeps.
std::vector<Trap> our_traps(const Process& p) {
  const RecorderSpace& rs = p.space.recorder;
  std::vector<Trap> traps;
  traps.reserve(p.space.breakpoints.size() + p.space.fast_stub_slot.size() + 4);
  for (const auto& [addr, bp] : p.space.breakpoints) traps.push_back(trap_of(bp));
  if (!p.space.trampoline.null()) traps.push_back(return_trap(p.space.trampoline));
  for (const auto& [stub, k] : p.space.fast_stub_slot)
    traps.push_back(return_trap(stub + static_cast<int64_t>(fastret::kSlowTrapOffset)));
  if (!rs.return_trap.null()) traps.push_back(return_trap(rs.return_trap));
  if (!rs.signal_trap.null()) traps.push_back(return_trap(rs.signal_trap));
  // An injected call returns onto the resume block's trap (Injector::call).
  if (!p.space.resume_code.null())
    traps.push_back({p.space.resume_code.value(),
                     (p.space.resume_code + static_cast<int64_t>(arch::host().trap.size())).value(), 0});
  return traps;
}

// Puts t in g's table while it has room; false when it has none.
bool put_if_room(RecorderSpace& rs, ft_rec_guard* g, const Trap& t) {
  if (g->ntraps >= FT_REC_TRAPS / 2) return false;
  put_trap(rs, g, t.at, t.resume, t.orig);
  return true;
}

void write_areas(const Process& p, ft_rec_guard* g) {
  uint64_t n = 0;
  for (const auto& a : p.space.areas) {
    if (n == FT_REC_AREAS) break;
    g->areas[n][0] = a->base().value();
    g->areas[n][1] = a->end().value();
    ++n;
  }
  g->nareas = n;
}

}  // namespace

void note_return_trap(Process& p, RemoteAddr trap) {
  if (ft_rec_guard* g = guard(p)) put_if_room(p.space.recorder, g, return_trap(trap));
}

void note_resume(Process& p, RemoteAddr trap, RemoteAddr resume) {
  if (ft_rec_guard* g = guard(p)) put_if_room(p.space.recorder, g, {trap.value(), resume.value(), 0});
}

void note_trap(Process& p, const Breakpoint& bp) {
  ft_rec_guard* g = guard(p);
  if (g && !put_if_room(p.space.recorder, g, trap_of(bp))) ++p.space.recorder.unguarded;
}

void note_patch(Process& p, const EntryPatchSite& s, std::span<const uint8_t> patched) {
  ft_rec_guard* g = guard(p);
  if (!g || g->npatches >= FT_REC_PATCHES || s.original.size() > sizeof g->patches[0].original ||
      patched.size() != s.original.size())
    return;
  ft_rec_patch& e = g->patches[g->npatches];
  e.at = s.at.value();
  e.len = static_cast<uint32_t>(s.original.size());
  std::memcpy(e.original, s.original.data(), s.original.size());
  std::memcpy(e.patched, patched.data(), patched.size());
  ++g->npatches;
}

void note_areas(Process& p) {
  ft_rec_guard* g = guard(p);
  if (!g) return;
  if (!p.space.trampoline.null()) put_if_room(p.space.recorder, g, return_trap(p.space.trampoline));
  write_areas(p, g);
}

void sync_traps(Process& p) {
  ft_rec_guard* g = guard(p);
  if (!g) return;
  RecorderSpace& rs = p.space.recorder;
  std::vector<Trap> traps = our_traps(p);
  // In first, then out: should functracer die meanwhile, every trap it has planted is
  // in the table (an entry whose int3 has gone stays a moment longer: no thread meets
  // it). Only a table crowded with entries taken out is emptied first, the way it was
  // filled then: a trap of ours never reaches the handler while functracer lives.
  if (g->ntraps + traps.size() > FT_REC_TRAPS / 4) clear_traps(rs, g);
  rs.unguarded = 0;
  std::vector<uint64_t> keep;
  keep.reserve(traps.size());
  for (const Trap& t : traps) {
    if (!put_if_room(rs, g, t)) ++rs.unguarded;
    keep.push_back(t.at);
  }
  write_areas(p, g);
  std::sort(keep.begin(), keep.end());
  trap_table::keep_only(g, rs.trap_slots, keep);
  if (rs.unguarded) FT_DEBUG("process {}: {} traps are not in the trap table (full)", p.pid(), rs.unguarded);
}

void note_return(Process& p, RemoteAddr slot, RemoteAddr real_ret) {
  ft_rec_guard* g = guard(p);
  if (!g || !p.space.recorder.guard_installed) return;
  if (++p.space.recorder.returns_noted > FT_REC_RETURNS / 2 || g->nreturns > FT_REC_RETURNS / 2) rebuild_returns(p, g);
  put_return(g, slot.value(), real_ret.value());
}

bool take_in(Process& p, Thread& t) {
  t.rewound = RemoteAddr();
  if (!p.space.recorder.guard_installed) return false;
  auto regs = ptrace::get_regs(t.tid);
  if (!regs) return false;
  RemoteAddr at = arch::host().trap_address(regs->ip());
  if (!p.space.is_our_trap(at)) return false;
  auto it = p.space.breakpoints.find(at);
  if (it != p.space.breakpoints.end() && it->second.entry.null() && at != regs->ip()) {
    Registers back = *regs;
    back.set_ip(at);
    if (ptrace::set_regs(t.tid, back)) t.rewound = at;
  }
  // What the stop's handler reads next, without a second system call.
  t.taken_regs = *regs;
  t.taken_writes = ptrace::regs_writes(t.tid);
  return true;
}

Result<Registers> stop_regs(Thread& t) {
  if (t.taken_writes == ptrace::regs_writes(t.tid)) {
    t.taken_writes = UINT64_MAX;
    return t.taken_regs;
  }
  t.taken_writes = UINT64_MAX;
  auto regs = ptrace::get_regs(t.tid);
  if (regs && !t.rewound.null() && regs->ip() == t.rewound) regs->set_ip(arch::host().pc_after_trap(t.rewound));
  return regs;
}

}  // namespace ft::survival
