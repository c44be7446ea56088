// RecorderSpace: what functracer keeps about the in-process recorder of one traced
// address space (core/recorder_abi.h, doc/internals.md §8b): where the shared region
// is in the process and in functracer, the recorder's code, the functions whose entry
// is patched to reach it, and which thread each ring belongs to.
//
// The region is a memfd the process maps shared and functracer maps too. A fork child
// inherits it, shared, with a private copy of the own part beside it (the hooked
// frames; recorder_abi.h) whose first page is wiped on fork: a child records nothing
// in a region that is not its own, whether functracer is there or not. A followed
// child gets a region of its own at the same address before it runs; an unfollowed
// one loses the patches with the rest of the instrumentation, and the inherited region
// is unmapped in it. A vfork child shares its parent's (it runs on the parent's
// memory) but never gets a ring.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/remote_addr.h"
#include "core/recorder_abi.h"
#include "core/recorder_region.h"

namespace ft {

struct Module;

// functracer's own mapping of a region (unmapped when the last owner lets go).
class RegionMapping {
 public:
  RegionMapping(void* base, uint64_t size) : base_(base), size_(size) {}
  ~RegionMapping();
  RegionMapping(const RegionMapping&) = delete;
  RegionMapping& operator=(const RegionMapping&) = delete;
  void* base() const { return base_; }
  uint64_t size() const { return size_; }

 private:
  void* base_;
  uint64_t size_;
};

// A function whose first instructions jump to its trampoline.
struct EntryPatchSite {
  RemoteAddr entry;              // the function's entry
  RemoteAddr at;                 // where the jump is (the entry, or after the instructions
                                 // kept there: an endbr64, the first one; arch/entry_patch.h)
  std::vector<uint8_t> original; // the bytes the jump replaced
  RemoteAddr trampoline;
  RemoteAddr slow_trap;          // the trampoline's trap of the stop path
  RemoteAddr stop_resume;        // where the stop path resumes the thread (a kept first
                                 // instruction's copy, else the window's)
  RemoteAddr end;                // one past the trampoline's code
  // The relocated first instructions, in the trampoline: where the copy starts and,
  // for each of the window's instructions, its offset from the entry and its copy's
  // offset from `copy` (a thread inside the window at the patch is moved to the copy;
  // one inside the copy at the detach, back).
  RemoteAddr copy;
  std::vector<std::pair<uint32_t, uint32_t>> moved_pcs;
  uint32_t fn = 0;               // FunctionInfo id
  const Module* module = nullptr;
};

struct RecorderSpace {
  // Set up (region, code) in this address space, or refused for good.
  bool ready = false;
  bool unavailable = false;
  // A vfork child on its parent's memory: its threads never get a ring.
  bool borrowed = false;
  // A fork child: the parent's region is not in its memory; it needs its own at
  // `region` before it runs.
  bool needs_region = false;
  bool walks = false;  // some patched entry records its call stack: the frame rules are kept
  RemoteAddr region;       // in the process
  RemoteAddr own;          // the own part (struct ft_rec_own), in the process: private memory
  uint64_t region_size = 0;
  std::shared_ptr<RegionMapping> mapping;  // in functracer
  std::optional<RecorderRegion> rings;     // on mapping
  RemoteAddr code;         // the recorder image
  RemoteAddr entry_fn, return_fn;
  RemoteAddr return_stub, return_trap;
  uint64_t code_size = 0;  // the recorder image's bytes at `code`
  // A word of zeros after the image: the thread control block a thread without a
  // thread pointer yet is given where the stubs read the word it points at
  // (ThreadPointerRead::kSelfWord), so that they find no ring instead of faulting.
  RemoteAddr null_tcb;
  // Where the recorder's functions return to: in the return stub, and at this offset in
  // every entry trampoline. A signal that comes while a thread runs them is held until
  // they return, into signal_trap (FastPath::hold_signal).
  RemoteAddr return_after_call;
  uint64_t entry_after_call = 0;
  RemoteAddr signal_trap;
  // The program's SIGTRAP handler while attached (survival.h): its entry and its
  // action's restorer, after the signal trap; whether it is installed; return
  // addresses noted in the guard's table since it was last rebuilt.
  RemoteAddr trap_handler, trap_restorer;
  bool guard_installed = false;
  // A fork child's: the program's SIGTRAP action its parent's handler kept (the child
  // inherits the handler as its action; its own handler forwards to this one).
  std::optional<ft_rec_kaction> inherited_action;
  uint64_t returns_noted = 0;
  uint64_t unguarded = 0;  // traps the full trap table could not take
  std::vector<uint32_t> trap_slots;  // the trap table's entries functracer filled (survival.cc)
  // Changed through add_patch, remove_patch, clear_patches and forget_module, which
  // keep the indexes right.
  std::vector<EntryPatchSite> patches;
  std::unordered_map<RemoteAddr, size_t> patch_by_trap;   // slow_trap -> patches index
  std::unordered_map<RemoteAddr, size_t> patch_by_entry;  // entry -> patches index
  std::map<RemoteAddr, size_t> patch_by_at;               // at -> patches index (windows in order)
  // Rings in use: ring -> (thread, its thread pointer).
  struct Owner {
    pid_t tid = 0;
    uint64_t tp = 0;
    uint64_t lost_seen = 0;  // lost events already reported
  };
  std::unordered_map<uint32_t, Owner> owners;

  // The patch of the function whose entry is at addr, or nullptr.
  const EntryPatchSite* patch_at_entry(RemoteAddr entry) const {
    auto it = patch_by_entry.find(entry);
    return it == patch_by_entry.end() ? nullptr : &patches[it->second];
  }
  // The patch whose jump covers a byte of [a, a + len) (the bytes it replaced), or nullptr.
  const EntryPatchSite* patch_over(RemoteAddr a, size_t len) const {
    auto it = patch_by_at.lower_bound(a + static_cast<int64_t>(len));
    if (it == patch_by_at.begin()) return nullptr;
    const EntryPatchSite& s = patches[std::prev(it)->second];
    return s.at + static_cast<int64_t>(s.original.size()) > a ? &s : nullptr;
  }
  void add_patch(EntryPatchSite s) {
    patch_by_trap[s.slow_trap] = patches.size();
    patch_by_entry[s.entry] = patches.size();
    patch_by_at[s.at] = patches.size();
    patches.push_back(std::move(s));
  }
  // The patch at `at` never was written (PlantPass): forgotten.
  void remove_patch(RemoteAddr at) {
    std::erase_if(patches, [at](const EntryPatchSite& s) { return s.at == at; });
    reindex();
  }
  void clear_patches() {
    patches.clear();
    reindex();
  }
  // A module went away: its patches with it (never written to again).
  void forget_module(const Module* m) {
    std::erase_if(patches, [m](const EntryPatchSite& s) { return s.module == m; });
    reindex();
  }
  void reindex() {
    patch_by_trap.clear();
    patch_by_entry.clear();
    patch_by_at.clear();
    for (size_t i = 0; i < patches.size(); ++i) {
      patch_by_trap[patches[i].slow_trap] = i;
      patch_by_entry[patches[i].entry] = i;
      patch_by_at[patches[i].at] = i;
    }
  }
  bool is_return_stub(RemoteAddr a) const { return !return_stub.null() && a == return_stub; }
  bool in_recorder_code(RemoteAddr pc) const { return !code.null() && pc >= code && pc < code + static_cast<int64_t>(code_size); }
  ft_rec_header* header() const { return rings ? rings->header() : nullptr; }
};

}  // namespace ft
