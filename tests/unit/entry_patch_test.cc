// The entry patch analysis on real functions: tests/unit/fixtures/entry_patch_fixture.S
// is linked into this test, so each case is decided on code that is really in memory,
// at its run-time address. Expected bytes are worked out by hand from the instruction
// listing in the fixture's comments; accepted copies are also run: the copy, placed in
// a page near the function, runs the window and jumps back into the real function, and
// must give the function's own result. The Patched* tests write the patch into the
// function itself, with a trampoline that counts calls, and call the function.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "arch/arch.h"
#include "arch/entry_patch.h"
#include "core/elf_image.h"

#if defined(__x86_64__)
extern "C" {
#define FT_FIXTURE(name) extern const uint8_t name[], name##_end[];
FT_FIXTURE(ep_plain)
FT_FIXTURE(ep_endbr)
FT_FIXTURE(ep_loop)
FT_FIXTURE(ep_rip)
FT_FIXTURE(ep_lea)
FT_FIXTURE(ep_ret)
FT_FIXTURE(ep_zero)
FT_FIXTURE(ep_switch)
FT_FIXTURE(ep_switch_ibt)
FT_FIXTURE(ep_tail)
FT_FIXTURE(ep_tail_noibt)
FT_FIXTURE(ep_call)
FT_FIXTURE(ep_sign)
FT_FIXTURE(ep_jrcxz)
FT_FIXTURE(ep_jmp)
FT_FIXTURE(ep_abs)
FT_FIXTURE(ep_abs_cold)
FT_FIXTURE(ep_abs2)
FT_FIXTURE(ep_abs2_cold)
FT_FIXTURE(ep_label)
FT_FIXTURE(ep_bad)
#undef FT_FIXTURE
extern int64_t ep_data;

#define FT_C_FIXTURE(p)                                 \
  extern volatile int p##reports;                       \
  int p##checked_div(int a, int b);                     \
  int p##sum(const int* v, int n);                      \
  int p##next(int step);                                \
  double p##poly(double x);                             \
  long p##pick(int i, long a);                          \
  long p##collatz(long n);                              \
  size_t p##length(const char* s);
FT_C_FIXTURE(epc_)
FT_C_FIXTURE(epc_ibt_)
#undef FT_C_FIXTURE
}
#endif

namespace ft::arch {
namespace {

#if defined(__x86_64__)
using Bytes = std::vector<uint8_t>;

uint64_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

std::span<const uint8_t> body(const uint8_t* begin, const uint8_t* end) {
  return {begin, static_cast<size_t>(end - begin)};
}

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Bytes le32(int64_t v) {
  EXPECT_GE(v, INT32_MIN);
  EXPECT_LE(v, INT32_MAX);
  Bytes out;
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i)));
  return out;
}

// jmp rel32 at `at` to `to`.
Bytes jmp(uint64_t at, uint64_t to) { return cat({{0xe9}, le32(static_cast<int64_t>(to - (at + 5)))}); }

// A page of RWX memory within 2 GiB of `near`, for copies and trampolines.
class NearPage {
 public:
  explicit NearPage(uint64_t near) {
    const uint64_t base = near & ~uint64_t{0xfff};
    for (int64_t mib = 16; mib <= 1024 && page_ == nullptr; mib *= 2) {
      for (int64_t sign : {1, -1}) {
        void* hint = reinterpret_cast<void*>(base + sign * (mib << 20));
        void* p = mmap(hint, kSize, PROT_READ | PROT_WRITE | PROT_EXEC,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (p == MAP_FAILED) continue;
        if (p != hint) {
          munmap(p, kSize);
          continue;
        }
        page_ = static_cast<uint8_t*>(p);
        break;
      }
    }
  }
  ~NearPage() {
    if (page_ != nullptr) munmap(page_, kSize);
  }
  NearPage(const NearPage&) = delete;
  NearPage& operator=(const NearPage&) = delete;

  uint8_t* get() const { return page_; }
  uint64_t address() const { return addr(page_); }

  void put(size_t offset, const Bytes& bytes) {
    std::memcpy(page_ + offset, bytes.data(), bytes.size());
    __builtin___clear_cache(reinterpret_cast<char*>(page_), reinterpret_cast<char*>(page_ + kSize));
  }

  static constexpr size_t kSize = 0x1000;

 private:
  uint8_t* page_ = nullptr;
};

EntryPatch plan(std::span<const uint8_t> fn, uint64_t copy, uint64_t trampoline = 0,
                std::span<const uint64_t> targets = {}, std::span<const CodeRange> parts = {}) {
  EntryPatchRequest req;
  req.function = fn;
  req.entry = addr(fn.data());
  req.copy = copy;
  req.trampoline = trampoline != 0 ? trampoline : copy;
  req.branch_targets = targets;
  req.other_parts = parts;
  return plan_entry_patch_x86_64(req);
}

void expect_refused(const EntryPatch& p, const std::string& reason) {
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.reason, reason);
  EXPECT_TRUE(p.patch.empty());
  EXPECT_TRUE(p.relocated.empty());
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%#lx", static_cast<unsigned long>(v));
  return buf;
}

