// The arch interface (arch/arch.h): every architecture's table, checked against an
// independent decoder (Capstone) and against the PLT relocations of the fixture
// binaries (tests/unit/fixtures: x86-64 built natively, AArch64 cross-built when clang
// and ld.lld are there).
#include <capstone/capstone.h>
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "arch/arch.h"
#include "arch/registers.h"

namespace ft::arch {
namespace {

using Bytes = std::vector<uint8_t>;

// Mnemonics of the instructions in code, decoded by Capstone.
std::vector<std::string> disassemble(Arch arch, std::span<const uint8_t> code) {
  csh h;
  cs_err err = arch == Arch::X86_64 ? cs_open(CS_ARCH_X86, CS_MODE_64, &h)
                                    : cs_open(CS_ARCH_ARM64, CS_MODE_LITTLE_ENDIAN, &h);
  EXPECT_EQ(err, CS_ERR_OK);
  if (err != CS_ERR_OK) return {};
  cs_insn* insn = nullptr;
  size_t n = cs_disasm(h, code.data(), code.size(), 0x1000, 0, &insn);
  std::vector<std::string> out;
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    out.emplace_back(insn[i].mnemonic);
    total += insn[i].size;
  }
  EXPECT_EQ(total, code.size()) << "undecodable bytes";
  cs_free(insn, n);
  cs_close(&h);
  return out;
}

TEST(Arch, EveryArchitectureIsListedAndFoundByMachine) {
  ASSERT_EQ(all().size(), 2u);
  for (const Traits* t : all()) {
    EXPECT_EQ(&traits(t->arch), t);
    EXPECT_EQ(traits_for_machine(t->elf_machine), t);
    EXPECT_NE(t->decode_plt, nullptr);
    EXPECT_NE(t->relocate, nullptr);
    EXPECT_NE(t->arg_registers, nullptr);
  }
  EXPECT_EQ(traits(Arch::X86_64).elf_machine, EM_X86_64);
  EXPECT_EQ(traits(Arch::X86_64).name, "x86_64");
  EXPECT_EQ(traits(Arch::AArch64).elf_machine, EM_AARCH64);
  EXPECT_EQ(traits(Arch::AArch64).name, "aarch64");
  EXPECT_EQ(traits_for_machine(EM_386), nullptr);
  EXPECT_EQ(&host(), &traits(Arch::X86_64));
}

TEST(Arch, TrapBytesAndTrapAddress) {
  const Traits& x = traits(Arch::X86_64);
  EXPECT_EQ(Bytes(x.trap.begin(), x.trap.end()), Bytes({0xcc}));
  EXPECT_EQ(disassemble(Arch::X86_64, x.trap), std::vector<std::string>({"int3"}));
  // int3 traps after it has executed: the reported pc is one past the trap.
  EXPECT_EQ(x.trap_address(RemoteAddr(0x401001)), RemoteAddr(0x401000));
  EXPECT_EQ(x.pc_after_trap(RemoteAddr(0x401000)), RemoteAddr(0x401001));

  const Traits& a = traits(Arch::AArch64);
  EXPECT_EQ(Bytes(a.trap.begin(), a.trap.end()), Bytes({0x00, 0x00, 0x20, 0xd4}));
  EXPECT_EQ(disassemble(Arch::AArch64, a.trap), std::vector<std::string>({"brk"}));
  // brk reports its own address.
  EXPECT_EQ(a.trap_address(RemoteAddr(0x401000)), RemoteAddr(0x401000));
  EXPECT_EQ(a.pc_after_trap(RemoteAddr(0x401000)), RemoteAddr(0x401000));

  // The old by-enum accessors agree.
  for (const Traits* t : all()) {
    auto b = breakpoint_bytes(t->arch);
    EXPECT_EQ(Bytes(b.begin(), b.end()), Bytes(t->trap.begin(), t->trap.end()));
    EXPECT_EQ(breakpoint_ip_advance(t->arch), t->trap_pc_advance);
  }
}

TEST(Arch, SyscallStubIsASystemCallThenTheTrap) {
  const Traits& x = traits(Arch::X86_64);
  EXPECT_EQ(disassemble(Arch::X86_64, x.syscall.stub), std::vector<std::string>({"syscall", "int3"}));
  EXPECT_EQ(x.pc_after_syscall_stub(RemoteAddr(0x7000)), RemoteAddr(0x7003));
  const Traits& a = traits(Arch::AArch64);
  EXPECT_EQ(disassemble(Arch::AArch64, a.syscall.stub), std::vector<std::string>({"svc", "brk"}));
  EXPECT_EQ(a.pc_after_syscall_stub(RemoteAddr(0x7000)), RemoteAddr(0x7004));
  for (const Traits* t : all()) {
    SCOPED_TRACE(t->name);
    // The stub's tail is the trap.
    auto tail = t->syscall.stub.subspan(t->syscall.insn_size);
    EXPECT_EQ(Bytes(tail.begin(), tail.end()), Bytes(t->trap.begin(), t->trap.end()));
  }
}

TEST(Arch, SyscallAndCallRegisters) {
  // x86-64: nr in rax, arguments rdi rsi rdx r10 r8 r9 (DWARF 5 4 1 10 8 9), as
  // Registers reads them by number.
  const Traits& x = traits(Arch::X86_64);
  Registers r;
  r.raw.rax = 1;
  r.raw.rdi = 2;
  r.raw.rsi = 3;
  r.raw.rdx = 4;
  r.raw.r10 = 5;
  r.raw.r8 = 6;
  r.raw.r9 = 7;
  r.raw.rcx = 8;
  EXPECT_EQ(r.get(x.syscall.number), 1u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(r.get(x.syscall.args[i]), i + 2) << i;
  // The function call convention's arguments are what Registers::arg() reads.
  for (unsigned i = 0; i < 6; ++i) EXPECT_EQ(r.get(x.call.args[i]), r.arg(i)) << i;
  EXPECT_EQ(r.get(x.syscall.ret), r.ret());
  r.set(x.syscall.restart, x.syscall.no_restart);
  EXPECT_EQ(r.raw.orig_rax, ~0ull);
  r.set(x.call.zero, 0);
  EXPECT_EQ(r.raw.rax, 0u);
  r.set(16, 0x1234);  // rip
  EXPECT_EQ(r.ip(), RemoteAddr(0x1234));
  r.raw.rsp = 0x7ff0;
  r.raw.rbp = 0x7ff8;
  EXPECT_EQ(r.get(x.stack_pointer), r.sp().value());
  EXPECT_EQ(r.get(x.frame_pointer), 0x7ff8u);
  EXPECT_EQ(r.get(x.call.ret2), r.raw.rdx);

  // A call: below the red zone, sp + 8 16-byte aligned at the callee's first instruction.
  EXPECT_EQ(x.call.return_address, CallConvention::ReturnAddress::Pushed);
  for (uint64_t sp : {0x7ffc0000ull, 0x7ffc0008ull, 0x7ffc0001ull}) {
    uint64_t at = x.call.call_sp(sp);
    EXPECT_EQ((at + 8) % 16, 0u);
    EXPECT_LE(at, sp - 128 - 8);
  }
  EXPECT_EQ(x.call.call_sp(0x7ffc0000), ((0x7ffc0000ull - 256) & ~15ull) - 8);

  const Traits& a = traits(Arch::AArch64);
  EXPECT_EQ(a.syscall.number, 8);
  EXPECT_EQ(a.syscall.args[0], 0);
  EXPECT_EQ(a.call.return_address, CallConvention::ReturnAddress::LinkRegister);
  EXPECT_EQ(a.call.link, 30);
  EXPECT_EQ(a.stack_pointer, 31);
  EXPECT_EQ(a.frame_pointer, 29);
  EXPECT_EQ(a.call.call_sp(0x7ffc0008) % 16, 0u);
}

TEST(Arch, AreaHeaderIsTrapsThenTheSyscallStub) {
  // The x86-64 header functracer has always written: int3 at the trampoline (0) and the
  // call-return (8), `syscall; int3` at 16.
  const Traits& x = traits(Arch::X86_64);
  Bytes h = x.area_header(16);
  const Bytes want = {0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
                     0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0x0f, 0x05, 0xcc};
  EXPECT_EQ(h, want);
  EXPECT_TRUE(x.is_area_header(h, 16));
  Bytes longer = h;
  longer.resize(48, 0x11);
  EXPECT_TRUE(x.is_area_header(longer, 16));
  Bytes bad = h;
  bad[8] = 0x90;
  EXPECT_FALSE(x.is_area_header(bad, 16));
  EXPECT_FALSE(x.is_area_header(std::span(h).first(10), 16));

  const Traits& a = traits(Arch::AArch64);
  Bytes ah = a.area_header(16);
  ASSERT_EQ(ah.size(), 24u);
  EXPECT_EQ(disassemble(Arch::AArch64, ah),
            std::vector<std::string>({"brk", "brk", "brk", "brk", "svc", "brk"}));
  EXPECT_FALSE(a.is_area_header(h, 16));
}

TEST(Arch, ReturnStubOnlyOnX86_64) {
  const ReturnStub* s = traits(Arch::X86_64).return_stub;
  ASSERT_NE(s, nullptr);
  Bytes code(s->size);
  s->write(code, 0x1000, 0x2000);
  auto m = disassemble(Arch::X86_64, code);
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.back(), "int3");
  EXPECT_EQ(code[s->slow_trap_offset], 0xcc);
  EXPECT_EQ(traits(Arch::AArch64).return_stub, nullptr);
}

// ---------------------------------------------------------------------------------
// PLT decoding on hand-assembled stubs

// The (stub address, GOT slot) pairs the decoder of arch finds in code at base.
std::vector<std::pair<uint64_t, uint64_t>> decode(Arch arch, const Bytes& code, uint64_t base,
                                                  const std::set<uint64_t>& slots) {
  std::vector<PltStub> out;
  traits(arch).decode_plt(code, base, [&](uint64_t a) { return slots.count(a) != 0; }, out);
  std::vector<std::pair<uint64_t, uint64_t>> pairs;
  for (const PltStub& s : out) pairs.emplace_back(s.addr, s.got_slot);
  return pairs;
}

using Pairs = std::vector<std::pair<uint64_t, uint64_t>>;

TEST(ArchPlt, X86_64StubsWithAndWithoutEndbr) {
  // At 0x1000: endbr64; bnd jmp *0x2ff2(%rip) -> slot 0x4000; nop padding.
  // At 0x1010: jmp *0x2ff2(%rip) -> slot 0x4008 (plain .plt.got style).
  Bytes code = {0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25, 0xf5, 0x2f, 0x00, 0x00, 0x0f, 0x1f, 0x44, 0x00, 0x00,
                0xff, 0x25, 0xf2, 0x2f, 0x00, 0x00, 0x66, 0x90};
  EXPECT_EQ(decode(Arch::X86_64, code, 0x1000, {0x4000, 0x4008}), Pairs({{0x1000, 0x4000}, {0x1010, 0x4008}}));
  // A jump through an unknown slot is no stub.
  EXPECT_EQ(decode(Arch::X86_64, code, 0x1000, {0x4008}), Pairs({{0x1010, 0x4008}}));
}

TEST(ArchPlt, AArch64StubsWithAndWithoutBti) {
  // At 0x10000: bti c; adrp x16, 0x20000; ldr x17, [x16, #0x18]; add; br x17
  // At 0x10020: adrp x16, 0x20000; ldr x17, [x16, #0x20]; add; br x17
  auto le = [](Bytes& b, uint32_t w) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(w >> (8 * i)));
  };
  auto adrp_x16 = [](uint64_t pc, uint64_t target) {
    uint64_t pages = ((target & ~0xfffull) - (pc & ~0xfffull)) >> 12;
    return 0x90000010u | static_cast<uint32_t>((pages & 3) << 29) | static_cast<uint32_t>(((pages >> 2) & 0x7ffff) << 5);
  };
  auto ldr_x17 = [](uint32_t off) { return 0xf9400211u | ((off / 8) << 10); };
  Bytes code;
  le(code, 0xd503245f);  // bti c
  le(code, adrp_x16(0x10004, 0x20000));
  le(code, ldr_x17(0x18));
  le(code, 0x91006210);  // add x16, x16, #0x18
  le(code, 0xd61f0220);  // br x17
  le(code, 0xd503201f);  // nop
  le(code, 0xd503201f);
  le(code, 0xd503201f);
  le(code, adrp_x16(0x10020, 0x20000));
  le(code, ldr_x17(0x20));
  le(code, 0x91008210);  // add x16, x16, #0x20
  le(code, 0xd61f0220);
  EXPECT_EQ(disassemble(Arch::AArch64, std::span(code).subspan(4, 8)), std::vector<std::string>({"adrp", "ldr"}));
  EXPECT_EQ(decode(Arch::AArch64, code, 0x10000, {0x20018, 0x20020}),
            Pairs({{0x10000, 0x20018}, {0x10020, 0x20020}}));
  EXPECT_EQ(decode(Arch::AArch64, code, 0x10000, {0x20020}), Pairs({{0x10020, 0x20020}}));
}

