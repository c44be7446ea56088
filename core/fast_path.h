// FastPath: calls recorded inside the traced process, without a ptrace stop
// (doc/internals.md §8b). functracer puts the recorder there (a shared region and the
// recorder's code, by injected system calls), patches the entries of functions whose
// plugins declared what they read (ft_capture) with a jump to a trampoline that
// records the call, and turns the records back into ordinary call and return events
// before any later stop of the process is handled (ReturnHooks::drain merges them
// with the returns handled by the threads' stubs, by time).
//
// The stop path stays for everything the recorder refuses: a thread without a ring
// (its first recorded call, or its thread pointer changed), frames deeper than the
// recorder keeps, a return it cannot match (longjmp), an entry it cannot patch safely.
// Such an entry traps at its trampoline (a Breakpoint there stands for the function)
// and is handled as a breakpoint hit; such a return traps at the return stub and is
// handled as at the trampoline.
//
// Patching is only done while no other thread of the process can run (the process
// has one thread, which is stopped, or functracer holds every thread, as at attach)
// and none is stopped inside the bytes the jump replaces; entries of libraries loaded
// while other threads run keep their breakpoints.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <optional>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "core/elf_image.h"
#include "core/event_reporter.h"
#include "core/injector.h"
#include "core/process.h"
#include "core/recorder.h"
#include "core/ssol_area.h"
#include "core/unwind_index.h"

namespace ft {

class FastPath {
 public:
  FastPath(Injector& injector, EventReporter& report, TracerStats& stats);

  // On unless FT_FAST_PATH=0. The stubs read the thread pointer with rdfsbase where the
  // kernel allows it, else at fs:0 (arch::ThreadPointerRead).
  // The targets of the branches in every function of an image (link-time addresses,
  // sorted): a branch from another function into the bytes a patch replaces. Decoded
  // at the first patch in a module of the image, or ahead of an attach (decode_ahead),
  // and kept while the image lives.
  const std::vector<uint64_t>& image_targets(const std::shared_ptr<const ElfImage>& image);
  // Before an attach stops the threads: what the first patch in an image needs of it
  // (its branch targets) and the first call stack walked in the process (its frame
  // rules, unwind_index.h), made while the program still runs: for libc, tens of
  // milliseconds each.
  void decode_ahead(const std::shared_ptr<const ElfImage>& image);
  bool wanted() const { return wanted_; }
  const std::string& why_not() const { return why_not_; }

  // Patches the entry of function fn_id (at addr, symbol sym of module m) with a jump
  // to a trampoline in `area`; true when done (no breakpoint needed). reason: why not.
  // nargs: integer arguments to record; frames: return addresses of the call stack.
  bool patch(Process& p, Thread& t, Registers& regs, const Module& m, const ElfSymbol& sym, RemoteAddr addr,
             uint32_t fn_id, unsigned nargs, unsigned frames, SsolArea& area, std::string& reason);

  // The trap of the return stub's slow path.
  static bool is_return_trap(const Process& p, RemoteAddr at) {
    return !p.space.recorder.return_trap.null() && at == p.space.recorder.return_trap;
  }
  // A thread that reached a trampoline's trap: gives it a ring if it has none for its
  // present thread pointer (its next calls are recorded in the process).
  void note_thread(Thread& t, const Registers& regs);

  // Hooks the return of a call taken on the stop path with the recorder's return stub,
  // as the recorder does for the calls it records: its return is recorded in the
  // thread's ring, in order with the thread's recorded calls. False when the thread has
  // no ring (the caller hooks the return another way). The thread is stopped.
  bool push_frame(Thread& t, RemoteAddr slot, RemoteAddr real_ret, uint32_t fn);

  // One record read out of a ring, for the thread that wrote it; its words are in the
  // batch's word store.
  struct Recorded {
    Thread* thread = nullptr;
    uint64_t tsc = 0;
    uint32_t fn = 0;
    uint32_t flags = 0;
    uint32_t words_at = 0;  // index of the first word in RecordedBatch::words
    uint16_t kind = 0;
    uint16_t nwords = 0;
  };
  // What collect() read: the records of each ring in order, one run after the other.
  // Kept by the caller between collections so that its storage is reused.
  struct RecordedBatch {
    std::vector<Recorded> records;
    std::vector<uint64_t> words;
    std::vector<size_t> runs;  // where each ring's run of records starts
    void clear() {
      records.clear();
      words.clear();
      runs.clear();
    }
    const uint64_t* words_of(const Recorded& r) const { return words.data() + r.words_at; }
    uint64_t* words_of(const Recorded& r) { return words.data() + r.words_at; }
  };
  // The most words a record is read with (a call's slot, return address, arguments
  // and stack words).
  static constexpr size_t kMaxRecordWords = FT_REC_CALL_ARGS + FT_REC_MAX_ARGS + FT_REC_MAX_STACK;
  // The words every record has room for in the batch (a call's fixed words and every
  // argument; a return's words).
  static constexpr size_t kMinRecordWords = FT_REC_CALL_ARGS + FT_REC_MAX_ARGS;
  // Appends what the threads of p recorded since the last call to out: of a thread
  // that may be running, the records time-stamped before `cut` (ReturnHooks::drain);
  // of `whole` (stopped or gone), all.
  void collect(Process& p, RecordedBatch& out, uint64_t cut, const Thread* whole);
  // Whether t's ring has less room than a recorded call may need: an entry that
  // reached its trampoline's trap then most likely found it full.
  static bool short_of_room(const Process& p, const Thread& t);
  // Lost events (full rings) since the last call, reported as `lost` records.
  void report_losses(Process& p);
  // Writes the thread's hooked frames (the recorded frames of its shadow stack, which
  // hold the return stub) into its ring's frame stack: after its shadow stack changed
  // other than by a recorded call or return. The thread is stopped.
  void sync(Thread& t);