class EntryPatchX86 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (arch::host().arch != Arch::X86_64) GTEST_SKIP() << "x86-64 fixtures";
    if (page_.get() == nullptr) GTEST_SKIP() << "cannot map a page near the fixtures";
  }

  // The copy lives at offset 0x100 of the near page, the trampoline at 0x80.
  uint64_t copy() const { return page_.address() + 0x100; }
  uint64_t trampoline() const { return page_.address() + 0x80; }

  // Accepts `fn`, writes its relocated copy (and the copy of a kept first instruction
  // right after it) and returns where the function starts from its copies: the kept
  // instruction's copy if there is one, as the stop path resumes, else the window's.
  template <typename Fn>
  Fn install_copy(const EntryPatch& p) {
    EXPECT_TRUE(p.ok) << p.reason;
    page_.put(0x100, cat({p.relocated, p.kept_relocated}));
    return reinterpret_cast<Fn>(page_.get() + 0x100 + (p.kept_length ? p.relocated.size() : 0));
  }

  NearPage page_{addr(ep_plain)};
};

// ---------------------------------------------------------------------------------
// Accepted, with hand-worked bytes, and run.

TEST_F(EntryPatchX86, PlainFunction) {
  const auto fn = body(ep_plain, ep_plain_end);
  const uint64_t e = addr(ep_plain);
  const EntryPatch p = plan(fn, copy(), trampoline());
  ASSERT_TRUE(p.ok) << p.reason;
  // push rbp stays at the entry (a uprobe there runs it and goes on at the jump), the
  // window is mov rbp, rsp (3), mov eax, edi (2).
  EXPECT_EQ(p.kept_length, 1u);
  EXPECT_EQ(p.stack_delta, 8);
  EXPECT_EQ(p.patch_offset, 1u);
  EXPECT_EQ(p.window_length, 6u);
  EXPECT_EQ(p.original, (Bytes{0x48, 0x89, 0xe5, 0x89, 0xf8}));
  EXPECT_EQ(p.patch, jmp(e + 1, trampoline()));
  EXPECT_EQ(p.relocated, cat({{0x48, 0x89, 0xe5, 0x89, 0xf8}, jmp(copy() + 5, e + 6)}));
  EXPECT_EQ(p.moved_pcs, (std::vector<MovedPc>{{1, 0}, {4, 3}}));
  // The stop path's copy: push rbp again, then the window's copy (gap 0 here).
  const uint64_t kept_at = copy() + p.relocated.size();
  EXPECT_EQ(p.kept_relocated, cat({{0x55}, jmp(kept_at + 1, copy())}));
  // Run from the kept instruction's copy, as the stop path resumes a thread.
  page_.put(0x100, cat({p.relocated, p.kept_relocated}));
  const auto run = reinterpret_cast<int (*)(int, int)>(page_.get() + 0x100 + p.relocated.size());
  EXPECT_EQ(run(2, 3), 5);
  EXPECT_EQ(run(-7, 100), 93);
}

