// Whether a function's entry can be patched with a jump, and what the patch is.
//
// The breakpoint path costs one ptrace stop per call. The in-process path replaces
// the first instructions of a function (the patch window) by a `jmp rel32` to a
// per-function trampoline in the out-of-line area; the trampoline records the call,
// runs a relocated copy of the window's instructions and jumps back to the first
// instruction after the window. That is only correct when nothing else in the program
// can execute the window's bytes one by one, so the analysis here decides, on the
// function's whole body, whether it is provably safe:
//
//  - the window is whole instructions covering the jump, inside the function;
//  - no branch of the function (direct jmp/jcc/call/loop, decoded linearly over the
//    symbol's size), of its other parts (GCC's foo.cold) or from the caller's list of
//    known targets (exception landing pads, other symbols) lands inside the window;
//    the entry itself is fine: a branch to it runs the patch like a call does;
//  - an indirect jump makes the targets unknown and is refused, unless the code is
//    built for IBT (see arch/x86_64/entry_patch.cc), and bytes that do not decode are
//    refused: linear decoding can no longer be trusted to have seen every branch;
//  - every window instruction runs the same from the trampoline: RIP-relative operands
//    and relative jumps are re-encoded for the copy's address; calls (a return address
//    inside the trampoline breaks unwinding and exceptions), returns, traps, system
//    calls and privileged instructions are refused.
//
// What the analysis cannot see and the caller must ensure: no thread's pc inside the
// window when the patch is written (all threads stopped, pcs moved), and no code
// outside the given ranges jumping into the function's middle.
//
// Pure code, no tracee access: the caller reads the bytes and writes the patch.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ft::arch {

// Code whose branches are checked against the window too (foo.cold).
struct CodeRange {
  std::span<const uint8_t> bytes;
  uint64_t addr = 0;  // run-time address of bytes[0]
};

struct EntryPatchRequest {
  std::span<const uint8_t> function;   // the whole body: symbol address, symbol size
  uint64_t entry = 0;                  // run-time address of function[0]
  uint64_t trampoline = 0;             // where the jump at the entry goes
  uint64_t copy = 0;                   // where the relocated window will run
  std::span<const uint64_t> branch_targets;  // other known targets (landing pads, ...)
  std::span<const CodeRange> other_parts;    // other code of the function (.cold)
  // Where the copy of a kept instruction (EntryPatch::kept_relocated) runs: this many
  // bytes after the end of `relocated` at `copy` (the trampoline's layout decides).
  uint64_t kept_copy_gap = 0;
};

// Where a window instruction is in the relocated copy, as offsets from the entry and
// from the copy's start: a thread stopped at `from` when the patch is written goes on
// at `to`.
struct MovedPc {
  unsigned from = 0;
  unsigned to = 0;
  bool operator==(const MovedPc&) const = default;
};

struct EntryPatch {
  bool ok = false;
  std::string reason;  // !ok: why, in a few words, for `--stats -d`

  // ok: the window is [entry, entry + window_length). Instructions that must stay at
  // the entry (x86-64 endbr64, the landing pad of indirect calls under IBT) are kept:
  // the jump is written at entry + patch_offset.
  //
  // Where it can, the function's first instruction stays in place too (after an
  // endbr64): a kernel uprobe put on the entry by another tool (bpftrace, perf probe)
  // while the patch is there runs the file's instruction out of line and goes on at
  // the next one, which must then be the jump, not the middle of it; and removing the
  // uprobe writes the file's byte back over the entry, which must be the byte there.
  // Kept are only instructions that run the same before the recording as after it and
  // twice as once (the stop path runs them again from a copy, after undoing their
  // stack effect): push of a register, sub of a constant from rsp, test and cmp, a
  // mov or lea into a register no argument is passed in and that it does not read.
  unsigned patch_offset = 0;
  unsigned kept_length = 0;   // of that kept instruction (0: none); patch_offset includes it
  int64_t stack_delta = 0;    // bytes it moved the stack pointer down (push: 8)
  // With a kept instruction, for copy + relocated.size() + kept_copy_gap: the kept
  // instruction re-encoded, then a jump to `copy`. The stop path resumes there, with
  // the stack as at the entry.
  std::vector<uint8_t> kept_relocated;
  unsigned window_length = 0;
  std::vector<uint8_t> original;   // the bytes at entry + patch_offset the patch replaces
  std::vector<uint8_t> patch;      // same length: the jump to the trampoline, then padding
  std::vector<uint8_t> relocated;  // for `copy`: the window from patch_offset, re-encoded,
                                   // ending in a jump to entry + window_length
  std::vector<MovedPc> moved_pcs;  // every window instruction from patch_offset, in order

  uint64_t patch_addr(uint64_t entry) const { return entry + patch_offset; }
};

inline EntryPatch refuse_entry_patch(std::string reason) {
  EntryPatch p;
  p.reason = std::move(reason);
  return p;
}

EntryPatch plan_entry_patch_x86_64(const EntryPatchRequest& request);
EntryPatch plan_entry_patch_aarch64(const EntryPatchRequest& request);

// The targets of the direct branches and calls in `range` (and, as targets, the
// addresses its instructions compute: what is taken as an address may be jumped
// to), appended to out. Decoding stops at bytes that do not decode. For the branches
// into a function from elsewhere in its module (hand-written code: glibc's mempcpy
// jumps past memcpy's first instruction), which the analysis of the function alone
// cannot see: EntryPatchRequest::branch_targets.
void branch_targets_x86_64(const CodeRange& range, std::vector<uint64_t>& out);
void branch_targets_aarch64(const CodeRange& range, std::vector<uint64_t>& out);

}  // namespace ft::arch
