// CallStack: one thread's shadow stack for the shared return trampoline.
//
// At a traced entry the return address at [sp] (the "slot") is saved here and
// replaced by the trampoline's address; when the function returns it lands on the
// trampoline, the matching frame is popped, the return is reported, and the thread
// resumes at the real return address. The stack must stay right when functions do not
// return normally:
//  - tail calls: a traced function jumps (not calls) to another traced one, so at the
//    second entry [sp] already holds the trampoline. The new frame shares the slot
//    (tail = true); one trampoline hit then returns both.
//  - longjmp / siglongjmp: frames are abandoned. Their slots are below the stack
//    pointer of any later entry or return on the same stack, which is how they are
//    found and reported as unwound ("longjmp"). Slots far away (another stack, e.g. a
//    sigaltstack handler) are not taken as abandoned.
//  - C++ exceptions: the unwinder reads return addresses from the stack and must see
//    the real ones. disarm() lists every hijacked slot to restore before it runs;
//    rearm(sp) after the catch reports frames below sp as unwound ("exception") and
//    lists the slots of the surviving frames to hijack again.
// The class is pure bookkeeping: the caller reads and writes tracee memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/remote_addr.h"

namespace ft {

struct ShadowFrame {
  RemoteAddr slot;        // stack address of the hijacked return address
  RemoteAddr real_ret;    // the return address the function was called with
  uint32_t fn = 0;        // the caller's function id
  uint64_t entry_ns = 0;
  bool tail = false;      // entered by a tail call: shares slot with the frame below
  bool armed = true;      // the slot holds the trampoline (false between disarm and rearm)
  bool inherited = false; // copied from the parent at fork: its call is in the parent's trace
  bool site = false;      // returns-twice function: its return is caught by a breakpoint at
                          // real_ret, not by the trampoline (the slot is left untouched)
  bool fast = false;      // the slot holds the thread's return stub and the process holds a
                          // record of it (fast_return.h): its return may come without a stop
  bool recorded = false;  // called through the in-process recorder, which hooked its return
                          // with its own stub and keeps it in the thread's frames (fast_path.h)
};

class CallStack {
 public:
  // Slots farther apart than this are on different stacks.
  static constexpr int64_t kSameStackDistance = 256ull << 20;

  struct Entry {
    std::vector<ShadowFrame> abandoned;  // popped (innermost first): report as unwound
    bool write_trampoline = false;       // the caller must write the trampoline into slot
  };
  // A traced function was entered; ret_at_slot is the value currently at [slot].
  Entry push(RemoteAddr slot, RemoteAddr ret_at_slot, RemoteAddr trampoline, uint32_t fn, uint64_t now);
  // Remove the frame push() just added (the hijack could not be written).
  void pop_last() { frames_.pop_back(); }
  // The frame push() just added hooks its return with the thread's stub.
  void mark_last_fast() { frames_.back().fast = true; }
  void mark_last_recorded() { frames_.back().recorded = true; }

  struct Return;
  // A function that may return twice (setjmp, vfork, getcontext) was entered. Its
  // return address must stay untouched: setjmp saves it in the jmp_buf. The return is
  // seen by a breakpoint at the return address instead (pop_site).
  // When it was reached by a tail call from a hijacked frame ([slot] holds the
  // trampoline), the frames sharing the slot become site frames too and the caller
  // must put the real return address back into the slot (restore_slot).
  struct SiteEntry {
    std::vector<ShadowFrame> abandoned;
    RemoteAddr real_ret;
    bool restore_slot = false;
  };
  SiteEntry push_site(RemoteAddr slot, RemoteAddr ret_at_slot, RemoteAddr trampoline, uint32_t fn, uint64_t now);
  // An untraced returns-twice function was reached by a tail call from hijacked
  // frames (ret_at_slot is the trampoline): they become site frames. Returns the real
  // return address to put back into the slot, or null when there is nothing to do.
  RemoteAddr to_site(RemoteAddr slot, RemoteAddr trampoline, RemoteAddr ret_at_slot);
  // A return-site breakpoint at ip was hit with sp_after: pops the matching site frame
  // (found == false when this thread has none there, e.g. a longjmp landing).
  Return pop_site(RemoteAddr sp_after, RemoteAddr ip);

  struct Return {
    bool found = false;
    RemoteAddr real_ret;
    std::vector<ShadowFrame> abandoned;  // innermost first: unwound (longjmp)
    std::vector<ShadowFrame> returned;   // innermost first: returned with the same value
  };
  // The trampoline was reached with sp_after = the stack pointer after the ret. The
  // topmost frame hijacking that slot returns (with its tail-call partners); frames
  // above it are reported abandoned.
  Return pop(RemoteAddr sp_after);
  // Removes only the frames hijacking that slot (with tail partners), leaving the
  // others: the return happened on another thread (a stack that moved threads).
  Return take(RemoteAddr sp_after);
  // An exit (return or tail jump) of function fn, whose frames are site frames pushed
  // by push_site, was reached with its return address at slot: the topmost such frame
  // of fn at slot returns with its tail partners. above_abandoned: the frames above
  // it were left without returning (a longjmp, a recovered Go panic) and are
  // returned as abandoned; otherwise they stay (the exit came on another thread, as
  // take()).
  Return pop_exit(RemoteAddr slot, uint32_t fn, bool above_abandoned);

  // The trampoline was reached through a slot no frame hijacked: the program moved a
  // hijacked return address (popped it and pushed it elsewhere, as code that drops
  // its caller's arguments does) or copied it. The innermost frame on that slot's
  // stack (else the innermost at all) is the likeliest owner: it is taken as the one
  // returning, the frames above it as abandoned. found == false when the thread has
  // no frame left.
  Return recover(RemoteAddr sp_after);

  // Slots to restore (slot, real return address) so an unwinder sees real addresses.
  std::vector<std::pair<RemoteAddr, RemoteAddr>> disarm();
  bool disarmed() const { return disarmed_; }
  struct Rearm {
    std::vector<ShadowFrame> dead;   // innermost first: unwound (exception)
    std::vector<RemoteAddr> slots;   // write the trampoline into these
  };
  Rearm rearm(RemoteAddr sp);

  // Everything, innermost first (thread exit, exec, detach).
  std::vector<ShadowFrame> take_all();

  size_t depth() const { return frames_.size(); }
  // Frames at the bottom that a forked child inherited (their calls were reported in
  // the parent's trace, so the child reports neither them nor counts them in depths).
  size_t inherited() const {
    size_t n = 0;
    while (n < frames_.size() && frames_[n].inherited) ++n;
    return n;
  }
  void mark_inherited() {
    for (auto& f : frames_) f.inherited = true;
  }
  bool empty() const { return frames_.empty(); }
  const std::vector<ShadowFrame>& frames() const { return frames_; }

 private:
  // Frames above (deeper than) `slot` on the same stack, or exactly at it when
  // include_equal, are abandoned.
  std::vector<ShadowFrame> drop_below(RemoteAddr slot, bool include_equal);
  // drop_below, after dropping the frames of other stacks entered after a dead frame
  // of this slot's stack (a siglongjmp out of a handler on an alternate stack).
  std::vector<ShadowFrame> drop_stale(RemoteAddr slot, bool include_equal);
  // Pops the topmost frame, at slot, with the tail-call partners sharing it, into
  // r.returned; r.real_ret is their return address.
  void pop_run(RemoteAddr slot, Return& r);

  std::vector<ShadowFrame> frames_;  // outermost first
  bool disarmed_ = false;
};

}  // namespace ft