// What may stay at the entry: instructions that run the same twice and before the
// recording; anything else starts the window, as does a function whose kept
// instruction would leave no room or whose second instruction is a branch target.
TEST_F(EntryPatchX86, FirstInstructionKeptOnlyWhenHarmless) {
  // The bytes are on the heap (far from the near page under AddressSanitizer): the
  // copy and the trampoline are put next to them (nothing is run here).
  const auto near = [](const Bytes& code) { return addr(code.data()) + 0x1000; };
  const auto kept = [&](const Bytes& code) {
    const EntryPatch p = plan(code, near(code), near(code));
    EXPECT_TRUE(p.ok) << p.reason;
    return std::pair{p.kept_length, p.stack_delta};
  };
  const Bytes tail = {0x48, 0x89, 0xf8, 0x48, 0x01, 0xf0, 0xc3};  // mov rax, rdi; add rax, rsi; ret
  EXPECT_EQ(kept(cat({{0x41, 0x54}, tail})), (std::pair{2u, int64_t{8}}));                     // push r12
  EXPECT_EQ(kept(cat({{0x48, 0x83, 0xec, 0x18}, tail})), (std::pair{4u, int64_t{24}}));        // sub rsp, 24
  EXPECT_EQ(kept(cat({{0x48, 0x85, 0xff}, tail})), (std::pair{3u, int64_t{0}}));               // test rdi, rdi
  EXPECT_EQ(kept(cat({{0x80, 0x3d, 0x10, 0, 0, 0, 0}, tail})), (std::pair{7u, int64_t{0}}));  // cmp byte [rip+16], 0
  EXPECT_EQ(kept(cat({{0x4c, 0x8b, 0x1d, 0x10, 0, 0, 0}, tail})), (std::pair{7u, int64_t{0}}));  // mov r11, [rip+16]
  EXPECT_EQ(kept(cat({{0x48, 0x89, 0xfe}, tail})).first, 0u);        // mov rsi, rdi: an argument register
  EXPECT_EQ(kept(cat({{0x48, 0x89, 0xe5}, tail})).first, 0u);        // mov rbp, rsp
  EXPECT_EQ(kept(cat({{0x48, 0x8b, 0x00}, tail})).first, 0u);        // mov rax, [rax]: reads what it writes
  EXPECT_EQ(kept(cat({{0x48, 0x83, 0xec, 0x04}, tail})).first, 0u);  // sub rsp, 4: not whole words
  EXPECT_EQ(kept(cat({{0x48, 0x83, 0xc7, 0x01}, tail})).first, 0u);  // add rdi, 1
  // A branch to the instruction after the kept one would run the jump without a call:
  // refused (and so is the window without a kept instruction, which holds that
  // target too). ConditionalJumpInTheWindow shows the other way back: a kept test
  // that would leave a ret in the window, so the window starts at the test.
  const Bytes loop = {0x55, 0x48, 0x89, 0xf8, 0x48, 0x01, 0xf0, 0x75, 0xf8, 0x5d, 0xc3};
  const EntryPatch p = plan(loop, near(loop), near(loop));
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.reason.rfind("branch into the patched bytes at " + hex(addr(loop.data()) + 1), 0), 0u) << p.reason;
}

TEST_F(EntryPatchX86, Endbr64StaysAtTheEntry) {
  const auto fn = body(ep_endbr, ep_endbr_end);
  const uint64_t e = addr(ep_endbr);
  const EntryPatch p = plan(fn, copy(), trampoline());
  ASSERT_TRUE(p.ok) << p.reason;
  // endbr64 (4) and push rbp (1) stay; the window is mov (3), lea (3).
  EXPECT_EQ(p.patch_offset, 5u);
  EXPECT_EQ(p.kept_length, 1u);
  EXPECT_EQ(p.patch_addr(e), e + 5);
  EXPECT_EQ(p.window_length, 11u);
  EXPECT_EQ(p.original, (Bytes{0x48, 0x89, 0xe5, 0x8d, 0x04, 0x7f}));
  EXPECT_EQ(p.patch, cat({jmp(e + 5, trampoline()), {0x90}}));
  EXPECT_EQ(p.relocated, cat({{0x48, 0x89, 0xe5, 0x8d, 0x04, 0x7f}, jmp(copy() + 6, e + 11)}));
  EXPECT_EQ(p.moved_pcs, (std::vector<MovedPc>{{5, 0}, {8, 3}}));
  // The stop path's copy does not repeat the endbr64: push rbp, then the window.
  const uint64_t kept_at = copy() + p.relocated.size();
  EXPECT_EQ(p.kept_relocated, cat({{0x55}, jmp(kept_at + 1, copy())}));
  page_.put(0x100, cat({p.relocated, p.kept_relocated}));
  const auto run = reinterpret_cast<int (*)(int)>(page_.get() + 0x100 + p.relocated.size());
  EXPECT_EQ(run(14), 42);
}

TEST_F(EntryPatchX86, RipRelativeLoadReencoded) {
  const auto fn = body(ep_rip, ep_rip_end);
  const uint64_t e = addr(ep_rip);
  const uint64_t data = addr(&ep_data);
  const EntryPatch p = plan(fn, copy(), trampoline());
  ASSERT_TRUE(p.ok) << p.reason;
  EXPECT_EQ(p.window_length, 7u);
  // mov rax, [rip + disp]: from the copy, rip after the instruction is copy + 7.
  EXPECT_EQ(p.relocated, cat({{0x48, 0x8b, 0x05}, le32(static_cast<int64_t>(data - (copy() + 7))),
                              jmp(copy() + 7, e + 7)}));
  EXPECT_EQ(p.patch, cat({jmp(e, trampoline()), {0x66, 0x90}}));
  const auto run = install_copy<int64_t (*)(int64_t)>(p);
  EXPECT_EQ(run(0), ep_data);
  EXPECT_EQ(run(0x11), ep_data + 0x11);
}

