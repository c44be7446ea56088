// Where code enters and leaves a function, seen from its bytes.
//
// Return addresses. A breakpoint at a function's entry is a call only when the word
// the architecture keeps the return address in is one: code can also be reached by a
// jump (a program's entry code such as Go's _rt0_amd64 or _rt0_amd64_linux, which
// start with argc at [sp]; hand-written assembly jumping between routines). A return
// address points just after a call instruction, so the bytes before it decode to a
// call that ends exactly there; or, for a signal handler the kernel entered, at the
// signal return trampoline (sa_restorer: glibc's and musl's __restore_rt, Go's
// runtime.sigreturn), whose code is the rt_sigreturn system call. A word that is
// neither is never taken for a return address, and the stack is then never written.
//
// Exits. Catching a return without writing the stack (Go's stacks move and are walked
// by its runtime, shadow stacks forbid it) means a breakpoint on every instruction
// that leaves the function: its returns, and its jumps to code outside it (tail
// calls). Found by decoding the body linearly over the symbol's size; bytes that do
// not decode end the walk (the exits found so far are kept, and `complete` says so).
// Conditional jumps out of the function and indirect jumps are not exits here: a
// conditional one may not be taken, an indirect one is most often a jump table
// inside the function. Frames they leave are found abandoned later, when the stack
// has gone past them.
//
// Pure code, no tracee access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ft::arch {

// How many bytes before and from a candidate return address is_return_address wants
// to see.
inline constexpr size_t kCallLookBehind = 16;
inline constexpr size_t kCallLookAhead = 16;

struct FunctionExits {
  std::vector<uint64_t> returns;     // run-time addresses of the return instructions
  std::vector<uint64_t> tail_jumps;  // of unconditional direct jumps out of the body
  bool complete = true;              // false: undecodable bytes ended the walk early
};

// `before`: the bytes that end at `addr` (up to kCallLookBehind; fewer near the start
// of a mapping); `at`: the bytes from `addr` on (up to kCallLookAhead). True when
// `before` ends with a call instruction or `at` is a signal return trampoline.
bool is_return_address_x86_64(std::span<const uint8_t> before, std::span<const uint8_t> at, uint64_t addr);
bool is_return_address_aarch64(std::span<const uint8_t> before, std::span<const uint8_t> at, uint64_t addr);

// `body`: the function's bytes (symbol address, symbol size) at run-time address entry.
FunctionExits function_exits_x86_64(std::span<const uint8_t> body, uint64_t entry);
FunctionExits function_exits_aarch64(std::span<const uint8_t> body, uint64_t entry);

}  // namespace ft::arch
