#include "core/call_stack.h"

namespace ft {

std::vector<ShadowFrame> CallStack::drop_below(RemoteAddr slot, bool include_equal) {
  std::vector<ShadowFrame> out;
  while (!frames_.empty()) {
    const ShadowFrame& top = frames_.back();
    bool deeper = top.slot < slot || (include_equal && top.slot == slot);
    if (!deeper || slot - top.slot > kSameStackDistance) break;
    out.push_back(top);
    frames_.pop_back();
  }
  return out;
}

std::vector<ShadowFrame> CallStack::drop_stale(RemoteAddr slot, bool include_equal) {
  // The topmost frame on this slot's stack, under frames of other stacks (a handler on
  // an alternate signal stack, a coroutine's stack): if it is dead, so is everything
  // entered after it, whatever its stack — the thread siglongjmp'ed out of the handler.
  std::vector<ShadowFrame> out;
  size_t i = frames_.size();
  auto same_stack = [slot](RemoteAddr s) {
    return (s > slot ? s - slot : slot - s) <= kSameStackDistance;
  };
  while (i > 0 && !same_stack(frames_[i - 1].slot)) --i;
  if (i > 0 && i < frames_.size()) {
    const ShadowFrame& f = frames_[i - 1];
    if (f.slot < slot || (include_equal && f.slot == slot)) {
      while (frames_.size() > i) {
        out.push_back(frames_.back());
        frames_.pop_back();
      }
    }
  }
  auto below = drop_below(slot, include_equal);
  out.insert(out.end(), below.begin(), below.end());
  return out;
}

CallStack::Entry CallStack::push(RemoteAddr slot, RemoteAddr ret_at_slot, RemoteAddr trampoline, uint32_t fn,
                                 uint64_t now) {
  Entry e;
  bool tail = ret_at_slot == trampoline;
  // A frame at the same slot is a live caller only in the tail-call case.
  e.abandoned = drop_stale(slot, /*include_equal=*/!tail);
  ShadowFrame f;
  f.slot = slot;
  f.fn = fn;
  f.entry_ns = now;
  if (tail && !frames_.empty() && frames_.back().slot == slot) {
    f.tail = true;
    f.real_ret = frames_.back().real_ret;
    f.armed = frames_.back().armed;
  } else {
    // Either a normal call, or [slot] holds the trampoline with no frame of ours under
    // it (cannot happen while the bookkeeping is right); treat as a normal call.
    // Hijacked even while an unwinder runs (disarmed): a frame pushed now is deeper
    // than anything the unwinder walks (a landing pad's callee, the personality
    // routine) and returns before the unwinder looks at the stack again.
    f.real_ret = ret_at_slot;
    e.write_trampoline = true;
    f.armed = true;
  }
  frames_.push_back(f);
  return e;
}

CallStack::Return CallStack::pop(RemoteAddr sp_after) {
  Return r;
  RemoteAddr slot = sp_after - 8;
  // The trampoline was reached through this slot, so the topmost frame hijacking it
  // is the one returning, and everything above it was abandoned — whatever stack
  // those frames were on (a siglongjmp out of a handler on an alternate stack).
  size_t idx = frames_.size();
  while (idx > 0) {
    const ShadowFrame& f = frames_[idx - 1];
    if (f.slot == slot && !f.site) break;
    --idx;
  }
  if (idx == 0) return r;
  while (frames_.size() > idx) {
    r.abandoned.push_back(frames_.back());
    frames_.pop_back();
  }
  r.found = true;
  pop_run(slot, r);
  return r;
}

CallStack::Return CallStack::take(RemoteAddr sp_after) {
  Return r;
  RemoteAddr slot = sp_after - 8;
  size_t idx = frames_.size();
  while (idx > 0 && !(frames_[idx - 1].slot == slot && !frames_[idx - 1].site)) --idx;
  if (idx == 0) return r;
  r.found = true;
  size_t end = idx;  // one past the topmost frame of the run
  size_t begin = idx - 1;
  while (frames_[begin].tail && begin > 0 && frames_[begin - 1].slot == slot) --begin;
  for (size_t i = end; i > begin; --i) r.returned.push_back(frames_[i - 1]);
  r.real_ret = frames_[begin].real_ret;
  frames_.erase(frames_.begin() + static_cast<std::ptrdiff_t>(begin),
                frames_.begin() + static_cast<std::ptrdiff_t>(end));
  return r;
}

CallStack::Return CallStack::recover(RemoteAddr sp_after) {
  Return r;
  RemoteAddr slot = sp_after - 8;
  auto usable = [](const ShadowFrame& f) { return !f.site; };
  size_t idx = frames_.size();
  while (idx > 0 && !(usable(frames_[idx - 1]) &&
                      (frames_[idx - 1].slot > slot ? frames_[idx - 1].slot - slot : slot - frames_[idx - 1].slot) <=
                          kSameStackDistance))
    --idx;
  if (idx == 0) {
    idx = frames_.size();
    while (idx > 0 && !usable(frames_[idx - 1])) --idx;
  }
  if (idx == 0) return r;
  while (frames_.size() > idx) {
    r.abandoned.push_back(frames_.back());
    frames_.pop_back();
  }
  r.found = true;
  pop_run(frames_.back().slot, r);
  return r;
}

void CallStack::pop_run(RemoteAddr slot, Return& r) {
  while (!frames_.empty() && frames_.back().slot == slot) {
    r.returned.push_back(frames_.back());
    bool tail = frames_.back().tail;
    r.real_ret = frames_.back().real_ret;
    frames_.pop_back();
    if (!tail) break;
  }
}

CallStack::Return CallStack::pop_exit(RemoteAddr slot, uint32_t fn, bool above_abandoned) {
  Return r;
  size_t idx = frames_.size();
  while (idx > 0 && !(frames_[idx - 1].site && frames_[idx - 1].slot == slot && frames_[idx - 1].fn == fn)) --idx;
  if (idx == 0) return r;
  r.found = true;
  size_t end = idx;
  if (above_abandoned) {
    for (size_t i = frames_.size(); i > end; --i) r.abandoned.push_back(frames_[i - 1]);
    end = frames_.size();
  }
  size_t begin = idx - 1;
  while (frames_[begin].tail && begin > 0 && frames_[begin - 1].slot == slot) --begin;
  for (size_t i = idx; i > begin; --i) r.returned.push_back(frames_[i - 1]);
  r.real_ret = frames_[begin].real_ret;
  frames_.erase(frames_.begin() + static_cast<std::ptrdiff_t>(begin), frames_.begin() + static_cast<std::ptrdiff_t>(end));
  return r;
}

RemoteAddr CallStack::to_site(RemoteAddr slot, RemoteAddr trampoline, RemoteAddr ret_at_slot) {
  if (ret_at_slot != trampoline || frames_.empty() || frames_.back().slot != slot) return RemoteAddr();
  RemoteAddr real = frames_.back().real_ret;
  for (auto it = frames_.rbegin(); it != frames_.rend() && it->slot == slot; ++it) {
    it->site = true;
    it->armed = false;
  }
  return real;
}

CallStack::SiteEntry CallStack::push_site(RemoteAddr slot, RemoteAddr ret_at_slot, RemoteAddr trampoline, uint32_t fn,
                                          uint64_t now) {
  SiteEntry e;
  bool tail = !frames_.empty() && frames_.back().slot == slot &&
              (ret_at_slot == trampoline || (frames_.back().site && frames_.back().real_ret == ret_at_slot));
  e.abandoned = drop_stale(slot, /*include_equal=*/!tail);
  ShadowFrame f;
  f.slot = slot;
  f.fn = fn;
  f.entry_ns = now;
  f.site = true;
  f.armed = false;
  f.tail = tail;
  if (tail) {
    // e.g. a traced PLT stub jumping to __sigsetjmp: un-hijack the shared slot.
    f.real_ret = frames_.back().real_ret;
    for (auto it = frames_.rbegin(); it != frames_.rend() && it->slot == slot; ++it) {
      if (!it->site && it->armed) e.restore_slot = true;
      it->site = true;
      it->armed = false;
    }
  } else {
    f.real_ret = ret_at_slot;
  }
  e.real_ret = f.real_ret;
  frames_.push_back(f);
  return e;
}

CallStack::Return CallStack::pop_site(RemoteAddr sp_after, RemoteAddr ip) {
  Return r;
  if (frames_.empty()) return r;
  const ShadowFrame& top = frames_.back();
  if (!top.site || top.slot != sp_after - 8 || top.real_ret != ip) return r;
  r.found = true;
  r.real_ret = ip;
  while (!frames_.empty() && frames_.back().site && frames_.back().slot == sp_after - 8) {
    r.returned.push_back(frames_.back());
    bool tail = frames_.back().tail;
    frames_.pop_back();
    if (!tail) break;
  }
  return r;
}

std::vector<std::pair<RemoteAddr, RemoteAddr>> CallStack::disarm() {
  std::vector<std::pair<RemoteAddr, RemoteAddr>> out;
  for (auto& f : frames_) {
    if (f.armed && !f.tail && !f.site) out.emplace_back(f.slot, f.real_ret);
    if (!f.site) f.armed = false;
    f.fast = false;
    f.recorded = false;  // rearm hooks it with the trampoline
  }
  disarmed_ = true;
  return out;
}

CallStack::Rearm CallStack::rearm(RemoteAddr sp) {
  Rearm r;
  // Called at a function entry, where [sp] is the return address of that very call:
  // frames whose slot is at or below sp were unwound through.
  r.dead = drop_below(sp, /*include_equal=*/true);
  for (auto& f : frames_) {
    if (f.site) continue;
    if (!f.armed && !f.tail) r.slots.push_back(f.slot);
    f.armed = true;
  }
  disarmed_ = false;
  return r;
}

std::vector<ShadowFrame> CallStack::take_all() {
  std::vector<ShadowFrame> out(frames_.rbegin(), frames_.rend());
  frames_.clear();
  disarmed_ = false;
  return out;
}

}  // namespace ft
