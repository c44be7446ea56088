#include "core/injector.h"

#include <signal.h>

#include <fmt/format.h>

#include "arch/arch.h"
#include "core/die_at.h"
#include "core/fast_path.h"
#include "core/ptrace.h"
#include "core/survival.h"
#include "core/tracee_guards.h"
#include "core/wait_status.h"

namespace ft {

Result<uint64_t> Injector::syscall(Thread& t, Registers& saved, RemoteAddr stub, long nr,
                                   std::initializer_list<uint64_t> args, RemoteAddr room) {
  const arch::SyscallConvention& sc = arch::host().syscall;
  Registers r = saved;
  r.set(sc.number, static_cast<uint64_t>(nr));
  size_t i = 0;
  for (uint64_t a : args) r.set(sc.args[i++], a);
  r.set_ip(stub);
  r.set_no_restart();
  // An attached program must outlive functracer: the system call is followed by code
  // that puts the registers back should functracer die before it does.
  if (RemoteAddr block = write_resume_block(t, saved, arch::RecorderStubs::ResumeAfter::kSyscall, room);
      !block.null()) {
    // Back from a system call's exit stop, a call the thread was stopped in is
    // restarted by hand (see restart_syscall).
    Registers back = saved;
    arch::host().recorder->restart_syscall(back);
    RegisterGuard guard(t.tid, back);
    r.set_ip(block);
    if (auto s = ptrace::set_regs(t.tid, r); !s) return s.error();
    die_at::reached(die_at::Moment::Syscall);
    auto after = run_to_syscall_exit(t, block + static_cast<int64_t>(sc.insn_size));
    if (!after) return after.error();
    if (auto s = guard.restore(); !s) return s.error();
    saved = back;  // what the caller writes back later must not undo the restart
    return after->get(sc.ret);
  }
  RegisterGuard guard(t.tid, saved);
  if (auto s = ptrace::set_regs(t.tid, r); !s) return s.error();
  die_at::reached(die_at::Moment::Syscall);
  auto after = run_to_trap(t, arch::host().pc_after_syscall_stub(stub));
  if (!after) return after.error();
  if (auto s = guard.restore(); !s) return s.error();
  return after->ret();
}

Result<uint64_t> Injector::call(Thread& t, const Registers& saved, RemoteAddr fn, uint64_t arg) {
  Process& p = *t.process;
  if (p.space.areas.empty()) return Error::msg("no out-of-line area");
  // Below the red zone of whatever the thread was running, 16-byte aligned at the
  // call, returning onto an int3 of the area.
  const arch::Traits& host = arch::host();
  const arch::CallConvention& cc = host.call;
  RemoteAddr ret = p.space.areas.front()->call_return();
  // An attached program must outlive functracer: should it die before fn returns, the
  // program's SIGTRAP handler sends the thread past the trap, to code that puts its
  // registers back.
  if (RemoteAddr block = write_resume_block(t, saved, arch::RecorderStubs::ResumeAfter::kTrap); !block.null()) {
    ret = block;
    survival::note_resume(p, block, block + static_cast<int64_t>(host.trap.size()));
  }
  RemoteAddr sp(cc.call_sp(saved.sp().value()));
  Registers r = saved;
  if (cc.return_address == arch::CallConvention::ReturnAddress::Pushed) {
    if (auto s = p.mem().write_u64(sp, ret.value()); !s) return s.error();
  } else {
    r.set(cc.link, ret.value());
  }
  r.set_sp(sp);
  r.set_ip(fn);
  r.set(cc.args[0], arg);
  if (cc.zero != arch::kNoReg) r.set(cc.zero, 0);
  r.set_no_restart();  // a thread stopped in a system call must not restart it here
  // A thread running with a shadow stack (x86 CET) checks every return against it:
  // the return address goes there too (ptrace may write shadow stack memory), and
  // fn's return pops it. The shadow stack pointer is put back whatever happens.
  auto ssp = ptrace::shadow_stack_pointer(t.tid);
  if (ssp) {
    if (auto s = p.mem().write_u64(RemoteAddr(*ssp - 8), ret.value()); !s)
      return Error::msg("cannot write the return address on the shadow stack: " + s.error().message);
    if (auto s = ptrace::set_shadow_stack_pointer(t.tid, *ssp - 8); !s) return s.error();
  }
  RegisterGuard guard(t.tid, saved);
  if (auto s = ptrace::set_regs(t.tid, r); !s) return s.error();
  auto after = run_to_trap(t, host.pc_after_trap(ret));
  if (ssp) (void)ptrace::set_shadow_stack_pointer(t.tid, *ssp);
  if (!after) return after.error();
  if (auto s = guard.restore(); !s) return s.error();
  return after->ret();
}

RemoteAddr Injector::write_resume_block(Thread& t, const Registers& saved, arch::RecorderStubs::ResumeAfter first,
                                        RemoteAddr room) {
  Process& p = *t.process;
  const arch::RecorderStubs* stubs = arch::host().recorder;
  if (!p.attached || !stubs) return {};
  if (room.null() && p.space.resume_code.null() && !p.space.areas.empty() &&
      p.space.areas.front()->next_offset() + kResumeBytes <= SsolArea::kSize)
    p.space.resume_code = p.space.areas.front()->allocate(kResumeBytes);
  RemoteAddr at = room.null() ? p.space.resume_code : room;
  if (at.null()) return {};
  // A thread stopped at one of functracer's traps, which functracer has not handled
  // yet, takes it again should functracer die meanwhile (the SIGTRAP handler then
  // sends it on): the trap's signal is used up once the thread runs it.
  Registers alone = saved;
  if (RemoteAddr trap = arch::host().trap_address(saved.ip()); p.space.is_our_trap(trap)) alone.set_ip(trap);
  auto code = stubs->resume_block(alone, at.value(), first);
  if (code.size() > kResumeBytes || !p.mem().write(at, code)) return {};
  return at;
}

Status Injector::settle_after_exec(Thread& t, Registers& regs) {
  Process& p = *t.process;
  RemoteAddr ip = regs.ip();
  Result<Registers> after = Error::msg("");
  {
    auto patch = CodePatch::apply(p.mem(), ip, arch::host().trap);
    if (!patch) return patch.error();
    after = run_to_trap(t, arch::host().pc_after_trap(ip));
  }
  if (!after) return after.error();
  regs = *after;
  regs.set_ip(ip);
  return ptrace::set_regs(t.tid, regs);
}

Result<Registers> Injector::step(Thread& t) {
  for (int tries = 0; tries < 16; ++tries) {
    if (auto s = ptrace::singlestep(t.tid); !s) return s.error();
    auto stop = stops_.wait_thread(t.tid);
    if (!stop) return stop.error();
    WaitStatus ws = WaitStatus::classify(stop->status);
    if (ws.kind == WaitStatus::Kind::Exited || ws.kind == WaitStatus::Kind::Killed) {
      stops_.defer(*stop);
      return Error::msg("the thread ended while functracer stepped it");
    }
    if (ws.kind == WaitStatus::Kind::SignalStop && ws.signal == SIGTRAP) return ptrace::get_regs(t.tid);
    if (ws.kind != WaitStatus::Kind::SignalStop) continue;
    if (!t.held_signal) {
      t.held_signal = ws.signal;
    } else if (auto si = ptrace::siginfo(t.tid)) {
      FastPath::requeue_signal(t.process->pid(), t.tid, *si);  // delivered after the detach
    }
  }
  return Error::msg("signals kept coming while functracer stepped the thread");
}

Result<WaitStatus> Injector::next_stop(Thread& t, const char* running) {
  auto stop = stops_.wait_thread(t.tid);
  if (!stop) return stop.error();
  WaitStatus ws = WaitStatus::classify(stop->status);
  if (ws.kind == WaitStatus::Kind::Exited || ws.kind == WaitStatus::Kind::Killed) {
    stops_.defer(*stop);
    return Error::msg(fmt::format("the thread ended while running {}", running));
  }
  return ws;
}

Result<Registers> Injector::run_to_syscall_exit(Thread& t, RemoteAddr after_insn) {
  bool entered = false;
  if (auto s = ptrace::syscall(t.tid, 0); !s) return s.error();
  for (;;) {
    auto next = next_stop(t, "functracer's system call");
    if (!next) return next.error();
    WaitStatus ws = *next;
    if (ws.kind == WaitStatus::Kind::SyscallStop) {
      // Only the stops of this system call count (one the thread was stopped in may
      // report its own exit first).
      auto now = ptrace::get_regs(t.tid);
      if (!now) return now.error();
      if (now->ip() == after_insn) {
        if (entered) return *now;
        entered = true;
      }
    } else if (ws.kind == WaitStatus::Kind::SignalStop) {
      // A signal that arrived meanwhile is held and delivered at the next resume.
      t.held_signal = ws.signal;
    }
    if (auto s = ptrace::syscall(t.tid, 0); !s) return s.error();
  }
}

Result<Registers> Injector::run_to_trap(Thread& t, RemoteAddr expect_ip) {
  if (auto s = ptrace::cont(t.tid, 0); !s) return s.error();
  for (;;) {
    auto next = next_stop(t, "functracer's code");
    if (!next) return next.error();
    WaitStatus ws = *next;
    if (ws.kind == WaitStatus::Kind::SignalStop && ws.signal == SIGTRAP) {
      auto now = survival::stop_regs(t);
      if (!now) return now.error();
      if (now->ip() == expect_ip) return *now;
      // A breakpoint in code functracer runs (a function it calls): step over it,
      // unreported.
      Process& p = *t.process;
      auto bp = p.space.breakpoints.find(arch::host().trap_address(now->ip()));
      if (bp != p.space.breakpoints.end() && !p.space.is_trampoline(bp->second.addr)) {
        if (auto s = apply_relocation(p.mem(), bp->second, *now); !s) return s.error();
        if (auto s = ptrace::set_regs(t.tid, *now); !s) return s.error();
      }
    } else if (ws.kind == WaitStatus::Kind::SignalStop && is_fault_signal(ws.signal)) {
      // The code functracer made the thread run faulted: the fault is functracer's,
      // not the program's (the guard puts the registers back; the signal is dropped).
      if (auto si = ptrace::siginfo(t.tid); si && si->si_code > 0)
        return Error::msg(fmt::format("{} at {:#x}", signal_name(ws.signal),
                                      reinterpret_cast<uint64_t>(si->si_addr)));
      t.held_signal = ws.signal;
    } else if (ws.kind == WaitStatus::Kind::SignalStop) {
      // A signal that arrived meanwhile is held and delivered at the next resume.
      t.held_signal = ws.signal;
    }
    if (auto s = ptrace::cont(t.tid, 0); !s) return s.error();
  }
}

}  // namespace ft
