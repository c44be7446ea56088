#include <fmt/format.h>

#include "arch/arch.h"
#include "arch/registers.h"

namespace ft {
namespace {

const arch::Traits& x86_64() { return arch::traits(arch::Arch::X86_64); }

// The field of a DWARF-numbered register (psABI figure 3.36), nullptr if none.
template <typename Regs>
auto field(Regs& r, int reg) -> decltype(&r.rax) {
  switch (reg) {
    case 0: return &r.rax;
    case 1: return &r.rdx;
    case 2: return &r.rcx;
    case 3: return &r.rbx;
    case 4: return &r.rsi;
    case 5: return &r.rdi;
    case 6: return &r.rbp;
    case 7: return &r.rsp;
    case 8: return &r.r8;
    case 9: return &r.r9;
    case 10: return &r.r10;
    case 11: return &r.r11;
    case 12: return &r.r12;
    case 13: return &r.r13;
    case 14: return &r.r14;
    case 15: return &r.r15;
    case 16: return &r.rip;
    case 49: return &r.eflags;  // rFLAGS
    case arch::kX86_64OrigRax: return &r.orig_rax;
    default: return nullptr;
  }
}

}  // namespace

RemoteAddr Registers::ip() const { return RemoteAddr(raw.rip); }
uint64_t Registers::thread_pointer() const { return raw.fs_base; }
void Registers::set_thread_pointer(uint64_t v) { raw.fs_base = v; }
void Registers::set_ip(RemoteAddr v) { raw.rip = v.value(); }
RemoteAddr Registers::sp() const { return RemoteAddr(raw.rsp); }
void Registers::set_sp(RemoteAddr v) { raw.rsp = v.value(); }
uint64_t Registers::ret() const { return get(x86_64().call.ret); }
void Registers::set_no_restart() { set(x86_64().syscall.restart, x86_64().syscall.no_restart); }

uint64_t Registers::arg(unsigned i) const {
  const auto& args = x86_64().call.args;
  return i < args.size() ? get(args[i]) : 0;
}

uint64_t Registers::get(int reg) const {
  const auto* f = field(raw, reg);
  return f ? *f : 0;
}

void Registers::set(int reg, uint64_t v) {
  if (auto* f = field(raw, reg)) *f = v;
}

std::string Registers::dump() const {
  return fmt::format("rip={:#x} rsp={:#x} rbp={:#x} rax={:#x} rdi={:#x} rsi={:#x} rdx={:#x} rcx={:#x}",
                     raw.rip, raw.rsp, raw.rbp, raw.rax, raw.rdi, raw.rsi, raw.rdx, raw.rcx);
}

}  // namespace ft
