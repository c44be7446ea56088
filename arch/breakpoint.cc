// Breakpoint instruction bytes and the ip reported when one is hit.
#include <array>

#include "arch/relocation.h"

namespace ft::arch {

namespace {

// x86-64: int3. The trap is reported after the byte has executed, so ip = bp + 1.
constexpr std::array<uint8_t, 1> kX86Breakpoint = {0xcc};
// AArch64: brk #0 (0xd4200000, little-endian). The exception reports pc = bp.
constexpr std::array<uint8_t, 4> kAArch64Breakpoint = {0x00, 0x00, 0x20, 0xd4};

}  // namespace

std::span<const uint8_t> breakpoint_bytes(Arch arch) {
  switch (arch) {
    case Arch::X86_64:
      return kX86Breakpoint;
    case Arch::AArch64:
      return kAArch64Breakpoint;
  }
  return {};
}

unsigned breakpoint_ip_advance(Arch arch) {
  switch (arch) {
    case Arch::X86_64:
      return 1;
    case Arch::AArch64:
      return 0;
  }
  return 0;
}

}  // namespace ft::arch