TEST_F(EntryPatchX86, RipRelativeLeaReencoded) {
  const auto fn = body(ep_lea, ep_lea_end);
  const EntryPatch p = plan(fn, copy(), trampoline());
  ASSERT_TRUE(p.ok) << p.reason;
  const auto run = install_copy<const int64_t* (*)()>(p);
  EXPECT_EQ(run(), &ep_data);
}

TEST_F(EntryPatchX86, RipRelativeOutOfReachRefused) {
  const uint64_t far = addr(ep_rip) + (uint64_t{3} << 30);
  expect_refused(plan(body(ep_rip, ep_rip_end), far, trampoline()),
                 "RIP-relative operand out of reach of the trampoline");
  // Without a RIP-relative operand the copy can live anywhere (it jumps back through
  // an absolute address); only the jump at the entry must reach the trampoline.
  EXPECT_TRUE(plan(body(ep_plain, ep_plain_end), far, trampoline()).ok);
  expect_refused(plan(body(ep_plain, ep_plain_end), copy(), far),
                 "trampoline out of reach of a jmp rel32");
}

TEST_F(EntryPatchX86, ConditionalJumpInTheWindow) {
  const auto fn = body(ep_sign, ep_sign_end);
  const uint64_t e = addr(ep_sign);
  const uint64_t c = copy();
  const EntryPatch p = plan(fn, c, trampoline());
  ASSERT_TRUE(p.ok) << p.reason;
  EXPECT_EQ(p.window_length, 6u);  // test (2), jne (2), xor (2)
  // test edi, edi; jne +2; jmp short +5; jmp e+7; xor eax, eax; jmp e+6
  EXPECT_EQ(p.relocated, cat({{0x85, 0xff, 0x75, 0x02, 0xeb, 0x05}, jmp(c + 6, e + 7), {0x31, 0xc0},
                              jmp(c + 13, e + 6)}));
  EXPECT_EQ(p.moved_pcs, (std::vector<MovedPc>{{0, 0}, {2, 2}, {4, 11}}));
  const auto run = install_copy<int (*)(int)>(p);
  EXPECT_EQ(run(0), 0);
  EXPECT_EQ(run(5), 1);
  EXPECT_EQ(run(-1), 1);
}

TEST_F(EntryPatchX86, CountingJumpInTheWindow) {
  const uint64_t e = addr(ep_jrcxz);
  const uint64_t c = copy();
  const EntryPatch p = plan(body(ep_jrcxz, ep_jrcxz_end), c, trampoline());
  ASSERT_TRUE(p.ok) << p.reason;
  EXPECT_EQ(p.window_length, 5u);
  // mov rcx, rdi; jrcxz +2; jmp short +5; jmp e+11; jmp e+5
  EXPECT_EQ(p.relocated, cat({{0x48, 0x89, 0xf9, 0xe3, 0x02, 0xeb, 0x05}, jmp(c + 7, e + 11),
                              jmp(c + 12, e + 5)}));
  EXPECT_EQ(p.patch, jmp(e, trampoline()));
  const auto run = install_copy<int64_t (*)(int64_t)>(p);
  EXPECT_EQ(run(0), 1);
  EXPECT_EQ(run(9), 2);
}

TEST_F(EntryPatchX86, JumpInTheWindow) {
  const uint64_t e = addr(ep_jmp);
  const uint64_t c = copy();
  const EntryPatch p = plan(body(ep_jmp, ep_jmp_end), c, trampoline());
  ASSERT_TRUE(p.ok) << p.reason;
  EXPECT_EQ(p.window_length, 6u);
  // mov eax, edi; jmp e+7 (rel32 now); xor eax, eax (never reached); jmp e+6
  EXPECT_EQ(p.relocated, cat({{0x89, 0xf8}, jmp(c + 2, e + 7), {0x31, 0xc0}, jmp(c + 9, e + 6)}));
  const auto run = install_copy<int (*)(int)>(p);
  EXPECT_EQ(run(41), 42);
}

TEST_F(EntryPatchX86, TailCallThroughRegisterInIbtCode) {
  // A tracked indirect jump in IBT code may only land on an endbr64: harmless.
  const auto fn = body(ep_tail, ep_tail_end);
  const EntryPatch p = plan(fn, copy(), trampoline());
  ASSERT_TRUE(p.ok) << p.reason;
  // endbr64 (4) and mov rax, rdi (3) stay; the window is lea (4), jmp rax (2).
  EXPECT_EQ(p.kept_length, 3u);
  EXPECT_EQ(p.window_length, 13u);
  const auto run = install_copy<int64_t (*)(int64_t (*)(int64_t), int64_t)>(p);
  EXPECT_EQ(run([](int64_t x) { return x * 10; }, 4), 50);
}

