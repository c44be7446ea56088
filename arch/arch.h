// The one interface to instruction-set and ABI knowledge. Everything the engine and
// the ELF reader need to know about an architecture is a field of its Traits: the trap
// instruction and where the pc is when a trap is reported, the system call and
// function call conventions, the code functracer writes into the tracee (the header
// of an out-of-line area, the stub of returns handled in the process), PLT stub
// decoding, the relocator, the entry patch analysis and the parameter registers of
// the C calling convention.
//
// Why a table of constants and function pointers rather than an abstract class: the
// description of an architecture is data (byte strings, register numbers, offsets)
// with a few pure functions; a constant table per architecture (arch/<arch>/traits.cc)
// is all of it, is read without indirection through an object, and can be compared
// across architectures in tests. Every architecture is compiled in every build, so an
// AArch64 table exists on an x86-64 host and its code is unit-tested there.
//
// Registers are named by their DWARF number in the architecture's psABI (x86-64: rax 0,
// rdx 1, rcx 2, rbx 3, rsi 4, rdi 5, rbp 6, rsp 7, r8..r15 8..15, rip 16; AArch64: x0..x30
// 0..30, sp 31), so a convention is plain numbers that ft::Registers (arch/registers.h)
// reads and writes. Registers DWARF does not number have architecture-local numbers
// from kFirstPrivateReg on.
//
// Nothing here includes core or plugin headers: arch depends on common/ only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "arch/call_sites.h"
#include "arch/calling_convention.h"
#include "arch/entry_patch.h"
#include "arch/plt.h"
#include "arch/relocation.h"
#include "arch/recorder_stubs.h"
#include "arch/return_stub.h"
#include "common/remote_addr.h"

namespace ft::arch {

enum class Arch : uint8_t { X86_64, AArch64 };

using Reg = int16_t;
inline constexpr Reg kNoReg = -1;
inline constexpr Reg kFirstPrivateReg = 1000;
inline constexpr Reg kX86_64OrigRax = kFirstPrivateReg;  // the system call number at entry

// The Linux system call convention, for system calls functracer injects.
struct SyscallConvention {
  Reg number;                // the system call number (x86-64 rax, AArch64 x8)
  std::array<Reg, 6> args;   // arguments 0..5
  Reg ret;                   // the result, -errno on failure
  // The register that, set to no_restart, keeps a thread stopped inside a system call
  // from restarting it when it resumes somewhere else (x86-64 orig_rax = -1). kNoReg:
  // the kernel keeps it elsewhere (AArch64: the NT_ARM_SYSTEM_CALL register set).
  Reg restart;
  uint64_t no_restart;
  // `syscall; trap` (x86-64 `syscall; int3`, AArch64 `svc #0; brk #0`): the stub the
  // thread is pointed at; the trap stops it with the result in ret.
  std::span<const uint8_t> stub;
  size_t insn_size;          // bytes of the system call instruction alone
};

// Calling a function of the tracee from functracer (IFUNC resolvers, ...).
struct CallConvention {
  enum class ReturnAddress : uint8_t {
    Pushed,        // x86-64: at [sp] when the callee starts, sp + 8 16-byte aligned
    LinkRegister,  // AArch64: in x30, sp 16-byte aligned
  };
  std::array<Reg, 6> args;   // integer arguments 0..5
  Reg ret;                   // integer result
  Reg ret2;                  // second half of a two-register result (rdx, x1)
  // Zeroed before the call (x86-64: al counts the vector registers of a variadic call).
  Reg zero;
  ReturnAddress return_address;
  Reg link;                  // LinkRegister: the register that holds it
  uint64_t stack_align;      // of sp at the call

  // The sp the callee starts with: 256 bytes below the interrupted code's sp (past
  // any red zone: x86-64 has 128 bytes), aligned; with ReturnAddress::Pushed the
  // return address goes to the 8 bytes at the result.
  uint64_t call_sp(uint64_t sp) const {
    uint64_t below = (sp - 256) & ~(stack_align - 1);
    return return_address == ReturnAddress::Pushed ? below - 8 : below;
  }
};

// The ELF relocation types a PLT stub's GOT slot carries.
struct PltRelocations {
  uint32_t jump_slot, glob_dat, irelative;
};

struct Traits {
  Arch arch;
  std::string_view name;         // as in trace headers: "x86_64", "aarch64"
  std::string_view title;        // for people: "x86-64", "AArch64"
  uint16_t elf_machine;          // e_machine: EM_X86_64 (62), EM_AARCH64 (183)

