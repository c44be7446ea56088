#include <fmt/format.h>

#include "core/registers.h"

namespace ft {

uint64_t Registers::ip() const { return raw.rip; }
void Registers::set_ip(uint64_t v) { raw.rip = v; }
uint64_t Registers::sp() const { return raw.rsp; }
void Registers::set_sp(uint64_t v) { raw.rsp = v; }
uint64_t Registers::ret() const { return raw.rax; }
void Registers::set_no_restart() { raw.orig_rax = static_cast<unsigned long long>(-1); }

uint64_t Registers::arg(unsigned i) const {
  switch (i) {
    case 0: return raw.rdi;
    case 1: return raw.rsi;
    case 2: return raw.rdx;
    case 3: return raw.rcx;
    case 4: return raw.r8;
    case 5: return raw.r9;
    default: return 0;
  }
}

std::string Registers::dump() const {
  return fmt::format("rip={:#x} rsp={:#x} rbp={:#x} rax={:#x} rdi={:#x} rsi={:#x} rdx={:#x} rcx={:#x}",
                     raw.rip, raw.rsp, raw.rbp, raw.rax, raw.rdi, raw.rsi, raw.rdx, raw.rcx);
}

}  // namespace ft