TEST_F(EntryPatchX86, ColdPartJumpingBackPastTheWindow) {
  const auto fn = body(ep_abs2, ep_abs2_end);
  const CodeRange cold{body(ep_abs2_cold, ep_abs2_cold_end), addr(ep_abs2_cold)};
  const EntryPatch p = plan(fn, copy(), trampoline(), {}, {&cold, 1});
  ASSERT_TRUE(p.ok) << p.reason;
  EXPECT_EQ(p.window_length, 10u);  // mov (2), test (2), js rel32 (6)
  const auto run = install_copy<int (*)(int)>(p);
  EXPECT_EQ(run(7), 7);
  EXPECT_EQ(run(-7), 7);
}

TEST_F(EntryPatchX86, KnownTargetsOutsideTheWindow) {
  const uint64_t e = addr(ep_plain);
  const uint64_t ok_targets[] = {e, e + 6, e + 9};
  EXPECT_TRUE(plan(body(ep_plain, ep_plain_end), copy(), trampoline(), ok_targets).ok);
}

// ---------------------------------------------------------------------------------
// Refused.

TEST_F(EntryPatchX86, LoopBackIntoTheWindowRefused) {
  const uint64_t e = addr(ep_loop);
  expect_refused(plan(body(ep_loop, ep_loop_end), copy(), trampoline()),
                 "branch into the patched bytes at " + hex(e + 2) + " from " + hex(e + 6));
}

TEST_F(EntryPatchX86, ShortFunctionsRefused) {
  expect_refused(plan(body(ep_ret, ep_ret_end), copy(), trampoline()), "function too short (1 byte)");
  expect_refused(plan(body(ep_zero, ep_zero_end), copy(), trampoline()), "function too short (3 bytes)");
  // A window that would run past the end: the function cut after 4 bytes of ep_plain.
  expect_refused(plan(body(ep_plain, ep_plain + 4), copy(), trampoline()), "function too short (4 bytes)");
}

TEST_F(EntryPatchX86, JumpTablesRefused) {
  expect_refused(plan(body(ep_switch, ep_switch_end), copy(), trampoline()),
                 "indirect jump at " + hex(addr(ep_switch) + 0x13) + " (targets unknown)");
  expect_refused(plan(body(ep_switch_ibt, ep_switch_ibt_end), copy(), trampoline()),
                 "notrack indirect jump at " + hex(addr(ep_switch_ibt) + 0x17) + " (jump table)");
  expect_refused(plan(body(ep_tail_noibt, ep_tail_noibt_end), copy(), trampoline()),
                 "indirect jump at " + hex(addr(ep_tail_noibt) + 7) + " (targets unknown)");
}

TEST_F(EntryPatchX86, CallInTheWindowRefused) {
  expect_refused(plan(body(ep_call, ep_call_end), copy(), trampoline()), "call in the patched bytes");
}

TEST_F(EntryPatchX86, ColdPartBranchingIntoTheWindowRefused) {
  const auto fn = body(ep_abs, ep_abs_end);
  const uint64_t e = addr(ep_abs);
  const CodeRange cold{body(ep_abs_cold, ep_abs_cold_end), addr(ep_abs_cold)};
  // Seen from the function alone, the window looks safe: the cold part is what tells.
  EXPECT_TRUE(plan(fn, copy(), trampoline()).ok);
  expect_refused(plan(fn, copy(), trampoline(), {}, {&cold, 1}),
                 "branch into the patched bytes at " + hex(e + 2) + " from " + hex(addr(ep_abs_cold) + 2));
}

TEST_F(EntryPatchX86, KnownTargetInsideTheWindowRefused) {
  const uint64_t e = addr(ep_plain);
  const uint64_t pad[] = {e + 9, e + 4};
  expect_refused(plan(body(ep_plain, ep_plain_end), copy(), trampoline(), pad),
                 "known branch target " + hex(e + 4) + " inside the patched bytes");
  // With endbr64 kept, entry + 4 (the jump itself) is inside the window too.
  const uint64_t after_endbr[] = {addr(ep_endbr) + 4};
  expect_refused(plan(body(ep_endbr, ep_endbr_end), copy(), trampoline(), after_endbr),
                 "known branch target " + hex(addr(ep_endbr) + 4) + " inside the patched bytes");
}