// ---------------------------------------------------------------------------------
// PLT decoding of the fixture binaries: every JUMP_SLOT relocation of .rela.plt has
// exactly one decoded stub in the PLT sections, and every decoded stub is in one.

std::string fixture(const std::string& name) {
  const char* root = std::getenv("FT_BUILD_ROOT");
  return std::string(root != nullptr ? root : ".") + "/tests/unit/fixtures/" + name;
}

struct PltCheck {
  bool opened = false;
  uint16_t machine = 0;
  std::set<uint64_t> jump_slots;     // .rela.plt JUMP_SLOT offsets
  std::vector<PltStub> stubs;        // decoded from .plt, .plt.sec, .plt.bnd
};

PltCheck decode_fixture(const std::string& path) {
  PltCheck c;
  elf_version(EV_CURRENT);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return c;
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  GElf_Ehdr eh;
  if (elf == nullptr || gelf_getehdr(elf, &eh) == nullptr) {
    ::close(fd);
    return c;
  }
  c.opened = true;
  c.machine = eh.e_machine;
  const Traits* t = traits_for_machine(eh.e_machine);
  size_t shstrndx = 0;
  elf_getshdrstrndx(elf, &shstrndx);
  std::vector<std::pair<std::span<const uint8_t>, uint64_t>> plt_sections;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    gelf_getshdr(scn, &sh);
    std::string name = elf_strptr(elf, shstrndx, sh.sh_name);
    Elf_Data* d = elf_getdata(scn, nullptr);
    if (d == nullptr || d->d_buf == nullptr) continue;
    if (name == ".rela.plt") {
      for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; ++i) {
        GElf_Rela r;
        gelf_getrela(d, static_cast<int>(i), &r);
        if (t && GELF_R_TYPE(r.r_info) == t->plt_relocations.jump_slot) c.jump_slots.insert(r.r_offset);
      }
    } else if (name == ".plt" || name == ".plt.sec" || name == ".plt.bnd") {
      plt_sections.emplace_back(std::span(static_cast<const uint8_t*>(d->d_buf), d->d_size), sh.sh_addr);
    }
  }
  if (t != nullptr)
    for (auto [bytes, base] : plt_sections)
      t->decode_plt(bytes, base, [&](uint64_t a) { return c.jump_slots.count(a) != 0; }, c.stubs);
  elf_end(elf);
  ::close(fd);
  return c;
}

