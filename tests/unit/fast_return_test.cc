// The return stub of fast_return.h, run in this process: a function whose return
// address was replaced by the stub returns through it. The fast path must leave every
// register and the flags as the function left them, record rax, rdx, xmm0 and a time
// stamp, and pop the record; the slow path must restore the registers and stop at its
// int3 (here a SIGTRAP handler plays functracer and sends the thread on).
#include "core/fast_return.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <cstring>

namespace {

struct Results {
  uint64_t rax, rdx, r10, r11, rcx, flags, xmm0, rbx;
};

}  // namespace

extern "C" {
// Set up by the test before each call.
uint64_t* g_record;      // the block's record 0
uint64_t* g_top;         // the block's top
uint64_t g_stub;         // the stub's address
uint64_t g_slot_delta;   // added to the recorded slot (non-zero: the slow path)
void ft_test_call(Results* out);
}

// ft_test_callee records its own return as functracer would at its entry, hijacks it
// with the stub, loads known values into the registers and flags, and returns.
// ft_test_call calls it and stores what the caller sees.
asm(R"(
  .text
  .p2align 4
ft_test_callee:
  mov g_record(%rip), %r11
  mov %rsp, (%r11)
  mov g_slot_delta(%rip), %r10
  add %r10, (%r11)
  mov (%rsp), %r10
  mov %r10, 8(%r11)
  mov g_top(%rip), %r11
  movq $1, (%r11)
  mov g_stub(%rip), %r11
  mov %r11, (%rsp)
  movabs $0x400921fb54442d18, %rcx
  movq %rcx, %xmm0
  mov $0x1111, %eax
  mov $0x2222, %edx
  mov $0x3333, %r10d
  mov $0x4444, %r11d
  mov $0x5555, %ecx
  cmp $0x3334, %r10
  ret
  .globl ft_test_call
  .p2align 4
ft_test_call:
  push %rbx
  push %r12
  sub $8, %rsp
  mov %rdi, %r12
  mov $0x6666, %ebx
  call ft_test_callee
  pushfq
  mov %rax, 0(%r12)
  mov %rdx, 8(%r12)
  mov %r10, 16(%r12)
  mov %r11, 24(%r12)
  mov %rcx, 32(%r12)
  pop %rax
  mov %rax, 40(%r12)
  movq %xmm0, %rax
  mov %rax, 48(%r12)
  mov %rbx, 56(%r12)
  add $8, %rsp
  pop %r12
  pop %rbx
  ret
)");

namespace {

using ft::fastret::Record;

struct Fixture : ::testing::Test {
  void SetUp() override {
    code = static_cast<uint8_t*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(code, MAP_FAILED);
    std::memset(records, 0, sizeof records);
    top = 0;
    auto stub = ft::fastret::stub_code(reinterpret_cast<uint64_t>(&top), reinterpret_cast<uint64_t>(records));
    std::memcpy(code, stub.data(), stub.size());
    ASSERT_EQ(mprotect(code, 4096, PROT_READ | PROT_EXEC), 0);
    g_record = reinterpret_cast<uint64_t*>(&records[0]);
    g_top = &top;
    g_stub = reinterpret_cast<uint64_t>(code);
    g_slot_delta = 0;
  }
  void TearDown() override { munmap(code, 4096); }

