#include "core/return_hooks.h"

#include <sys/mman.h>
#include <sys/syscall.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <queue>
#include <unordered_map>

#include "arch/arch.h"
#include "common/clock.h"
#include "core/log.h"
#include "core/recorder.h"
#include "core/survival.h"

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
  report_.report_unwound(t, r.dead, "exception", t.event_ns(monotonic_ns()), t.stack.depth());
  for (RemoteAddr slot : r.slots) {
    for (const ShadowFrame& f : t.stack.frames())
      if (f.slot == slot && !f.tail) survival::note_return(p, slot, f.real_ret);
    (void)p.mem().write_u64(slot, p.space.trampoline.value());
  }
}

void ReturnHooks::abandon(Thread& t, const std::vector<ShadowFrame>& frames, uint64_t now, size_t base_depth,
                          const char* reason) {
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
  report_.report_unwound(t, frames, reason, now, base_depth);
}

bool ReturnHooks::finish_return(Thread& t, Registers& regs) {
  uint64_t now = t.event_ns(monotonic_ns());
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
  if (!r.found) {
    // The program moved or copied a hijacked return address: the return is matched to
    // the likeliest frame, and the trace says it was a guess.
    RemoteAddr slot = regs.sp() - 8;
    r = t.stack.recover(regs.sp());
    if (!r.found) return false;
    if (!r.abandoned.empty()) abandon(t, r.abandoned, now, t.stack.depth() + r.returned.size());
    const std::string& name = t.process->space.functions[r.returned.front().fn].name;
    if (stats_.moved_returns++ == 0)
      log::warn("thread {}: returned through a return address moved to {:#x}; taken as the return of {}", t.tid,
              slot.value(), name);
    report_.record_lost(*t.process, t, 1,
                        fmt::format("a return through a return address the program moved (to {:#x}): taken as "
                                    "the return of {}, the innermost open frame",
                                    slot.value(), name));
  }
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
    // Traps fill the slots after the stub: a thread that met its slow path's trap
    // and whose functracer died before answering the stop goes on to one of them
    // (recorder.c, ft_recorder_trap).
    static_assert(fastret::kSlowTrapOffset + 1 < 2 * SsolArea::kSlotSize);
    auto stub = fastret::stub_code(top_addr, p.space.fast_data.value() + fastret::block_offset(k));
    const auto& trap = arch::host().trap;
    std::vector<uint8_t> code(stub.begin(), stub.end());
    while (code.size() + trap.size() <= 2 * SsolArea::kSlotSize) code.insert(code.end(), trap.begin(), trap.end());
    if (auto s = p.mem().write(at, code); !s) return -1;
    p.space.fast_stubs[k] = at;
    p.space.fast_stub_slot[at] = k;
    survival::note_return_trap(p, at + static_cast<int64_t>(fastret::kSlowTrapOffset));
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
  survival::note_return(p, slot, real_ret);
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
  if (fast_path_) fast_path_->sync(t);
  sync_blocks(t);
}

void ReturnHooks::sync_blocks(Thread& t) {
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
  if (fast_path_ && t.rec_ring >= 0) {
    drain(p, nullptr, RemoteAddr(), {}, &t);
    fast_path_->release(t);
  }
  if (t.fast_slot >= 0 && static_cast<size_t>(t.fast_slot) < p.space.fast_owner.size() &&
      p.space.fast_owner[t.fast_slot] == t.tid)
    p.space.fast_owner[t.fast_slot] = 0;
  t.fast_slot = -1;
  t.fast_records.clear();
}

void ReturnHooks::drain_all(Process& p) { drain_until(p, nullptr, RemoteAddr(), {}, nullptr, UINT64_MAX); }

void ReturnHooks::drain(Process& p, Thread* stopped, RemoteAddr sp, const std::function<void()>& collected,
                        const Thread* whole) {
  drain_until(p, stopped, sp, collected, whole ? whole : stopped, fastret::read_tsc());
}

void ReturnHooks::drain_until(Process& p, Thread* stopped, RemoteAddr sp, const std::function<void()>& collected,
                              const Thread* whole, uint64_t cut) {
  if (stopped) stopped->sp_word_valid = false;
  std::vector<Ret> rets;
  collect_returns(p, stopped, sp, cut, whole, [&](Thread* t, const Record& r) { rets.push_back({t, r}); });
  // After the stubs' returns: a running thread's records committed before one of those
  // returns are in its ring by now. The batch's storage is kept from one drain to the
  // next (taken out while in use: a report may drain again).
  FastPath::RecordedBatch batch = std::move(batch_);
  batch.clear();
  if (fast_path_) fast_path_->collect(p, batch, cut, whole);
  if (collected) collected();
  if (!rets.empty() || !batch.records.empty()) report_in_order(rets, batch);
  batch_ = std::move(batch);
  if (fast_path_) fast_path_->report_losses(p);
}

