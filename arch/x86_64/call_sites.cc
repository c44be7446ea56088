#include "arch/call_sites.h"

#include <algorithm>

#include "arch/x86_64/decoding.h"

namespace ft::arch {

using namespace x86;

namespace {

// rt_sigreturn (15): `mov $15, %rax; syscall` (glibc, Go) or `mov $15, %eax; syscall`.
bool is_sigreturn(std::span<const uint8_t> at) {
  static constexpr uint8_t kMovRax[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
  static constexpr uint8_t kMovEax[] = {0xb8, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
  auto starts = [&](std::span<const uint8_t> p) {
    return at.size() >= p.size() && std::equal(p.begin(), p.end(), at.begin());
  };
  return starts(kMovRax) || starts(kMovEax);
}

}  // namespace

bool is_return_address_x86_64(std::span<const uint8_t> before, std::span<const uint8_t> at, uint64_t addr) {
  if (is_sigreturn(at)) return true;
  const Decoder& dec = decoder();
  // A call is 2 bytes (call *%rax) to 15 (prefixes); every length is tried, shortest
  // first: the bytes before a short call may themselves look like a longer one's start.
  for (size_t len = 2; len <= before.size() && len <= kMaxX86InsnLength; ++len) {
    auto code = before.subspan(before.size() - len);
    InsnPtr insn = dec.decode(code, addr - len);
    if (insn && insn->size == len && in_group(*insn, CS_GRP_CALL)) return true;
  }
  return false;
}

FunctionExits function_exits_x86_64(std::span<const uint8_t> body, uint64_t entry) {
  FunctionExits out;
  const Decoder& dec = decoder();
  InsnPtr insn(cs_malloc(dec.handle()));
  if (insn == nullptr) {
    out.complete = false;
    return out;
  }
  const uint8_t* code = body.data();
  size_t size = body.size();
  uint64_t addr = entry;
  const uint64_t end = entry + body.size();
  while (size > 0) {
    uint64_t at = addr;
    if (!cs_disasm_iter(dec.handle(), &code, &size, &addr, insn.get())) {
      out.complete = false;
      break;
    }
    const cs_insn& in = *insn;
    if (in_group(in, CS_GRP_RET)) {
      out.returns.push_back(at);
      continue;
    }
    if (in.id != X86_INS_JMP) continue;
    const cs_x86& x = in.detail->x86;
    if (x.op_count == 1 && x.operands[0].type == X86_OP_IMM) {
      auto target = static_cast<uint64_t>(x.operands[0].imm);
      if (target < entry || target >= end) out.tail_jumps.push_back(at);
    }
  }
  return out;
}

}  // namespace ft::arch