  uint8_t* code = nullptr;
  alignas(64) Record records[ft::fastret::kCapacity];
  uint64_t top = 0;
};

void expect_registers(const Results& r) {
  EXPECT_EQ(r.rax, 0x1111u);
  EXPECT_EQ(r.rdx, 0x2222u);
  EXPECT_EQ(r.r10, 0x3333u);
  EXPECT_EQ(r.r11, 0x4444u);
  EXPECT_EQ(r.rcx, 0x5555u);
  EXPECT_EQ(r.rbx, 0x6666u);
  EXPECT_EQ(r.xmm0, 0x400921fb54442d18u);
  // 0x3333 - 0x3334: CF and SF set, ZF clear.
  EXPECT_EQ(r.flags & 1, 1u) << std::hex << r.flags;
  EXPECT_EQ(r.flags & 0x80, 0x80u) << std::hex << r.flags;
  EXPECT_EQ(r.flags & 0x40, 0u) << std::hex << r.flags;
}

TEST_F(Fixture, FastPathRecordsAndPreservesEverything) {
  uint64_t before = ft::fastret::read_tsc();
  Results r{};
  ft_test_call(&r);
  expect_registers(r);
  EXPECT_EQ(top, 0u);
  EXPECT_EQ(records[0].rax, 0x1111u);
  EXPECT_EQ(records[0].rdx, 0x2222u);
  EXPECT_EQ(records[0].xmm0, 0x400921fb54442d18u);
  EXPECT_GE(records[0].tsc, before);
  EXPECT_LE(records[0].tsc, ft::fastret::read_tsc());
  EXPECT_NE(records[0].real_ret, 0u);
}

uint64_t g_trap_ip, g_trap_sp, g_trap_r10, g_trap_r11, g_trap_flags, g_resume;

void on_trap(int, siginfo_t*, void* uc_v) {
  auto* uc = static_cast<ucontext_t*>(uc_v);
  g_trap_ip = uc->uc_mcontext.gregs[REG_RIP];
  g_trap_sp = uc->uc_mcontext.gregs[REG_RSP];
  g_trap_r10 = uc->uc_mcontext.gregs[REG_R10];
  g_trap_r11 = uc->uc_mcontext.gregs[REG_R11];
  g_trap_flags = uc->uc_mcontext.gregs[REG_EFL];
  uc->uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(g_resume);  // what functracer does
}

// While it lives, SIGTRAP goes to on_trap, which continues at the real return
// address the callee wrote into the record.
class TrapHandler {
 public:
  TrapHandler() {
    struct sigaction sa{};
    sa.sa_sigaction = [](int s, siginfo_t* i, void* u) {
      g_resume = g_record[1];
      on_trap(s, i, u);
    };
    sa.sa_flags = SA_SIGINFO;
    EXPECT_EQ(sigaction(SIGTRAP, &sa, &old_), 0);
  }
  ~TrapHandler() { restore(); }
  void restore() {
    if (restored_) return;
    sigaction(SIGTRAP, &old_, nullptr);
    restored_ = true;
  }

 private:
  struct sigaction old_{};
  bool restored_ = false;
};

TEST_F(Fixture, SlowPathStopsWithRegistersRestored) {
  g_slot_delta = 8;  // the record is not this return's: not the innermost frame
  TrapHandler trap;
  Results r{};
  ft_test_call(&r);
  trap.restore();
  expect_registers(r);
  EXPECT_EQ(top, 1u) << "the slow path pops nothing";
  EXPECT_EQ(records[0].rax, 0u) << "the slow path records nothing";
  EXPECT_EQ(g_trap_ip, g_stub + ft::fastret::kSlowTrapOffset + 1);
  // The recorded slot is the real one + 8, which is where sp is after the return.
  EXPECT_EQ(g_trap_sp, records[0].slot) << "sp is just after the return";
  EXPECT_EQ(g_trap_r10, 0x3333u);
  EXPECT_EQ(g_trap_r11, 0x4444u);
  EXPECT_EQ(g_trap_flags & 1, 1u);
}

TEST_F(Fixture, EmptyBlockTakesTheSlowPath) {
  // top is set to 1 by the callee; a second return through the stub finds 0.
  Results r{};
  ft_test_call(&r);
  EXPECT_EQ(top, 0u);
  TrapHandler trap;
  g_top = &records[1].unused[0];  // the callee's "top = 1" goes elsewhere: the real top stays 0
  g_trap_ip = 0;
  ft_test_call(&r);
  trap.restore();
  expect_registers(r);
  EXPECT_EQ(g_trap_ip, g_stub + ft::fastret::kSlowTrapOffset + 1);
  EXPECT_EQ(top, 0u);
}

TEST(TscClock, ConvertsToMonotonicTime) {
  ft::fastret::TscClock clock;
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t t0 = ft::fastret::read_tsc();
  uint64_t ns0 = static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  timespec d{0, 20000000};
  nanosleep(&d, nullptr);
  clock.sample();
  uint64_t got = clock.to_ns(t0);
  int64_t err = static_cast<int64_t>(got) - static_cast<int64_t>(ns0);
  EXPECT_LT(err < 0 ? -err : err, 1000000) << "a reading 20 ms old, converted " << err << " ns off";
}

}  // namespace
