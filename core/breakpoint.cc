#include "core/breakpoint.h"

namespace ft {

Status apply_relocation(const RemoteMemory& mem, const Breakpoint& bp, Registers& regs) {
  const arch::Relocation& rel = bp.reloc;
  if (rel.kind == arch::Relocation::Kind::OutOfLine) {
    regs.set_ip(bp.slot);
    return {};
  }
  const arch::Emulation& e = rel.emulation;
  uint64_t target = e.target;
  switch (e.kind) {
    case arch::Emulation::Kind::SetIp:
      regs.set_ip(RemoteAddr(target));
      return {};
    case arch::Emulation::Kind::JumpMem: {
      auto v = mem.read_u64(RemoteAddr(e.mem));
      if (!v) return v.error();
      regs.set_ip(RemoteAddr(*v));
      return {};
    }
    case arch::Emulation::Kind::CallMem: {
      auto v = mem.read_u64(RemoteAddr(e.mem));
      if (!v) return v.error();
      target = *v;
      [[fallthrough]];
    }
    case arch::Emulation::Kind::Call: {
      RemoteAddr sp = regs.sp() - 8;
      if (auto s = mem.write_u64(sp, e.return_addr); !s) return s;
      regs.set_sp(sp);
      regs.set_ip(RemoteAddr(target));
      return {};
    }
  }
  return {};
}

}  // namespace ft