void expect_one_stub_per_slot(const PltCheck& c) {
  ASSERT_FALSE(c.jump_slots.empty());
  std::multiset<uint64_t> seen;
  for (const PltStub& s : c.stubs) seen.insert(s.got_slot);
  for (uint64_t slot : c.jump_slots) EXPECT_EQ(seen.count(slot), 1u) << std::hex << slot;
  EXPECT_EQ(c.stubs.size(), c.jump_slots.size());
}

TEST(ArchPlt, X86_64Fixtures) {
  for (const char* name : {"libelf_fixture_lib.so", "elf_fixture_pie", "elf_fixture_ibt"}) {
    SCOPED_TRACE(name);
    PltCheck c = decode_fixture(fixture(name));
    ASSERT_TRUE(c.opened) << fixture(name);
    EXPECT_EQ(c.machine, EM_X86_64);
    expect_one_stub_per_slot(c);
  }
}

TEST(ArchPlt, AArch64Fixtures) {
  for (const char* name : {"libelf_fixture_a64.so", "libelf_fixture_a64_bti.so"}) {
    SCOPED_TRACE(name);
    PltCheck c = decode_fixture(fixture(name));
    if (!c.opened) GTEST_SKIP() << fixture(name) << " not built (needs clang and ld.lld)";
    EXPECT_EQ(c.machine, EM_AARCH64);
    expect_one_stub_per_slot(c);
    EXPECT_EQ(c.stubs.size(), 3u);  // fx_ext_first, fx_ext_second, fx_ext_third
  }
}

