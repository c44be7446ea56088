#include <cstring>

#include "arch/recorder_stubs.h"
#include "common/check.h"

namespace ft::arch {
namespace {

class Emitter {
 public:
  Emitter& bytes(std::initializer_list<uint8_t> b) {
    out_.insert(out_.end(), b);
    return *this;
  }
  Emitter& u64(uint64_t v) {
    uint8_t b[8];
    std::memcpy(b, &v, 8);
    out_.insert(out_.end(), b, b + 8);
    return *this;
  }
  Emitter& raw(std::span<const uint8_t> b) {
    out_.insert(out_.end(), b.begin(), b.end());
    return *this;
  }
  size_t size() const { return out_.size(); }
  // A jcc rel32 whose target is set later.
  size_t jcc32(uint8_t cc) {
    bytes({0x0f, cc, 0, 0, 0, 0});
    return out_.size();
  }
  void land(size_t after_jcc) {
    int32_t rel = static_cast<int32_t>(out_.size() - after_jcc);
    std::memcpy(&out_[after_jcc - 4], &rel, 4);
  }
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  std::vector<uint8_t> out_;
};

// Bytes between the resume jump after the window's copy and the kept instruction's
// copy: popfq, lea rsp, int3.
constexpr size_t kStopGapAfterJump = 1 + 8 + 1;

// rdtsc; shl rdx, 32; or rax, rdx  (the counter in rax; rdx clobbered)
void read_tsc(Emitter& e) { e.bytes({0x0f, 0x31, 0x48, 0xc1, 0xe2, 0x20, 0x48, 0x09, 0xd0}); }

// The thread pointer into r8 or rcx: rdfsbase, or a load
// from fs:0 (the thread control block's pointer to itself).
void read_tp(Emitter& e, ThreadPointerRead tp, bool r8) {
  if (tp == ThreadPointerRead::kRegister) {
    if (r8)
      e.bytes({0xf3, 0x49, 0x0f, 0xae, 0xc0});  // rdfsbase r8
    else
      e.bytes({0xf3, 0x48, 0x0f, 0xae, 0xc1});  // rdfsbase rcx
    return;
  }
  if (r8)
    e.bytes({0x64, 0x4c, 0x8b, 0x04, 0x25, 0, 0, 0, 0});  // mov r8, fs:[0]
  else
    e.bytes({0x64, 0x48, 0x8b, 0x0c, 0x25, 0, 0, 0, 0});  // mov rcx, fs:[0]
}

// lea rsp, [rsp + d] (the disp32 form: the same length whatever d is)
void adjust_sp(Emitter& e, int32_t d) {
  e.bytes({0x48, 0x8d, 0xa4, 0x24});
  uint8_t b[4];
  std::memcpy(b, &d, 4);
  e.raw(b);
}

RecorderCode entry_trampoline(uint64_t at, uint64_t region, uint64_t site, uint64_t entry_fn,
                              std::span<const uint8_t> window, uint64_t resume, int64_t stack_delta,
                              std::span<const uint8_t> kept, ThreadPointerRead tp) {
  (void)at;  // the code is position-independent
  Emitter e;
  // Entered after the function's kept first instruction (arch/entry_patch.h), which
  // moved the stack pointer stack_delta bytes down: the return address is that far
  // up. `align` puts rsp back at 8 mod 16, as at the entry, before the pushes.
  const int32_t delta = static_cast<int32_t>(stack_delta);
  const int32_t align = static_cast<int32_t>(((stack_delta % 16) + 16) % 16);
  adjust_sp(e, -align);
  // Pushed in reverse so that [rsp] .. [rsp+40] are rdi, rsi, rdx, rcx, r8, r9 (the
  // arguments in order), then rax (al: vector registers of a variadic call), r10 (a
  // static chain), r11, rbp (for stack walks), the flags; the return address at
  // [rsp+88+align+delta]. rsp was 8 mod 16 at the entry, and is 0 mod 16 at the call
  // below. Every register a call may clobber is kept, flags included: a caller
  // compiled with interprocedural register allocation (GCC's -fipa-ra, on at -O2)
  // keeps values in them across calls to functions it knows do not touch them.
  e.bytes({0x9c});                    // pushfq
  e.bytes({0x55});                    // push rbp
  e.bytes({0x41, 0x53, 0x41, 0x52, 0x50, 0x41, 0x51, 0x41, 0x50, 0x51, 0x52, 0x56, 0x57});
  read_tsc(e);
  e.bytes({0x49, 0x89, 0xc1});        // mov r9, rax        tsc
  e.bytes({0x48, 0xbf}).u64(region);  // movabs rdi, region
  e.bytes({0x48, 0xbe}).u64(site);    // movabs rsi, site
  e.bytes({0x48, 0x89, 0xe2});        // mov rdx, rsp       args
  e.bytes({0x48, 0x8d, 0x8c, 0x24});  // lea rcx, [rsp+88+align+delta]  slot
  {
    const int32_t slot = 88 + align + delta;
    uint8_t b[4];
    std::memcpy(b, &slot, 4);
    e.raw(b);
  }
  read_tp(e, tp, true);                     // r8: tp
  e.bytes({0x48, 0xb8}).u64(entry_fn);      // movabs rax, entry_fn
  e.bytes({0xff, 0xd0});                    // call rax
  size_t after_call = e.size();
  e.bytes({0x48, 0x85, 0xc0});              // test rax, rax (pops leave the flags)
  e.bytes({0x5f, 0x5e, 0x5a, 0x59, 0x41, 0x58, 0x41, 0x59, 0x58, 0x41, 0x5a, 0x41, 0x5b});
  e.bytes({0x5d});                          // pop rbp
  size_t to_slow = e.jcc32(0x85);           // jnz slow
  e.bytes({0x9d});                          // popfq
  adjust_sp(e, align);
  size_t body = e.size();
  e.raw(window);
  e.bytes({0xff, 0x25, 0, 0, 0, 0}).u64(resume);  // jmp [rip+0]; .quad resume
  FT_CHECK(e.size() - body - window.size() + kStopGapAfterJump == kX86_64RecorderStubs.kept_copy_gap,
           "entry trampoline: the kept instruction's copy moved");
  e.land(to_slow);
  e.bytes({0x9d});                          // slow: popfq
  // The stop path sees the stack as at the entry: the kept instruction undone (it
  // runs again from its copy after the stop).
  adjust_sp(e, align + delta);
  size_t slow = e.size();
  e.bytes({0xcc});
  size_t stop_resume = body;
  if (!kept.empty()) {
    stop_resume = e.size();
    e.raw(kept);  // ends in a jump to body
  }
  return {e.take(), body, slow, after_call, stop_resume};
}

RecorderCode return_stub(uint64_t region, uint64_t return_fn, ThreadPointerRead tp) {
  Emitter e;
  // Reached by the function's ret with rsp = E, one word above the slot; below it is
  // the returned function's dead frame. Every register but the return registers is
  // what the caller may rely on (see entry_trampoline): all of them are kept.
  //   E-8: where to go (written after the call), E-16: the flags, E-24 .. E-72: rcx,
  //   rsi, rdi, r8, r9, r10, r11; rets[] = rax, rdx, xmm0 at [rsp] = E-96.
  e.bytes({0x48, 0x8d, 0x64, 0x24, 0xf8});        // lea rsp, [rsp-8]
  e.bytes({0x9c});                                // pushfq
  e.bytes({0x51, 0x56, 0x57, 0x41, 0x50, 0x41, 0x51, 0x41, 0x52, 0x41, 0x53});  // push rcx .. r11
  e.bytes({0x48, 0x83, 0xec, 0x18});              // sub rsp, 24
  e.bytes({0x48, 0x89, 0x04, 0x24});              // mov [rsp], rax
  e.bytes({0x48, 0x89, 0x54, 0x24, 0x08});        // mov [rsp+8], rdx
  e.bytes({0x66, 0x0f, 0xd6, 0x44, 0x24, 0x10});  // movq [rsp+16], xmm0
  read_tsc(e);
  e.bytes({0x49, 0x89, 0xc0});                    // mov r8, rax        tsc
  e.bytes({0x48, 0xbf}).u64(region);              // movabs rdi, region
  e.bytes({0x48, 0x8d, 0x74, 0x24, 0x60});        // lea rsi, [rsp+96]  sp after the return
  e.bytes({0x48, 0x89, 0xe2});                    // mov rdx, rsp       rets
  read_tp(e, tp, false);                          // rcx: tp
  e.bytes({0x48, 0xb8}).u64(return_fn);           // movabs rax, return_fn
  e.bytes({0xff, 0xd0});                          // call rax
  size_t after_call = e.size();
  e.bytes({0x48, 0x89, 0x44, 0x24, 0x58});        // mov [rsp+88], rax  where to go
  e.bytes({0x48, 0x8b, 0x04, 0x24});              // mov rax, [rsp]
  e.bytes({0x48, 0x8b, 0x54, 0x24, 0x08});        // mov rdx, [rsp+8]
  e.bytes({0x48, 0x8d, 0x64, 0x24, 0x18});        // lea rsp, [rsp+24]
  e.bytes({0x48, 0x83, 0x7c, 0x24, 0x40, 0x00});  // cmp qword [rsp+64], 0
  e.bytes({0x41, 0x5b, 0x41, 0x5a, 0x41, 0x59, 0x41, 0x58, 0x5f, 0x5e, 0x59});  // pop r11 .. rcx
  e.bytes({0x74, 0x02});                          // jz slow
  e.bytes({0x9d});                                // popfq
  e.bytes({0xc3});                                // ret (to where to go)
  e.bytes({0x9d});                                // slow: popfq
  e.bytes({0x48, 0x8d, 0x64, 0x24, 0x08});        // lea rsp, [rsp+8]
  size_t slow = e.size();
  e.bytes({0xcc});
  return {e.take(), 0, slow, after_call};
}

// The SIGTRAP handler's entry (the kernel calls it with sig, info, ucontext): the
// region's header as the fourth argument, then on to the recorder's handler. After
// it, the signal return the action's restorer runs (rt_sigreturn).
SignalCode trap_handler(uint64_t region, uint64_t trap_fn) {
  Emitter e;
  e.bytes({0xf3, 0x0f, 0x1e, 0xfa});  // endbr64
  e.bytes({0x48, 0xb9});              // movabs rcx, region
  uint8_t b[8];
  std::memcpy(b, &region, 8);
  e.raw(b);
  e.bytes({0x48, 0xb8});              // movabs rax, trap_fn
  std::memcpy(b, &trap_fn, 8);
  e.raw(b);
  e.bytes({0xff, 0xe0});              // jmp rax
  size_t restorer = e.size();
  e.bytes({0xb8, 0x0f, 0x00, 0x00, 0x00});  // mov eax, SYS_rt_sigreturn
  e.bytes({0x0f, 0x05});                    // syscall
  return {e.take(), restorer};
}

void restart_syscall(Registers& r) {
  user_regs_struct& s = r.raw;
  constexpr int64_t kErestartsys = -512, kErestartnointr = -513, kErestartnohand = -514, kErestartBlock = -516;
  auto v = static_cast<int64_t>(s.rax);
  if (static_cast<int64_t>(s.orig_rax) < 0) return;
  if (v == kErestartsys || v == kErestartnointr || v == kErestartnohand) {
    s.rax = s.orig_rax;
  } else if (v == kErestartBlock) {
    s.rax = 219;  // restart_syscall
  } else {
    return;
  }
  s.rip -= 2;  // the syscall instruction again
  s.orig_rax = static_cast<uint64_t>(-1);
}

std::vector<uint8_t> resume_block(const Registers& saved, uint64_t at, RecorderStubs::ResumeAfter first) {
  Registers restarted = saved;
  restart_syscall(restarted);
  const user_regs_struct& s = restarted.raw;
  uint64_t rax = s.rax, rip = s.rip;
  // The values, in this order after the code: flags, the fifteen registers, rsp, rip.
  const uint64_t values[] = {s.eflags, rax, s.rcx, s.rdx, s.rbx, s.rbp, s.rsi, s.rdi, s.r8, s.r9, s.r10,
                             s.r11, s.r12, s.r13, s.r14, s.r15, s.rsp, rip};
  // mov reg, [rip + disp32]: REX, 8b, modrm (reg field), in the order of values[1..16].
  static constexpr uint8_t kLoads[][3] = {
      {0x48, 0x8b, 0x05}, {0x48, 0x8b, 0x0d}, {0x48, 0x8b, 0x15}, {0x48, 0x8b, 0x1d}, {0x48, 0x8b, 0x2d},
      {0x48, 0x8b, 0x35}, {0x48, 0x8b, 0x3d}, {0x4c, 0x8b, 0x05}, {0x4c, 0x8b, 0x0d}, {0x4c, 0x8b, 0x15},
      {0x4c, 0x8b, 0x1d}, {0x4c, 0x8b, 0x25}, {0x4c, 0x8b, 0x2d}, {0x4c, 0x8b, 0x35}, {0x4c, 0x8b, 0x3d},
      {0x48, 0x8b, 0x25}};
  Emitter e;
  std::vector<std::pair<size_t, size_t>> fixups;  // (end of the instruction, index in values)
  auto rip_operand = [&](size_t index) {
    e.bytes({0, 0, 0, 0});
    fixups.emplace_back(e.size(), index);
  };
  if (first == RecorderStubs::ResumeAfter::kSyscall)
    e.bytes({0x0f, 0x05});  // syscall
  else
    e.bytes({0xcc});  // int3
  e.bytes({0x48, 0x8d, 0xa4, 0x24, 0x00, 0xff, 0xff, 0xff});  // lea rsp, [rsp-256]: below the red zone
  e.bytes({0xff, 0x35});                                // push qword [rip + flags]
  rip_operand(0);
  e.bytes({0x9d});                                      // popfq
  for (size_t i = 0; i < std::size(kLoads); ++i) {      // the registers, rsp last
    e.bytes({kLoads[i][0], kLoads[i][1], kLoads[i][2]});
    rip_operand(i + 1);
  }
  e.bytes({0xff, 0x25});                                // jmp qword [rip + rip]
  rip_operand(17);
  while (e.size() % 8) e.bytes({0xcc});
  size_t data = e.size();
  for (uint64_t v : values) {
    uint8_t b[8];
    std::memcpy(b, &v, 8);
    e.raw(b);
  }
  std::vector<uint8_t> out = e.take();
  for (auto [end, index] : fixups) {
    auto disp = static_cast<int32_t>(static_cast<int64_t>(data + 8 * index) - static_cast<int64_t>(end));
    std::memcpy(&out[end - 4], &disp, 4);
  }
  (void)at;  // position-independent
  return out;
}

size_t flags_transfer(std::span<const uint8_t> code, int& dir) {
  if (code.empty()) return 0;
  if (code[0] == 0x9c) dir = 1;        // pushfq
  else if (code[0] == 0x9d) dir = -1;  // popfq
  else return 0;
  return 1;
}

}  // namespace

const RecorderStubs kX86_64RecorderStubs = {entry_trampoline, return_stub, trap_handler, resume_block, restart_syscall, flags_transfer, 49, 0x100,
                                            /*kept_copy_gap*/ 14 + kStopGapAfterJump};

}  // namespace ft::arch
