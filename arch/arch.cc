#include "arch/arch.h"

#include <algorithm>

#include "arch/traits_table.h"

namespace ft::arch {
namespace {

constexpr const Traits* kAll[] = {&kX86_64Traits, &kAArch64Traits};

}  // namespace

std::vector<uint8_t> Traits::area_header(uint64_t syscall_offset) const {
  std::vector<uint8_t> h;
  h.reserve(syscall_offset + syscall.stub.size());
  while (h.size() + trap.size() <= syscall_offset) h.insert(h.end(), trap.begin(), trap.end());
  h.resize(syscall_offset, 0);
  h.insert(h.end(), syscall.stub.begin(), syscall.stub.end());
  return h;
}

bool Traits::is_area_header(std::span<const uint8_t> head, uint64_t syscall_offset) const {
  std::vector<uint8_t> want = area_header(syscall_offset);
  return head.size() >= want.size() && std::equal(want.begin(), want.end(), head.begin());
}

std::span<const Traits* const> all() { return kAll; }

const Traits& traits(Arch arch) {
  switch (arch) {
    case Arch::X86_64: return kX86_64Traits;
    case Arch::AArch64: return kAArch64Traits;
  }
  return kX86_64Traits;
}

const Traits* traits_for_machine(uint16_t elf_machine) {
  for (const Traits* t : kAll)
    if (t->elf_machine == elf_machine) return t;
  return nullptr;
}

const Traits& host() {
#if defined(__aarch64__)
  return kAArch64Traits;
#else
  return kX86_64Traits;
#endif
}

std::span<const uint8_t> breakpoint_bytes(Arch arch) { return traits(arch).trap; }
unsigned breakpoint_ip_advance(Arch arch) { return static_cast<unsigned>(traits(arch).trap_pc_advance); }

}  // namespace ft::arch