TEST_F(EntryPatchX86, AddressInsideTheWindowTakenRefused) {
  const uint64_t e = addr(ep_label);
  expect_refused(plan(body(ep_label, ep_label_end), copy(), trampoline()),
                 "address inside the patched bytes taken at " + hex(e + 4));
}

TEST_F(EntryPatchX86, UndecodableBytesRefused) {
  expect_refused(plan(body(ep_bad, ep_bad_end), copy(), trampoline()),
                 "undecodable bytes at " + hex(addr(ep_bad) + 6));
  expect_refused(plan({}, copy(), trampoline()), "no code bytes");
}

// ---------------------------------------------------------------------------------
// The whole patch, written into the function: the trampoline counts calls
// (lock inc qword [rip + counter]) and falls into the relocated copy.

class PatchedX86 : public EntryPatchX86 {
 protected:
  // Patches `fn`, runs `check`, restores the function; the counter is at page + 0x40.
  template <typename Check>
  void with_patch(const uint8_t* begin, const uint8_t* end, Check check) {
    const uint64_t e = addr(begin);
    const uint64_t counter = page_.address() + 0x40;
    const uint64_t code = trampoline();
    // f0 48 ff 05 disp32: lock inc qword ptr [rip + disp32], 8 bytes
    const Bytes count = cat({{0xf0, 0x48, 0xff, 0x05}, le32(static_cast<int64_t>(counter - (code + 8)))});
    EntryPatchRequest req;
    req.function = body(begin, end);
    req.entry = e;
    req.trampoline = code;
    req.copy = code + count.size();
    const EntryPatch p = arch::host().plan_entry_patch(req);
    ASSERT_TRUE(p.ok) << p.reason;
    ASSERT_EQ(p.original.size(), p.patch.size());
    ASSERT_EQ(std::memcmp(begin + p.patch_offset, p.original.data(), p.original.size()), 0);
    std::memset(page_.get() + 0x40, 0, 8);
    page_.put(0x80, cat({count, p.relocated}));

    const long page_size = sysconf(_SC_PAGESIZE);
    auto* first = reinterpret_cast<uint8_t*>(e & ~static_cast<uint64_t>(page_size - 1));
    const size_t span = static_cast<size_t>(addr(end) - addr(first));
    if (mprotect(first, span, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
      GTEST_SKIP() << "cannot make the fixture writable";
    }
    auto* at = const_cast<uint8_t*>(begin) + p.patch_offset;
    std::memcpy(at, p.patch.data(), p.patch.size());
    __builtin___clear_cache(reinterpret_cast<char*>(first), reinterpret_cast<char*>(first) + span);
    check([&] {
      uint64_t n = 0;
      std::memcpy(&n, page_.get() + 0x40, sizeof n);
      return n;
    });
    std::memcpy(at, p.original.data(), p.original.size());
    __builtin___clear_cache(reinterpret_cast<char*>(first), reinterpret_cast<char*>(first) + span);
    mprotect(first, span, PROT_READ | PROT_EXEC);
  }
};

TEST_F(PatchedX86, PlainFunctionCountsItsCalls) {
  with_patch(ep_plain, ep_plain_end, [](auto calls) {
    auto* volatile f = reinterpret_cast<int (*)(int, int)>(const_cast<uint8_t*>(ep_plain));
    EXPECT_EQ(f(1, 2), 3);
    EXPECT_EQ(f(40, 2), 42);
    EXPECT_EQ(f(-5, 5), 0);
    EXPECT_EQ(calls(), 3u);
  });
  auto* volatile f = reinterpret_cast<int (*)(int, int)>(const_cast<uint8_t*>(ep_plain));
  EXPECT_EQ(f(2, 2), 4);  // restored
}

TEST_F(PatchedX86, Endbr64FunctionCountsItsCalls) {
  with_patch(ep_endbr, ep_endbr_end, [](auto calls) {
    EXPECT_EQ(ep_endbr[0], 0xf3);  // the endbr64 is still at the entry
    auto* volatile f = reinterpret_cast<int (*)(int)>(const_cast<uint8_t*>(ep_endbr));
    for (int i = 0; i < 10; ++i) EXPECT_EQ(f(i), 3 * i);
    EXPECT_EQ(calls(), 10u);
  });
}

TEST_F(PatchedX86, ConditionalAndColdPathsCountTheirCalls) {
  with_patch(ep_abs2, ep_abs2_end, [](auto calls) {
    auto* volatile f = reinterpret_cast<int (*)(int)>(const_cast<uint8_t*>(ep_abs2));
    EXPECT_EQ(f(-9), 9);
    EXPECT_EQ(f(9), 9);
    EXPECT_EQ(calls(), 2u);
  });
}

// ---------------------------------------------------------------------------------
// Code the C compiler wrote (tests/unit/fixtures/entry_patch_c_fixture.c): whatever
// the analysis accepts must run from its copy exactly like the function, including
// the cold parts GCC split off.

class CompiledX86 : public EntryPatchX86 {
 protected:
  void SetUp() override {
    EntryPatchX86::SetUp();
    if (IsSkipped()) return;
    auto image = ElfImage::open("/proc/self/exe");
    ASSERT_TRUE(image.ok()) << image.error().message;
    image_ = std::move(*image);
  }