void ReturnHooks::report_in_order(std::vector<Ret>& rets, FastPath::RecordedBatch& batch) {
  if (!tsc_) tsc_.emplace();
  tsc_->sample();
  // Per thread (and per source) the order is already right; across threads, and between
  // the returns of the threads' stubs and the records of the recorder, by time. A time
  // can run backwards within a thread: a signal handler that interrupts a stub after it
  // read the clock returns (and records) before the stub finishes. Such a record is no
  // earlier than the one before it in its thread's order: clamped, each thread's records
  // keep their order in the merge below.
  std::unordered_map<const Thread*, uint64_t> last;
  for (Ret& e : rets) {
    uint64_t& l = last[e.t];
    if (e.r.tsc < l) e.r.tsc = l;
    l = e.r.tsc;
  }
  last.clear();
  auto& recs = batch.records;
  const size_t nruns = batch.runs.size();
  for (size_t k = 0; k < nruns; ++k) {
    size_t end = k + 1 < nruns ? batch.runs[k + 1] : recs.size();
    uint64_t& l = last[recs[batch.runs[k]].thread];
    for (size_t i = batch.runs[k]; i < end; ++i) {
      if (recs[i].tsc < l) recs[i].tsc = l;
      l = recs[i].tsc;
    }
  }
  std::stable_sort(rets.begin(), rets.end(), [](const Ret& a, const Ret& b) { return a.r.tsc < b.r.tsc; });
  // The rings' runs merged by time, ties to the earlier run: the order a stable sort of
  // the runs one after the other would give, without moving a record.
  using Head = std::pair<uint64_t, size_t>;  // (time, run)
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  std::vector<size_t> at(batch.runs), end(nruns);
  for (size_t k = 0; k < nruns; ++k) {
    end[k] = k + 1 < nruns ? batch.runs[k + 1] : recs.size();
    heads.push({recs[at[k]].tsc, k});
  }
  size_t i = 0;
  while (i < rets.size() || !heads.empty()) {
    if (heads.empty() || (i < rets.size() && rets[i].r.tsc <= heads.top().first)) {
      report_fast_return(*rets[i].t, rets[i].r);
      ++i;
      continue;
    }
    size_t k = heads.top().second;
    heads.pop();
    // A run goes on while it stays first: one thread's records cost no heap work.
    do {
      const FastPath::Recorded& e = recs[at[k]];
      report_recorded(e, batch.words_of(e), tsc_->to_ns(e.tsc));
      ++at[k];
    } while (at[k] < end[k] && (heads.empty() || Head{recs[at[k]].tsc, k} < heads.top()) &&
             (i >= rets.size() || rets[i].r.tsc > recs[at[k]].tsc));
    if (at[k] < end[k]) heads.push({recs[at[k]].tsc, k});
  }
}

