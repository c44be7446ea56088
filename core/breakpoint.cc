#include "core/breakpoint.h"

#include "arch/arch.h"

namespace ft {

Status apply_relocation(const RemoteMemory& mem, const Breakpoint& bp, Registers& regs) {
  const arch::Relocation& rel = bp.reloc;
  if (rel.kind == arch::Relocation::Kind::OutOfLine) {
    regs.set_ip(bp.slot);
    return {};
  }
  const arch::Emulation& e = rel.emulation;
  RemoteAddr target = e.target;
  switch (e.kind) {
    case arch::Emulation::Kind::SetIp:
      regs.set_ip(target);
      return {};
    case arch::Emulation::Kind::JumpMem: {
      auto v = mem.read_u64(e.mem);
      if (!v) return v.error();
      regs.set_ip(RemoteAddr(*v));
      return {};
    }
    case arch::Emulation::Kind::CallMem: {
      auto v = mem.read_u64(e.mem);
      if (!v) return v.error();
      target = RemoteAddr(*v);
      [[fallthrough]];
    }
    case arch::Emulation::Kind::Call: {
      const arch::CallConvention& cc = arch::host().call;
      if (cc.return_address == arch::CallConvention::ReturnAddress::LinkRegister) {
        regs.set(cc.link, e.return_addr.value());
      } else {
        RemoteAddr sp = regs.sp() - 8;
        if (auto s = mem.write_u64(sp, e.return_addr.value()); !s) return s;
        regs.set_sp(sp);
      }
      regs.set_ip(target);
      return {};
    }
  }
  return {};
}

}  // namespace ft