  // The breakpoint instruction, and how far past it the pc is when its trap is
  // reported (x86-64 int3: 1, the trap follows the instruction; AArch64 brk: 0).
  std::span<const uint8_t> trap;
  uint64_t trap_pc_advance;

  // DWARF numbers of the stack pointer and the frame pointer, as call frame
  // information names them (x86-64 rsp 7, rbp 6; AArch64 sp 31, x29 29).
  Reg stack_pointer;
  Reg frame_pointer;
  // The register Go's internal ABI keeps the current goroutine (its g) in: x86-64 r14,
  // AArch64 x28 (the Go internal ABI specification, "Architecture specifics").
  Reg go_g;
  // The integer argument registers of Go's internal ABI, in order (x86-64: rax rbx rcx
  // rdi rsi r8 r9 r10 r11; AArch64: x0..x15).
  std::span<const Reg> go_args;

  SyscallConvention syscall;
  CallConvention call;

  // Returns handled in the process; nullptr: the architecture has no stub (yet).
  const ReturnStub* return_stub;
  // The in-process recorder's entry trampolines and return stub (arch/recorder_stubs.h);
  // nullptr: the architecture has none (yet), every entry takes a stop.
  const RecorderStubs* recorder;

  // PLT stubs: relocation types, the bytes of the lazy .plt's header (PLT0), a stub's
  // size in the relocation-order fallback, the largest stub, and the decoder.
  PltRelocations plt_relocations;
  uint64_t plt_header_size;
  uint64_t plt_entry_size;
  uint64_t plt_max_stub_size;
  PltDecoder decode_plt;

  // The instruction under an entry breakpoint (arch/relocation.h).
  Relocation (*relocate)(std::span<const uint8_t> code, uint64_t insn_addr, uint64_t slot_addr);
  Relocation relocate_at(std::span<const uint8_t> code, RemoteAddr insn, RemoteAddr slot) const {
    return relocate(code, insn.value(), slot.value());
  }

  // Whether a function's entry can be replaced by a jump to a trampoline, and the
  // patch and the relocated instructions if so (arch/entry_patch.h).
  EntryPatch (*plan_entry_patch)(const EntryPatchRequest& request);
  void (*branch_targets)(const CodeRange& range, std::vector<uint64_t>& out);

  // Whether a word is a return address, and the instructions that leave a function
  // (arch/call_sites.h).
  bool (*is_return_address)(std::span<const uint8_t> before, std::span<const uint8_t> at, uint64_t addr);
  FunctionExits (*function_exits)(std::span<const uint8_t> body, uint64_t entry);

  // Parameter registers of the platform C calling convention (arch/calling_convention.h).
  ArgRegisters (*arg_registers)(const FunctionType& fn);

  // The trap's own address, from the pc reported at its stop.
  RemoteAddr trap_address(RemoteAddr pc_at_stop) const {
    return pc_at_stop - static_cast<int64_t>(trap_pc_advance);
  }
  // The pc reported when the trap at `trap_addr` stops the thread.
  RemoteAddr pc_after_trap(RemoteAddr trap_addr) const {
    return trap_addr + static_cast<int64_t>(trap_pc_advance);
  }
  // The pc reported when a system call stub at `stub` has run its system call.
  RemoteAddr pc_after_syscall_stub(RemoteAddr stub) const {
    return pc_after_trap(stub + static_cast<int64_t>(syscall.insn_size));
  }

  // The header of an out-of-line area: traps from offset 0 up to syscall_offset (the
  // shared return trampoline and the return address of functions functracer calls
  // live there), then the system call stub.
  std::vector<uint8_t> area_header(uint64_t syscall_offset) const;
  // Does `head` (at least syscall_offset + the stub's size bytes) start with that header?
  bool is_area_header(std::span<const uint8_t> head, uint64_t syscall_offset) const;
};

// Every architecture, each compiled in every build.
std::span<const Traits* const> all();
const Traits& traits(Arch arch);
// The architecture of an ELF file's e_machine; nullptr if functracer knows none.
const Traits* traits_for_machine(uint16_t elf_machine);
// The architecture functracer runs on and traces.
const Traits& host();

// The trap's bytes and trap_pc_advance of traits(arch), for callers that ask by enum.
std::span<const uint8_t> breakpoint_bytes(Arch arch);
unsigned breakpoint_ip_advance(Arch arch);

}  // namespace ft::arch
