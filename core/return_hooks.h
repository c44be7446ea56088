// ReturnHooks: how functracer sees a traced function return. At the entry the return
// address at [sp] is saved on the thread's shadow stack (CallStack) and replaced by a
// hook, one of two:
//  - the shared trampoline: an int3 in the first out-of-line area; the return is a
//    ptrace stop (finish_return pops the frame, reports it and points the thread at
//    the real return address);
//  - the thread's own stub (fast_return.h), when every plugin that wants the return
//    needs only its registers: the return is recorded in the process without a stop
//    and read back (drain) before any later stop of the process is handled.
// Around them: frames left by longjmp (abandon), C++ exceptions (disarm puts every real
// return address back while the unwinder runs, rearm hooks the surviving frames
// again), and the process's return records kept equal to the shadow stacks (sync).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "arch/arch.h"
#include "core/call_stack.h"
#include "core/event_reporter.h"
#include "core/fast_path.h"
#include "core/fast_return.h"
#include "core/injector.h"
#include "core/process.h"
#include "arch/registers.h"

namespace ft {

class ReturnHooks {
 public:
  ReturnHooks(Injector& injector, EventReporter& report, TracerStats& stats);

  // The trampoline was reached: pops the frame, reports the return and points regs at
  // the real return address. False when no frame answers for it.
  bool finish_return(Thread& t, Registers& regs);
  // Reports frames abandoned by a longjmp and un-hijacks any that still hold a hook.
  void abandon(Thread& t, const std::vector<ShadowFrame>& frames, uint64_t now, size_t base_depth,
               const char* reason = "longjmp");
  // An unwinder starts (_Unwind_RaiseException & co.): the real return addresses go
  // back on the stack. rearm: the exception was caught at sp; the frames below it
  // are reported unwound ("exception"), the others hooked again.
  void disarm(Thread& t);
  void rearm(Thread& t, RemoteAddr sp);

  // Whether returns of process p may be handled in the process.
  bool fast_allowed(const Process& p) const {
    return fast_returns_ && arch::host().return_stub && !p.silent && !p.reports_to && !p.space.fast_unavailable;
  }
  // Hooks the return at [slot] with the thread's stub and records it; false when it
  // cannot (the caller uses the trampoline).
  bool push_fast(Thread& t, Registers& regs, RemoteAddr slot, RemoteAddr real_ret);
  // Reports the returns the process handled since the last stop; call before handling
  // any stop of the process. stopped, sp: the thread whose stop this is and its sp;
  // the word there is read along (Thread::sp_word). collected, if given, is called
  // once the records are copied out of the process and before they are reported (the
  // stopped thread may be let go there: its ring is empty).
  //
  // The threads that may be running go on recording while their two sources (the
  // stubs' returns, the recorder's ring) are read one after the other: what is taken
  // of them is what they recorded before a time read first (the cut), so that no
  // record is reported before an earlier one of its thread that the other source
  // had not shown yet; the rest waits for the next drain. Of `whole` (default: the
  // stopped thread), a thread that is stopped or gone, everything is taken.
  void drain(Process& p, Thread* stopped = nullptr, RemoteAddr sp = RemoteAddr(),
             const std::function<void()>& collected = {}, const Thread* whole = nullptr);
  // drain() when every thread of p is stopped or gone (detach): everything is taken.
  void drain_all(Process& p);
  // Writes the thread's records again after its shadow stack changed other than by a
  // push or a drained return.
  void sync(Thread& t);
  // The thread is gone: its block is free for another, its ring too (after what it
  // recorded is reported).
  void release(Thread& t);
  // The in-process recorder, whose records drain() reports with the returns.
  void set_fast_path(FastPath* f) { fast_path_ = f; }

 private:
  // drain() with the cut given (UINT64_MAX: none).
  void drain_until(Process& p, Thread* stopped, RemoteAddr sp, const std::function<void()>& collected,
                   const Thread* whole, uint64_t cut);
  // The thread's block, set up on first use (-1: none).
  int block(Process& p, Thread& t, Registers& regs);
  // The returns the threads' stubs handled since the last drain (innermost first per
  // thread), each handed to each(thread, record); reads along the word at the stopped
  // thread's sp (see drain). Of a thread other than `whole`, only the returns
  // time-stamped before `cut`; the others stay for the next drain.
  template <class F>
  void collect_returns(Process& p, Thread* stopped, RemoteAddr sp, uint64_t cut, const Thread* whole, F&& each);
  void report_fast_return(Thread& t, const fastret::Record& rec);
  // sync() for the blocks of returns handled by the threads' stubs only.
  void sync_blocks(Thread& t);
  // A call or return the process recorded (FastPath::collect), in its turn.
  // words: the record's, in the batch (changed in place where a report needs it).
  void report_recorded(const FastPath::Recorded& e, uint64_t* words, uint64_t now);
  // A stub's return, for the thread that made it.
  struct Ret {
    Thread* t;
    fastret::Record r;
  };
  // The stubs' returns and the recorder's records, reported in time order (per thread
  // in their own order).
  void report_in_order(std::vector<Ret>& rets, FastPath::RecordedBatch& batch);
  FastPath::RecordedBatch batch_;  // storage reused by drain
  FastPath* fast_path_ = nullptr;

  Injector& injector_;
  EventReporter& report_;
  TracerStats& stats_;
  bool fast_returns_ = true;  // FT_FAST_RETURNS=0 turns returns handled in the process off
  std::optional<fastret::TscClock> tsc_;  // created at the first such return
};

}  // namespace ft