  // A signal stopped thread t: when t is inside the recorder's own code (between its
  // first change to a ring or frame stack and its last), delivering it now would let a
  // handler's traced calls interleave with a half-written record. Then the signal is
  // held (true; resume t without it): the recorder's function returns into the signal
  // trap instead, where take_held gives the signals back for delivery.
  bool hold_signal(Thread& t, int sig);
  static bool is_signal_trap(const Process& p, RemoteAddr at) {
    return !p.space.recorder.signal_trap.null() && at == p.space.recorder.signal_trap;
  }
  // t stopped at the signal trap: points regs where the recorder returns to and hands
  // over the held signals, oldest first.
  static std::vector<siginfo_t> take_held(Thread& t, Registers& regs);
  // Detach: the held signals are queued again and the return addresses put back.
  static void give_back_held(Process& p);
  static void requeue_signal(pid_t pid, pid_t tid, siginfo_t si);

  // The thread is gone, or is about to lend its thread pointer to a vfork child: its
  // rings are drained by the caller first, then given back.
  void release(Thread& t);
  // A followed fork child at its first stop: its own region, where its parent's was
  // (the inherited one, shared with the parent, is replaced), and its copy of the own
  // part taken as its own.
  void set_up_child(Process& child, Thread& t, Registers& regs);
  // A fork child functracer lets go of (not followed, or no region of its own), its
  // instrumentation out, t stopped: the parent's region it inherited and its copy of
  // the own part are unmapped, and its SIGTRAP action is the program's again.
  void let_go_child(Process& child, Thread& t);
  // Detach, after everything was taken out (remove, instrumentation.h): the region
  // and the own part are unmapped and the program's SIGTRAP action given back, so that
  // a detach leaves nothing of the recorder behind but its code and a page of zeros
  // (the out-of-line areas stay, for the next attach to adopt).
  void unmap_for_detach(Process& p);
  // The real return address of t's recorded call whose return address was at slot
  // (popped from the ring's frames with those above it), or null.
  static RemoteAddr take_recorded_return(Thread& t, RemoteAddr slot);
  // Detach, every thread of p stopped: recording off, and a thread inside a
  // trampoline, the recorder or the return stub is stepped until it is out (or put
  // past the trap it was about to take), so that nothing traps once it runs alone.
  void settle_for_detach(Process& p);
  // Takes everything out (detach, an unfollowed child): the entries' original bytes,
  // recording off. Hooked return addresses are the shadow stacks' (instrumentation.cc).
  static void remove(Process& p);

  // The frame rules of p's modules, for the stack walks of the calls that record
  // their call stack: written into the half of the region's unwind area not in use,
  // then switched to. Call after the modules changed.
  void update_unwind(Process& p);

  // Sets the recorder up in p now (the first patch would), where it can be: p has an
  // out-of-line area and runs on its own memory. t is stopped at regs.
  // Also when calls are not recorded in the process (FT_FAST_PATH=0): the region then
  // only holds the guard.
  void prepare(Process& p, Thread& t, Registers& regs) {
    RecorderSpace& rs = p.space.recorder;
    if (!arch::host().recorder || rs.ready || rs.unavailable || rs.borrowed || rs.needs_region || p.space.areas.empty()) return;
    if (!set_up(p, t, regs, RemoteAddr())) rs.unavailable = true;
  }

  uint64_t patched() const { return patched_; }

 private:
  // patch's work, its writes queued in the open pass (plant_pass.h); an undone patch
  // is reported untraced when report_undone (no breakpoint can stand in for it then).
  bool queue_patch(Process& p, Thread& t, Registers& regs, const Module& m, const ElfSymbol& sym, RemoteAddr addr,
                   uint32_t fn_id, unsigned nargs, unsigned frames, SsolArea& area, std::string& reason,
                   bool report_undone);
  bool set_up(Process& p, Thread& t, Registers& regs, RemoteAddr fixed);
  // The hooked frames of t's ring, in the process's own part (recorder_abi.h).
  static RemoteAddr stack_of(const Thread& t);
  // Ring `ring`'s hooked frames in use, read from the process (empty when unreadable).
  static std::vector<ft_rec_frame> read_frames(Process& p, uint32_t ring);
  // The SIGTRAP action given back and the region (but for a page of zeros where its
  // header was) and the own part unmapped in p, t stopped.
  void unmap(Process& p, Thread& t);
  const std::vector<uint64_t>& image_targets(const Module& m) { return image_targets(m.elf); }
  arch::RecorderCode trampoline_layout() const {
    return arch::host().recorder->entry_trampoline(0, 0, 0, 0, {}, 0, 0, {}, tp_read_);
  }
  struct ImageTargets {
    std::weak_ptr<const ElfImage> image;
    std::vector<uint64_t> targets;
  };
  std::unordered_map<const ElfImage*, ImageTargets> targets_;
  UnwindRowCache unwind_rows_;
  bool map_code(Process& p, Thread& t, Registers& regs);
  // Where the stubs read fs:0, a thread whose thread pointer is not set yet (0: the
  // C library sets it up after the first instructions of an exec) is given null_tcb;
  // false when one of p's threads has none and cannot be given one.
  bool give_thread_pointers(Process& p, Thread& t, Registers& regs, std::string& reason);

  Injector& injector_;
  EventReporter& report_;
  TracerStats& stats_;
  bool wanted_ = false;
  std::string why_not_;
  arch::ThreadPointerRead tp_read_ = arch::ThreadPointerRead::kRegister;
  uint64_t patched_ = 0;
};

}  // namespace ft