// arch/call_sites.h: return addresses and function exits, from hand-assembled bytes.
TEST(CallSites, ReturnAddressFollowsACallOrIsTheSignalReturn) {
  const Traits& x = traits(Arch::X86_64);
  const std::vector<uint8_t> none;
  // call rel32 (e8), call *%rax (ff d0), call *0x10(%rip) (ff 15 disp32), after filler.
  const std::vector<uint8_t> rel = {0x90, 0x90, 0x90, 0xe8, 0x10, 0x20, 0x00, 0x00};
  const std::vector<uint8_t> reg = {0x90, 0x90, 0xff, 0xd0};
  const std::vector<uint8_t> mem = {0x90, 0xff, 0x15, 0x10, 0x00, 0x00, 0x00};
  EXPECT_TRUE(x.is_return_address(rel, none, 0x401000));
  EXPECT_TRUE(x.is_return_address(reg, none, 0x401000));
  EXPECT_TRUE(x.is_return_address(mem, none, 0x401000));
  // Zeros (data: argc's neighbours), a jmp rel32 (e9), a ret: no call ends there.
  const std::vector<uint8_t> zeros(16, 0);
  const std::vector<uint8_t> jmp = {0x90, 0x90, 0x90, 0xe9, 0x10, 0x20, 0x00, 0x00};
  const std::vector<uint8_t> ret = {0x90, 0x90, 0x90, 0xc3};
  EXPECT_FALSE(x.is_return_address(zeros, none, 0x601000));
  EXPECT_FALSE(x.is_return_address(jmp, none, 0x401000));
  EXPECT_FALSE(x.is_return_address(ret, none, 0x401000));
  // __restore_rt: mov $15, %rax; syscall.
  const std::vector<uint8_t> restore = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
  EXPECT_TRUE(x.is_return_address(zeros, restore, 0x401000));

  const Traits& a = traits(Arch::AArch64);
  const std::vector<uint8_t> bl = {0x00, 0x00, 0x00, 0x94};   // bl .
  const std::vector<uint8_t> blr = {0x00, 0x00, 0x3f, 0xd6};  // blr x0
  const std::vector<uint8_t> b = {0x00, 0x00, 0x00, 0x14};    // b .
  const std::vector<uint8_t> sigret = {0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4};
  EXPECT_TRUE(a.is_return_address(bl, none, 0x401000));
  EXPECT_TRUE(a.is_return_address(blr, none, 0x401000));
  EXPECT_FALSE(a.is_return_address(b, none, 0x401000));
  EXPECT_TRUE(a.is_return_address(none, sigret, 0x401000));
}

