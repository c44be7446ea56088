// The arch-neutral result of relocating the instruction displaced by an entry
// breakpoint. An entry breakpoint replaces the first byte (x86-64: int3) or the first
// instruction (AArch64: brk) of a function. When the breakpoint is hit, the engine
// must make the tracee behave as if the displaced instruction had run and then
// continue, without a single-step and without removing the breakpoint (other threads
// must never run past a missing breakpoint). Two ways:
//
//  - Emulate: the instruction's effect is applied to the register set (and at most
//    one 8-byte stack write or read) by the engine; the thread resumes at the new ip.
//    Used for instructions whose effect depends on where they execute: calls (the
//    pushed return address), relative jumps, no-ops such as endbr64.
//  - OutOfLine: the instruction, re-encoded for the slot's address, runs from a slot
//    in the SSOL area and the slot ends in a jump back to the original next
//    instruction. The thread resumes at the slot.
//
// Instructions that cannot be handled safely are refused with a reason; the caller
// warns, naming the function, and does not plant the breakpoint.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/remote_addr.h"

namespace ft::arch {

// Effect of an emulated instruction. Addresses are absolute tracee addresses.
struct Emulation {
  enum class Kind {
    SetIp,       // ip = target (nop, endbr64, jmp rel, b)
    Call,        // x86-64: sp -= 8; [sp] = return_addr; ip = target. AArch64: x30 = return_addr; ip = target
    CallMem,     // like Call, but target = 8-byte value read at mem (call [rip+disp])
    JumpMem,     // ip = 8-byte value read at mem (jmp [rip+disp], e.g. PLT stubs)
  };
  Kind kind = Kind::SetIp;
  RemoteAddr target{};
  RemoteAddr return_addr{};
  RemoteAddr mem{};
};

struct Relocation {
  enum class Kind { Emulate, OutOfLine, Refuse };
  Kind kind = Kind::Refuse;
  unsigned insn_length = 0;            // length of the displaced instruction
  Emulation emulation;                 // Kind::Emulate
  std::vector<uint8_t> slot_code;      // Kind::OutOfLine: bytes for the slot, ending in a jump back
  std::string reason;                  // Kind::Refuse: why, in a few words ("call through register")
  std::string text;                    // disassembly of the displaced instruction, for -d logs
};

// Turn a partly filled Relocation (insn_length, text) into a refusal or an emulation.
inline Relocation refuse(Relocation r, std::string reason) {
  r.kind = Relocation::Kind::Refuse;
  r.reason = std::move(reason);
  r.emulation = {};
  r.slot_code.clear();
  return r;
}

inline Relocation emulate(Relocation r, Emulation e) {
  r.kind = Relocation::Kind::Emulate;
  r.emulation = e;
  return r;
}

// Largest slot_code any relocation produces; SSOL slots are at least this big.
inline constexpr size_t kMaxSlotCode = 64;
// How many code bytes the relocator wants to see from the breakpoint address.
inline constexpr size_t kMaxInsnBytes = 16;

// Relocate the instruction at `code` (bytes read from the tracee at insn_addr, at
// least the first instruction's worth; fewer than kMaxInsnBytes only near a mapping's
// end) for execution from slot_addr.
Relocation relocate_x86_64(std::span<const uint8_t> code, uint64_t insn_addr, uint64_t slot_addr);
Relocation relocate_aarch64(std::span<const uint8_t> code, uint64_t insn_addr, uint64_t slot_addr);

}  // namespace ft::arch
