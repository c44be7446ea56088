// Entry breakpoints and trampoline stops: what happens at the stop of a traced call or
// return. The return hooks themselves are ReturnHooks' (return_hooks.h).
#include <signal.h>

#include <algorithm>
#include <cstring>

#include "core/tracer.h"
#include "common/check.h"
#include "core/log.h"
#include "core/procfs.h"
#include "core/ptrace.h"
#include "core/symbol_policy.h"
#include "core/survival.h"

namespace ft {
namespace {

constexpr int kRtConsistent = 0;
constexpr uint64_t kRDebugStateOffset = 24;  // struct r_debug { int; link_map*; ElfW(Addr) r_brk; r_state; ... }

// A call that cannot return: the compiler put the trap instruction after it (LLVM
// pads after a call to a noreturn function such as _Unwind_Resume with int3), which
// is no breakpoint of ours. The frame stays open without a return-site breakpoint,
// to be closed when it is unwound.
bool never_returns_to(Process& p, RemoteAddr ret) {
  if (p.space.breakpoints.contains(ret)) return false;
  auto trap = arch::host().trap;
  uint8_t code[8] = {};
  if (trap.size() > sizeof code || !p.mem().read_exact(ret, {code, trap.size()})) return false;
  return std::equal(trap.begin(), trap.end(), code);
}

// Whether v, the word at an entry's [sp], is a return address (arch/call_sites.h). Code
// reached by a jump has something else there (argc at a program's entry), which must
// never be taken for a return address and replaced.
bool is_return_address(Process& p, uint64_t v) {
  RemoteAddr a(v);
  if (p.space.is_return_hook(a) || p.space.return_addresses.count(a)) return true;
  if (v < arch::kCallLookBehind) return false;
  uint8_t buf[arch::kCallLookBehind + arch::kCallLookAhead];
  uint64_t from = v - arch::kCallLookBehind;
  // The page before may be unmapped: then only from the address's own page on (a
  // read stops at the first unmapped page after it).
  auto n = p.mem().read(RemoteAddr(from), buf);
  if (!n || *n <= arch::kCallLookBehind) {
    from = std::max(from, (v - 1) & ~uint64_t{4095});
    n = p.mem().read(RemoteAddr(from), {buf, static_cast<size_t>(v - from) + arch::kCallLookAhead});
    if (!n || *n < v - from) return false;
  }
  size_t behind = static_cast<size_t>(v - from);
  std::span<const uint8_t> got(buf, *n);
  if (!arch::host().is_return_address(got.first(behind), got.subspan(behind), v)) return false;
  p.space.return_addresses.insert(a);
  return true;
}

}  // namespace

void Tracer::on_entry(Thread& t, Registers& regs, Breakpoint& bp_ref) {
  Process& p = *t.process;
  // A hijacked return address, whichever thread's stub it is, is "the trampoline" to
  // the shadow stack.
  auto hook_value = [&p](uint64_t v) { return p.space.is_return_hook(RemoteAddr(v)) ? p.space.trampoline : RemoteAddr(v); };
  RemoteAddr addr = bp_ref.function();
  unsigned hooks = bp_ref.hooks;
  // The stop path of an entry patched for the recorder: the thread had no ring.
  if (!bp_ref.entry.null()) fast_path_.note_thread(t, regs);
  Registers at_breakpoint = regs;
  at_breakpoint.set_ip(addr);
  if (!t.walk_frames.empty()) {
    // FT_UNWIND_VERIFY: the recorder walked this entry's stack and sent it here.
    if (!bp_ref.entry.null() && t.walk_slot == regs.sp()) {
      if (!p.space.unwinder) p.space.unwinder = std::make_unique<Backtracer>();
      p.space.unwinder->check_recorded_walk(p, t, at_breakpoint, t.walk_frames, t.walk_complete);
    }
    t.walk_frames.clear();
  }
  EventReporter::AtStop at_stop(report_, at_breakpoint);
  if (hooks & kHookReturnSite) {
    auto r = t.stack.pop_site(regs.sp(), addr);
    if (r.found) report_.report_returns(t, regs, r, t.event_ns(monotonic_ns()));
    if (t.rearm_ip == addr && (t.rearm_sp.null() || t.rearm_sp == regs.sp())) {
      t.rearm_ip = t.rearm_sp = RemoteAddr();
      returns_.rearm(t, regs.sp());
    }
  }
  if (hooks & kHookModuleInit) resolve_ifuncs(p, t, regs);
  Breakpoint* bp = &bp_ref;
  if (hooks & kHookLinker) {
    bool consistent = true;
    if (!p.space.r_debug.null()) {
      uint32_t state = 0;
      if (p.mem().read_exact(p.space.r_debug + kRDebugStateOffset, {reinterpret_cast<uint8_t*>(&state), 4}))
        consistent = static_cast<int>(state) == kRtConsistent;
    }
    if (consistent) {
      rescan_modules(p, t, regs);
      // Rescanning is the only step that removes breakpoints (a module went away);
      // planting only adds, which leaves pointers into the table valid.
      auto it = p.space.breakpoints.find(addr);
      if (it == p.space.breakpoints.end()) {
        regs.set_ip(addr);  // the instruction is back in place
        (void)ptrace::set_regs(t.tid, regs);
        resume(t);
        return;
      }
      bp = &it->second;
    }
  }
  bool reported = bp->traced && enabled_ && (!p.silent || p.reports_to);
  bp->last_hit_ns = monotonic_ns();

  if (hooks & kHookUnwindStart) returns_.disarm(t);
  if (hooks & kHookCatch) returns_.rearm(t, regs.sp());
  if ((hooks & kHookLandingPad) && t.stack.disarmed()) {
    // _Unwind_SetIP(context, pad): the unwinder jumps to pad next, with the stack
    // pointer of the frame that owns it. Frames below are unwound (a catch, or a
    // cleanup that resumes unwinding with _Unwind_Resume, which disarms again); that
    // frame and its callers go on, their returns hooked again.
    RemoteAddr pad(regs.arg(1));
    if (Breakpoint* site = plant_raw(p, t, regs, pad, "landing pad")) {
      site->hooks |= kHookReturnSite;
      t.rearm_ip = pad;
      t.rearm_sp = RemoteAddr();  // whatever the frame's stack pointer
    }
  }
  if (hooks & kHookBacktrace) {
    // backtrace() returns normally: put the trampolines back when it does.
    if (auto ret = p.mem().peek(t.tid, regs.sp()); ret && !p.space.is_return_hook(RemoteAddr(*ret))) {
      if (Breakpoint* site = plant_raw(p, t, regs, RemoteAddr(*ret), "_Unwind_Backtrace return site")) {
        site->hooks |= kHookReturnSite;
        t.rearm_ip = RemoteAddr(*ret);
        t.rearm_sp = regs.sp() + 8;
      }
    }
  }
  if ((hooks & kHookKeepReturnAddress) && !(reported && p.space.functions[bp->fn].return_mask)) {
    // Not traced itself, but reached by a jump from hijacked frames (a traced
    // _setjmp@plt): it would save the trampoline as its return address. Hand those
    // frames over to a return-site breakpoint and put the real address back.
    if (auto ret = p.mem().peek(t.tid, regs.sp()))
      if (RemoteAddr real = t.stack.to_site(regs.sp(), p.space.trampoline, hook_value(*ret)); !real.null()) {
        (void)p.mem().poke(t.tid, regs.sp(), real.value());
        if (Breakpoint* site = plant_raw(p, t, regs, real, "return site"))
          site->hooks |= kHookReturnSite;
      }
  }

  if (reported) {
    uint32_t fn_id = bp->fn;
    const FunctionInfo& fn = p.space.functions[fn_id];
    uint64_t now = t.event_ns(monotonic_ns());
    // A Go frame is its goroutine's, kept on the goroutine's stack (go_stacks.h), and
    // keyed where a moved stack still finds it.
    GoStacks::Place place{regs.sp(), 0};
    if (fn.go) place = p.space.go_stacks.place(p.mem(), regs, regs.sp());
    CallStack& stack = place.goroutine ? p.space.go_stacks.stack(place.goroutine) : t.stack;
    std::optional<EventReporter::OfGoroutine> of_goroutine;
    if (place.goroutine) of_goroutine.emplace(report_, stack, place.goroutine);
    unsigned depth = static_cast<unsigned>(stack.depth() - stack.inherited());
    // A return that cannot be hooked because the process's memory is going away (it
    // is being killed): the call is closed at once, as the frames open at its end are.
    bool unwound_at_once = false;
    const char* unwound_reason = "exit";
    bool reported_entry = true;
    if (fn.return_mask) {
      RemoteAddr slot = place.key;
      // Read with the return records at the start of the stop, unless a hook may have
      // written there since.
      auto ret = !hooks && t.sp_word_valid && t.sp_word_at == slot ? Result<uint64_t>(t.sp_word)
                                                                         : p.mem().peek(t.tid, regs.sp());
      if (ret && !fn.ret_sites && !is_return_address(p, *ret)) {
        // Entered by a jump: no return to follow, and nothing to write. (Returns
        // caught at the function's exits write nothing: such a frame simply stays
        // open until an exit or a later event closes it. Go starts a goroutine's
        // function with a return address the runtime made up, goexit + 1.)
        FT_DEBUG("thread {}: {} entered without a call ([sp] = {:#x})", t.tid, fn.name, *ret);
        unwound_at_once = true;
        unwound_reason = "jump";
      } else if (ret && fn.go && restarted_go_frame(t, stack, slot, fn_id, RemoteAddr(*ret))) {
        // The entry again after runtime.morestack grew the stack: the same call.
        reported_entry = false;
      } else if (ret && ((hooks & kHookKeepReturnAddress) || fn.ret_sites)) {
        // Catch the return with a breakpoint at the return address, or at the
        // function's exits (planted with the entry).
        auto e = stack.push_site(slot, hook_value(*ret), p.space.trampoline, fn_id, now);
        if (!e.abandoned.empty()) returns_.abandon(t, e.abandoned, now, stack.depth() - 1);
        depth = static_cast<unsigned>(stack.depth() - 1 - stack.inherited());
        // (slot is a Go frame's key, not its stack address: the word is at sp.)
        if (e.restore_slot) (void)p.mem().poke(t.tid, regs.sp(), e.real_ret.value());
        if ((!fn.ret_sites || e.restore_slot || fn.exits_unknown) && !never_returns_to(p, e.real_ret)) {
          Breakpoint* site = plant_raw(p, t, regs, e.real_ret, fn.name + " return site");
          if (site) {
            site->hooks |= kHookReturnSite;
          } else if (!fn.ret_sites || fn.exits_unknown) {
            stack.pop_last();
          }
        }
      } else if (ret) {
        auto e = t.stack.push(slot, hook_value(*ret), p.space.trampoline, fn_id, now);
        if (!e.abandoned.empty()) {
          returns_.abandon(t, e.abandoned, now, t.stack.depth() - 1);
          returns_.sync(t);
        }
        depth = static_cast<unsigned>(t.stack.depth() - 1 - t.stack.inherited());
        if (e.write_trampoline && fn.fast_return() && returns_.fast_allowed(p) &&
            fast_path_.push_frame(t, slot, RemoteAddr(*ret), fn_id)) {
          t.stack.mark_last_recorded();
        } else if (e.write_trampoline && fn.fast_return() && returns_.fast_allowed(p) && returns_.push_fast(t, regs, slot, RemoteAddr(*ret))) {
          t.stack.mark_last_fast();
        } else if (e.write_trampoline) {
          survival::note_return(p, slot, RemoteAddr(*ret));
          if (auto s = p.mem().poke(t.tid, slot, p.space.trampoline.value()); !s) {
            t.stack.pop_last();
            log::warn("cannot hook the return of {} in thread {}: {}", fn.name, t.tid, s.error().message);
            report_.record_lost(p, t, 1, "return of " + fn.name + " not hooked: " + s.error().message);
            unwound_at_once = true;
          }
        }
      } else {
        // The call is reported, its return cannot be: say so rather than leave an
        // open frame nobody explains.
        log::warn("cannot hook the return of {} in thread {}: {}", fn.name, t.tid, ret.error().message);
        report_.record_lost(p, t, 1, "return of " + fn.name + " not hooked: " + ret.error().message);
        unwound_at_once = true;
      }
    }
    if (fn.entry_mask && reported_entry) {
      report_.call(p, t, regs, now, depth, fn, addr);
    }
    if (unwound_at_once) {
      ShadowFrame f;
      f.slot = regs.sp();
      f.fn = fn_id;
      f.entry_ns = now;
      report_.report_unwound(t, {f}, unwound_reason, now, stack.depth());
    }
  }
  if (hooks & kHookFunctionExit) leave_function(t, regs, bp->exit_of);
  if (hooks) returns_.sync(t);  // the hooks may have changed the shadow stack
  if (auto s = apply_relocation(p.mem(), *bp, regs); !s) {
    // The emulated instruction touched memory the program cannot touch either (a
    // call pushing into the stack guard page): the CPU would have raised SIGSEGV.
    log::warn("thread {}: the instruction at {:#x} faults ({}); delivering SIGSEGV", t.tid, addr.value(),
              s.error().message);
    regs.set_ip(addr);
    (void)ptrace::set_regs(t.tid, regs);
    (void)ptrace::cont(t.tid, SIGSEGV);
    return;
  }
  if (auto s = ptrace::set_regs(t.tid, regs); !s) return;
  resume(t);
}

void Tracer::leave_function(Thread& t, Registers& regs, uint32_t fn_id) {
  Process& p = *t.process;
  const FunctionInfo& fn = p.space.functions[fn_id];
  uint64_t now = t.event_ns(monotonic_ns());
  // At a return instruction or a tail jump the return address is at sp, as at the entry.
  GoStacks::Place place{regs.sp(), 0};
  if (fn.go) place = p.space.go_stacks.place(p.mem(), regs, regs.sp());
  RemoteAddr slot = place.key;
  if (place.goroutine) {
    // The goroutine's own frames, on whichever thread it runs now: frames above the
    // returning one were left by a panic its caller recovered.
    CallStack& stack = p.space.go_stacks.stack(place.goroutine);
    EventReporter::OfGoroutine of_goroutine(report_, stack, place.goroutine);
    auto r = stack.pop_exit(slot, fn_id, /*above_abandoned=*/true);
    if (!r.abandoned.empty()) returns_.abandon(t, r.abandoned, now, stack.depth() + r.returned.size(), "panic");
    if (r.found) report_.report_returns(t, regs, r, now);
    return;
  }
  Thread* owner = &t;
  auto r = t.stack.pop_exit(slot, fn_id, /*above_abandoned=*/true);
  if (!r.found) {
    // A goroutine that moved to another thread since the call: its frame is on the
    // shadow stack of the thread it was entered on, whose records it closes.
    for (auto& [tid, other] : p.threads()) {
      if (other.get() == &t) continue;
      r = other->stack.pop_exit(slot, fn_id, /*above_abandoned=*/false);
      if (r.found) {
        owner = other.get();
        break;
      }
    }
  }
  if (!r.abandoned.empty())
    returns_.abandon(*owner, r.abandoned, now, owner->stack.depth() + r.returned.size(), fn.go ? "panic" : "longjmp");
  if (r.found) report_.report_returns(*owner, regs, r, now);
}

bool Tracer::restarted_go_frame(Thread& t, const CallStack& stack, RemoteAddr slot, uint32_t fn_id, RemoteAddr ret) {
  // runtime.morestack runs the function again from its entry on the new stack, at the
  // same key and with the same return address, with no exit in between; the
  // goroutine may have been preempted there and go on on another thread. A key is
  // its goroutine's alone: its stack has the frame (or, for a frame not on a
  // goroutine's stack, a frame of another thread may be the one).
  if (&stack != &t.stack) {
    for (const ShadowFrame& f : stack.frames())
      if (f.site && f.slot == slot && f.fn == fn_id && f.real_ret == ret) return true;
    return false;
  }
  for (auto& [tid, other] : t.process->threads())
    for (const ShadowFrame& f : other->stack.frames())
      if (f.site && f.slot == slot && f.fn == fn_id && f.real_ret == ret) return true;
  return false;
}

void Tracer::on_return(Thread& t, Registers& regs) {
  if (!returns_.finish_return(t, regs)) {
    // No frame of the process is left to say where to go: the program cannot go on
    // (a return to nowhere), but functracer and the trace can. The thread returns to
    // address 0 and gets the SIGSEGV a return to an unmapped address gives.
    log::warn("thread {}: returned through the trampoline with no open frame to return to ({})", t.tid,
              regs.dump());
    report_.record_lost(*t.process, t, 1, "a return through the trampoline with no open frame to return to");
    regs.set_ip(RemoteAddr());
    if (auto s = ptrace::set_regs(t.tid, regs); !s) return;
    resume(t);
    return;
  }
  returns_.sync(t);
  if (auto s = ptrace::set_regs(t.tid, regs); !s) return;
  resume(t);
}

}  // namespace ft