TEST(CallSites, FunctionExitsAreItsReturnsAndItsJumpsOut) {
  const Traits& x = traits(Arch::X86_64);
  // 0: push %rbp; 1: je +3 (to 6, inside); 3: pop %rbp; 4: ret; 5: nop;
  // 6: pop %rbp; 7: jmp rel32 -> 0x2000 (outside: a tail call); 12: jmp -14 (to 0,
  // the entry: inside); 14: rep ret
  const std::vector<uint8_t> body = {0x55, 0x74, 0x03, 0x5d, 0xc3, 0x90, 0x5d, 0xe9,
                                     0xf4, 0x0f, 0x00, 0x00, 0xeb, 0xf2, 0xf3, 0xc3};
  FunctionExits e = x.function_exits(body, 0x1000);
  EXPECT_TRUE(e.complete);
  EXPECT_EQ(e.returns, (std::vector<uint64_t>{0x1004, 0x100e}));
  EXPECT_EQ(e.tail_jumps, (std::vector<uint64_t>{0x1007}));

  const Traits& a = traits(Arch::AArch64);
  // 0: ret; 4: b +8 (to 12: inside); 8: b +0x100 (outside); 12: ret x1
  const std::vector<uint8_t> a64 = {0xc0, 0x03, 0x5f, 0xd6, 0x02, 0x00, 0x00, 0x14,
                                    0x40, 0x00, 0x00, 0x14, 0x20, 0x00, 0x5f, 0xd6};
  FunctionExits f = a.function_exits(a64, 0x2000);
  EXPECT_EQ(f.returns, (std::vector<uint64_t>{0x2000, 0x200c}));
  EXPECT_EQ(f.tail_jumps, (std::vector<uint64_t>{0x2008}));
}

}  // namespace
}  // namespace ft::arch