  // The analysis of the function at `fn`, named `name` in the symbol table, with its
  // .cold part if it has one.
  EntryPatch plan_compiled(const void* fn, const std::string& name) {
    const ElfSymbol* sym = image_->find(name);
    EXPECT_NE(sym, nullptr) << name;
    if (sym == nullptr) return refuse_entry_patch("no symbol");
    const uint64_t bias = addr(fn) - sym->value;
    const auto* begin = static_cast<const uint8_t*>(fn);
    parts_.clear();
    if (const ElfSymbol* cold = image_->find(name + ".cold"); cold != nullptr) {
      const auto* c = reinterpret_cast<const uint8_t*>(cold->value + bias);
      parts_.push_back({{c, cold->size}, cold->value + bias});
      ++cold_parts_;
    }
    const EntryPatch p = plan({begin, sym->size}, copy(), trampoline(), {}, parts_);
    ++analyses_;
    if (p.ok) {
      ++accepted_;
    } else {
      std::printf("  %s refused: %s\n", name.c_str(), p.reason.c_str());
    }
    return p;
  }

  template <typename Fn>
  Fn copy_of(Fn fn, const std::string& name) {
    const EntryPatch p = plan_compiled(reinterpret_cast<const void*>(fn), name);
    if (!p.ok) return fn;  // refused: the function stands for its copy
    return install_copy<Fn>(p);
  }

  template <typename Fn, typename... Args>
  void same(Fn fn, const std::string& name, std::initializer_list<std::tuple<Args...>> calls) {
    const Fn copy = copy_of(fn, name);
    for (const auto& args : calls) {
      EXPECT_EQ(std::apply(copy, args), std::apply(fn, args)) << name;
    }
  }

