#include "core/return_hooks.h"

#include <sys/mman.h>
#include <sys/syscall.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "arch/arch.h"
#include "common/clock.h"
#include "core/log.h"

namespace ft {

using fastret::Record;

ReturnHooks::ReturnHooks(Injector& injector, EventReporter& report, TracerStats& stats)
    : injector_(injector), report_(report), stats_(stats) {
  if (const char* v = std::getenv("FT_FAST_RETURNS"); v && std::strcmp(v, "0") == 0) fast_returns_ = false;
}

void ReturnHooks::disarm(Thread& t) {
  Process& p = *t.process;
  for (auto [slot, real] : t.stack.disarm()) (void)p.mem().write_u64(slot, real.value());
}

void ReturnHooks::rearm(Thread& t, RemoteAddr sp) {
  Process& p = *t.process;
  auto r = t.stack.rearm(sp);
  report_.report_unwound(t, r.dead, "exception", monotonic_ns(), t.stack.depth());
  for (RemoteAddr slot : r.slots) (void)p.mem().write_u64(slot, p.space.trampoline.value());
}

void ReturnHooks::abandon(Thread& t, const std::vector<ShadowFrame>& frames, uint64_t now, size_t base_depth) {
  // Frames found abandoned are normally dead (longjmp'ed over). Should one still be
  // live — a stack the heuristics took for the same one, such as a coroutine's —
  // put its real return address back, so it returns normally (unreported) instead
  // of reaching a trampoline no frame answers for.
  Process& p = *t.process;
  for (const ShadowFrame& f : frames) {
    if (!f.armed || f.tail || f.site) continue;
    auto v = p.mem().peek(t.tid, f.slot);
    if (v && p.space.is_return_hook(RemoteAddr(*v))) (void)p.mem().poke(t.tid, f.slot, f.real_ret.value());
  }
  report_.report_unwound(t, frames, "longjmp", now, base_depth);
}

bool ReturnHooks::finish_return(Thread& t, Registers& regs) {
  uint64_t now = monotonic_ns();
  auto r = t.stack.pop(regs.sp());
  if (!r.abandoned.empty()) abandon(t, r.abandoned, now, t.stack.depth() + r.returned.size());
  if (!r.found) {
    // A stack that moved between threads (a coroutine suspended on one thread and
    // resumed on another): its frame is on the other thread's shadow stack.
    for (auto& [tid, other] : t.process->threads()) {
      if (other.get() == &t) continue;
      r = other->stack.take(regs.sp());
      if (r.found) break;
    }
  }
  if (!r.found) return false;
  report_.report_returns(t, regs, r, now);
  regs.set_ip(r.real_ret);
  return true;
}

int ReturnHooks::block(Process& p, Thread& t, Registers& regs) {
  if (t.fast_slot >= 0) return t.fast_slot;
  if (p.space.fast_unavailable || p.space.areas.empty()) return -1;
  if (p.space.fast_data.null()) {
    auto rc = injector_.syscall(t, regs, p.space.areas.front()->syscall_stub(), SYS_mmap,
                             {0, fastret::kDataSize, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, static_cast<uint64_t>(-1), 0});
    if (!rc || *rc > static_cast<uint64_t>(-4096)) {
      FT_DEBUG("process {}: no memory for returns handled in the process; the trampoline handles them", p.pid());
      p.space.fast_unavailable = true;
      return -1;
    }
    if (auto s = p.mem().write_u64(RemoteAddr(*rc), fastret::kDataMark); !s) {
      p.space.fast_unavailable = true;
      return -1;
    }
    p.space.fast_data = RemoteAddr(*rc);
  }
  if (p.space.fast_owner.empty()) {
    p.space.fast_owner.assign(fastret::kMaxSlots, 0);
    p.space.fast_stubs.assign(fastret::kMaxSlots, RemoteAddr());
  }
  auto free_slot = std::find(p.space.fast_owner.begin(), p.space.fast_owner.end(), 0);
  if (free_slot == p.space.fast_owner.end()) return -1;
  int k = static_cast<int>(free_slot - p.space.fast_owner.begin());
  uint64_t top_addr = p.space.fast_data.value() + fastret::top_offset(k);
  if (p.space.fast_stubs[k].null()) {
    // Two consecutive out-of-line slots.
    static_assert(fastret::kStubSize <= 2 * SsolArea::kSlotSize);
    RemoteAddr at;
    for (auto& a : p.space.areas) {
      if (a->next_offset() + 2 * SsolArea::kSlotSize > SsolArea::kSize) continue;
      at = a->allocate_slot();
      (void)a->allocate_slot();
      break;
    }
    if (at.null()) return -1;
    auto code = fastret::stub_code(top_addr, p.space.fast_data.value() + fastret::block_offset(k));
    if (auto s = p.mem().write(at, code); !s) return -1;
    p.space.fast_stubs[k] = at;
    p.space.fast_stub_slot[at] = k;
  }
  if (auto s = p.mem().write_u64(RemoteAddr(top_addr), 0); !s) return -1;
  *free_slot = t.tid;
  t.fast_slot = k;
  t.fast_records.clear();
  return k;
}

bool ReturnHooks::push_fast(Thread& t, Registers& regs, RemoteAddr slot, RemoteAddr real_ret) {
  Process& p = *t.process;
  if (t.stack.disarmed() || t.fast_records.size() >= fastret::kCapacity) return false;
  int k = block(p, t, regs);
  if (k < 0) return false;
  uint64_t n = t.fast_records.size();
  uint64_t stub = p.space.fast_stubs[k].value();
  uint64_t head[2] = {slot.value(), real_ret.value()};
  uint64_t top = n + 1;
  RemoteMemory::Piece pieces[] = {
      {slot, &stub, 8},
      {p.space.fast_data + static_cast<int64_t>(fastret::block_offset(k) + n * fastret::kRecordSize), head, sizeof head},
      {p.space.fast_data + static_cast<int64_t>(fastret::top_offset(k)), &top, 8},
  };
  if (auto s = p.mem().write_pieces(pieces); !s) return false;
  t.fast_records.emplace_back(slot, real_ret);
  ++stats_.fast_frames;
  return true;
}

void ReturnHooks::sync(Thread& t) {
  if (t.fast_slot < 0) return;
  Process& p = *t.process;
  std::vector<std::pair<RemoteAddr, RemoteAddr>> want;
  for (const ShadowFrame& f : t.stack.frames())
    if (f.fast) want.emplace_back(f.slot, f.real_ret);
  if (want == t.fast_records) return;
  size_t same = 0;
  while (same < want.size() && same < t.fast_records.size() && want[same] == t.fast_records[same]) ++same;
  std::vector<Record> recs(want.size() - same);
  for (size_t i = same; i < want.size(); ++i) recs[i - same] = Record{want[i].first.value(), want[i].second.value(), 0, 0, 0, 0, {0, 0}};
  uint64_t top = want.size();
  int k = t.fast_slot;
  RemoteMemory::Piece pieces[2] = {
      {p.space.fast_data + static_cast<int64_t>(fastret::top_offset(k)), &top, 8},
      {p.space.fast_data + static_cast<int64_t>(fastret::block_offset(k) + same * fastret::kRecordSize), recs.data(),
       recs.size() * sizeof(Record)},
  };
  if (auto s = p.mem().write_pieces({pieces, recs.empty() ? 1u : 2u}); !s) {
    log::warn("thread {}: cannot update its return records: {}", t.tid, s.error().message);
    return;
  }
  t.fast_records = std::move(want);
}

void ReturnHooks::release(Thread& t) {
  Process& p = *t.process;
  if (t.fast_slot >= 0 && static_cast<size_t>(t.fast_slot) < p.space.fast_owner.size() &&
      p.space.fast_owner[t.fast_slot] == t.tid)
    p.space.fast_owner[t.fast_slot] = 0;
  t.fast_slot = -1;
  t.fast_records.clear();
}

void ReturnHooks::drain(Process& p, Thread* stopped, RemoteAddr sp) {
  if (stopped) stopped->sp_word_valid = false;
  if (p.space.fast_data.null()) return;
  std::vector<Thread*> threads;
  for (auto& [tid, t] : p.threads())
    if (t->fast_slot >= 0 && !t->fast_records.empty()) threads.push_back(t.get());
  if (threads.empty()) return;
  // The tops, in one read when there is one thread (the usual case) or a few. With
  // them, in the same system call, the word at the stopped thread's sp (an entry
  // reads the return address there) and its innermost record (the usual return).
  int lo = threads.front()->fast_slot, hi = lo;
  for (Thread* t : threads) {
    lo = std::min(lo, t->fast_slot);
    hi = std::max(hi, t->fast_slot);
  }
  std::vector<uint64_t> tops(static_cast<size_t>(hi - lo + 1));
  Record innermost{};
  uint64_t word = 0;
  bool with_stopped = stopped && stopped->fast_slot >= 0 && !stopped->fast_records.empty();
  RemoteMemory::Piece pieces[3] = {
      {p.space.fast_data + static_cast<int64_t>(fastret::top_offset(lo)), tops.data(), tops.size() * 8},
      {sp, &word, 8},
      {with_stopped ? p.space.fast_data + static_cast<int64_t>(fastret::block_offset(stopped->fast_slot) +
                                                         (stopped->fast_records.size() - 1) * fastret::kRecordSize)
                    : RemoteAddr(),
       &innermost, sizeof innermost},
  };
  size_t npieces = !stopped ? 1 : with_stopped ? 3 : 2;
  if (npieces > 1 && p.mem().read_pieces({pieces, npieces})) {
    stopped->sp_word = word;
    stopped->sp_word_at = sp;
    stopped->sp_word_valid = true;
  } else {
    with_stopped = false;
    if (auto s = p.mem().read_pieces({pieces, 1}); !s) return;  // the process is going away
  }
  struct Ret {
    Thread* t;
    Record r;
  };
  std::vector<Ret> rets;
  for (Thread* tp : threads) {
    Thread& t = *tp;
    uint64_t top = tops[static_cast<size_t>(t.fast_slot - lo)];
    uint64_t n = t.fast_records.size();
    if (top >= n) continue;  // nothing returned (more than known: the thread is inside a stop of its own)
    std::vector<Record> recs(n - top);
    size_t have = 0;
    if (with_stopped && &t == stopped) {
      recs.back() = innermost;
      have = 1;
    }
    if (have < recs.size()) {
      RemoteMemory::Piece piece{
          p.space.fast_data + static_cast<int64_t>(fastret::block_offset(t.fast_slot) + top * fastret::kRecordSize),
          recs.data(), (recs.size() - have) * sizeof(Record)};
      if (auto s = p.mem().read_pieces({&piece, 1}); !s) continue;
    }
    for (size_t i = recs.size(); i-- > 0;) rets.push_back({&t, recs[i]});  // innermost (earliest) first
  }
  if (rets.empty()) return;
  if (!tsc_) tsc_.emplace();
  tsc_->sample();
  // Per thread the order is already right; across threads, by time.
  std::stable_sort(rets.begin(), rets.end(), [](const Ret& a, const Ret& b) { return a.r.tsc < b.r.tsc; });
  for (const Ret& e : rets) {
    Thread& t = *e.t;
    if (t.fast_records.empty() || t.fast_records.back().first != RemoteAddr(e.r.slot)) {
      sync(t);  // not what functracer wrote there: put its records back
      continue;
    }
    t.fast_records.pop_back();
    uint64_t now = tsc_->to_ns(e.r.tsc);
    auto r = t.stack.pop(RemoteAddr(e.r.slot) + 8);
    // Frames the return skipped (longjmp'ed over); the thread may be running, so their
    // slots are left alone.
    if (!r.abandoned.empty()) report_.report_unwound(t, r.abandoned, "longjmp", now, t.stack.depth() + r.returned.size());
    if (!r.found) continue;
    Registers regs;
    regs.set(arch::host().call.ret, e.r.rax);
    regs.set(arch::host().call.ret2, e.r.rdx);
    regs.set_sp(RemoteAddr(e.r.slot) + 8);
    regs.set_ip(r.real_ret);
    ++stats_.fast_returns;
    report_.report_returns(t, regs, r, now, &e.r);
  }
}

}  // namespace ft