void ReturnHooks::report_recorded(const FastPath::Recorded& e, uint64_t* words, uint64_t now) {
  Thread& t = *e.thread;
  Process& p = *t.process;
  if (e.fn >= p.space.functions.size()) return;  // not a record of ours: the program wrote there
  const FunctionInfo& fn = p.space.functions[e.fn];
  bool reported = !p.silent || p.reports_to;
  if (e.kind == FT_REC_WALK && e.nwords > FT_REC_WALK_FRAMES) {
    t.walk_slot = RemoteAddr(words[FT_REC_WALK_SLOT]);
    t.walk_frames.assign(words + FT_REC_WALK_FRAMES, words + e.nwords);
    t.walk_complete = (e.flags & FT_REC_STACK_COMPLETE) != 0;
    return;
  }
  now = t.event_ns(now);  // a walk is no event: its time is its call's
  if (e.kind == FT_REC_CALL) {
    RemoteAddr slot(words[FT_REC_CALL_SLOT]), ret(words[FT_REC_CALL_RETURN_TO]);
    unsigned depth = static_cast<unsigned>(t.stack.depth() - t.stack.inherited());
    if (e.flags & FT_REC_HOOKED) {
      auto en = t.stack.push(slot, p.space.is_return_hook(ret) ? p.space.trampoline : ret, p.space.trampoline, e.fn,
                             now);
      if (!en.abandoned.empty()) report_.report_unwound(t, en.abandoned, "longjmp", now, t.stack.depth() - 1);
      t.stack.mark_last_recorded();
      depth = static_cast<unsigned>(t.stack.depth() - 1 - t.stack.inherited());
    }
    ++stats_.recorded_calls;
    if (!reported || !fn.entry_mask) return;
    // A tail call from a hooked frame was made with the hook as its return address:
    // the caller is that frame's.
    RemoteAddr caller = ret;
    if (p.space.is_return_hook(ret))
      for (const ShadowFrame& f : t.stack.frames())
        if (f.slot == slot) caller = f.real_ret;
    Registers regs;
    const auto& cc = arch::host().call;
    unsigned recorded_args = std::min(FT_REC_FLAGS_NARGS(e.flags), FT_REC_MAX_ARGS);
    for (size_t k = 0; k < recorded_args; ++k) regs.set(cc.args[k], words[FT_REC_CALL_ARGS + k]);
    regs.set_sp(slot);
    regs.set_ip(fn.address);
    unsigned nargs = std::min(FT_REC_FLAGS_NARGS(e.flags), FT_REC_MAX_ARGS);
    std::span<const uint64_t> stack;
    if (e.nwords > FT_REC_CALL_ARGS + nargs)
      stack = {words + FT_REC_CALL_ARGS + nargs, e.nwords - FT_REC_CALL_ARGS - nargs};
    // The hook of a tail call is not a caller.
    if (!stack.empty()) words[FT_REC_CALL_ARGS + nargs] = caller.value();
    report_.call(p, t, regs, now, depth, fn, fn.address, /*deferred=*/true, caller, stack);
    return;
  }
  if (e.kind != FT_REC_RETURN) return;
  RemoteAddr slot(words[FT_REC_RETURN_SLOT]), real(words[FT_REC_RETURN_TO]);
  // A tail call's inner frame returns into the hook of the frame it shares the slot
  // with: both are reported when that one returns.
  if (p.space.is_return_hook(real)) return;
  ++stats_.recorded_returns;
  auto r = t.stack.pop(slot + 8);
  if (!r.abandoned.empty()) report_.report_unwound(t, r.abandoned, "longjmp", now, t.stack.depth() + r.returned.size());
  if (!r.found) return;
  Registers regs;
  regs.set(arch::host().call.ret, words[FT_REC_RETURN_VALUE]);
  regs.set(arch::host().call.ret2, words[FT_REC_RETURN_VALUE2]);
  regs.set_sp(slot + 8);
  regs.set_ip(r.real_ret);
  Record rec{};
  rec.xmm0 = words[FT_REC_RETURN_FP];
  report_.report_returns(t, regs, r, now, &rec);
}

template <class F>
void ReturnHooks::collect_returns(Process& p, Thread* stopped, RemoteAddr sp, uint64_t cut, const Thread* whole,
                                  F&& each) {
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
    const uint64_t until = &t == whole ? UINT64_MAX : cut;
    for (size_t i = recs.size(); i-- > 0 && recs[i].tsc < until;) each(&t, recs[i]);  // innermost (earliest) first
  }
}

void ReturnHooks::report_fast_return(Thread& t, const Record& rec) {
  if (t.fast_records.empty() || t.fast_records.back().first != RemoteAddr(rec.slot)) {
    sync_blocks(t);  // not what functracer wrote there: put its records back
    return;
  }
  t.fast_records.pop_back();
  uint64_t now = t.event_ns(tsc_->to_ns(rec.tsc));
  auto r = t.stack.pop(RemoteAddr(rec.slot) + 8);
  // Frames the return skipped (longjmp'ed over); the thread may be running, so their
  // slots are left alone.
  if (!r.abandoned.empty()) report_.report_unwound(t, r.abandoned, "longjmp", now, t.stack.depth() + r.returned.size());
  if (!r.found) return;
  Registers regs;
  regs.set(arch::host().call.ret, rec.rax);
  regs.set(arch::host().call.ret2, rec.rdx);
  regs.set_sp(RemoteAddr(rec.slot) + 8);
  regs.set_ip(r.real_ret);
  ++stats_.fast_returns;
  report_.report_returns(t, regs, r, now, &rec);
}

}  // namespace ft