  std::unique_ptr<ElfImage> image_;
  std::vector<CodeRange> parts_;
  int analyses_ = 0;
  int accepted_ = 0;
  int cold_parts_ = 0;
};

#define FT_C_FIXTURE_TEST(test_name, p)                                                        \
  TEST_F(CompiledX86, test_name) {                                                             \
    const std::string prefix = #p;                                                             \
    same(p##checked_div, prefix + "checked_div", {std::tuple{7, 2}, std::tuple{-9, 3}});       \
    const int before = p##reports;                                                             \
    const auto div = copy_of(p##checked_div, prefix + "checked_div");                          \
    EXPECT_EQ(div(5, 0), -1); /* the cold path */                                              \
    EXPECT_EQ(p##reports, before + 5);                                                         \
    const int v[] = {3, 1, 4, 1, 5, 9, 2, 6};                                                  \
    same(p##sum, prefix + "sum", {std::tuple{v, 8}, std::tuple{v, 0}, std::tuple{v + 3, 2}});  \
    const auto next = copy_of(p##next, prefix + "next");                                       \
    const int start = p##next(0);                                                              \
    EXPECT_EQ(next(5), start + 5);                                                             \
    EXPECT_EQ(p##next(0), start + 5);                                                          \
    same(p##poly, prefix + "poly", {std::tuple{0.0}, std::tuple{2.0}, std::tuple{-3.5}});      \
    same(p##pick, prefix + "pick", {std::tuple{0, 5L}, std::tuple{3, 5L}, std::tuple{6, 50L}, std::tuple{9, 5L}}); \
    same(p##collatz, prefix + "collatz", {std::tuple{1L}, std::tuple{27L}, std::tuple{97L}});  \
    same(p##length, prefix + "length", {std::tuple{""}, std::tuple{"entry patch"}});           \
    std::printf("  %d of %d analyses accepted, %d with a .cold part\n", accepted_, analyses_, cold_parts_); \
    EXPECT_GE(accepted_, 1);                                                                   \
  }
FT_C_FIXTURE_TEST(PlainO2, epc_)
FT_C_FIXTURE_TEST(IbtO2, epc_ibt_)
#undef FT_C_FIXTURE_TEST

#endif  // __x86_64__

// ---------------------------------------------------------------------------------

// AArch64: hand-assembled words at 0x400000, copy at 0x500000, trampoline 0x40 below.
// b imm26 = 0x14000000 | ((target - pc) >> 2 & 0x3ffffff).

constexpr uint64_t kA64Entry = 0x400000;
constexpr uint64_t kA64Copy = 0x500000;
constexpr uint64_t kA64Trampoline = kA64Copy - 0x40;

std::vector<uint8_t> a64_words(std::initializer_list<uint32_t> ws) {
  std::vector<uint8_t> out;
  for (uint32_t w : ws) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(w >> (8 * i)));
  }
  return out;
}

EntryPatch a64_plan(const std::vector<uint8_t>& fn, uint64_t trampoline = kA64Trampoline,
                    std::span<const CodeRange> parts = {}) {
  EntryPatchRequest req;
  req.function = fn;
  req.entry = kA64Entry;
  req.copy = kA64Copy;
  req.trampoline = trampoline;
  req.other_parts = parts;
  return arch::traits(Arch::AArch64).plan_entry_patch(req);
}

constexpr uint32_t kStp = 0xa9bf7bfd;     // stp x29, x30, [sp, #-16]!
constexpr uint32_t kMovFp = 0x910003fd;   // mov x29, sp
constexpr uint32_t kRet = 0xd65f03c0;     // ret
constexpr uint32_t kBtiC = 0xd503245f;    // bti c

TEST(EntryPatchAArch64, PlainFunction) {
  const EntryPatch p = a64_plan(a64_words({kStp, kMovFp, kRet}));
  ASSERT_TRUE(p.ok) << p.reason;
  EXPECT_EQ(p.patch_offset, 0u);
  EXPECT_EQ(p.window_length, 4u);
  EXPECT_EQ(p.original, a64_words({kStp}));
  EXPECT_EQ(p.patch, a64_words({0x1403fff0}));  // b +0xfffc0
  // stp, then b from 0x500004 back to 0x400004: -0x100000
  EXPECT_EQ(p.relocated, a64_words({kStp, 0x17fc0000}));
  EXPECT_EQ(p.moved_pcs, (std::vector<MovedPc>{{0, 0}}));
}

TEST(EntryPatchAArch64, BtiStaysAtTheEntry) {
  const EntryPatch p = a64_plan(a64_words({kBtiC, kStp, kMovFp, kRet}));
  ASSERT_TRUE(p.ok) << p.reason;
  EXPECT_EQ(p.patch_offset, 4u);
  EXPECT_EQ(p.window_length, 8u);
  EXPECT_EQ(p.patch, a64_words({0x1403ffef}));  // b from 0x400004: +0xfffbc
  EXPECT_EQ(p.relocated, a64_words({kStp, 0x17fc0001}));  // back to 0x400008: -0xffffc
}

TEST(EntryPatchAArch64, Refusals) {
  // bti c; add w0, w0, #1; subs w1, w1, #1; b.ne 0x400004; ret
  EXPECT_EQ(a64_plan(a64_words({kBtiC, 0x11000400, 0x71000421, 0x54ffffc1, kRet})).reason,
            "branch into the patched bytes at 0x400004 from 0x40000c");
  EXPECT_EQ(a64_plan(a64_words({0x94000010, kRet})).reason, "call in the patched bytes");  // bl
  EXPECT_EQ(a64_plan(a64_words({kRet})).reason, "return in the patched bytes");
  EXPECT_EQ(a64_plan(a64_words({kBtiC})).reason, "function too short (4 bytes)");
  // mov x16, x0; br x16: without bti nothing says where it lands.
  EXPECT_EQ(a64_plan(a64_words({0xaa0003f0, 0xd61f0200})).reason,
            "indirect jump at 0x400004 (targets unknown)");
  EXPECT_TRUE(a64_plan(a64_words({kBtiC, 0xaa0003f0, 0xd61f0200})).ok);
  EXPECT_EQ(a64_plan(a64_words({kStp, kRet}), kA64Entry + 0x10000000).reason,
            "trampoline out of reach of a b");
  // A cold part at 0x600000: b 0x400004
  const std::vector<uint8_t> cold = a64_words({0x17f80001});
  const CodeRange part{cold, 0x600000};
  EXPECT_EQ(a64_plan(a64_words({kBtiC, kStp, kRet}), kA64Trampoline, {&part, 1}).reason,
            "branch into the patched bytes at 0x400004 from 0x600000");
  EXPECT_TRUE(a64_plan(a64_words({kStp, kRet}), kA64Trampoline, {&part, 1}).ok);
}

}  // namespace
}  // namespace ft::arch
