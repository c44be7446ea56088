// The whole in-process path, without a tracer: functions whose entries are patched
// with a jump to an entry trampoline (arch/recorder_stubs.h), the recorder image
// (core/recorder.h) they call, the shared return stub, and the region they record
// into — all in this test's own memory, as functracer lays them out in a process.
// The stop paths trap (SIGTRAP); a handler here does what functracer does there.
#include <gtest/gtest.h>
#include <asm/prctl.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <vector>

#include "arch/recorder_stubs.h"
#include "core/recorder.h"
#include "core/recorder_image.h"
#include "core/recorder_region.h"
#include "tests/unit/recorder_image_fixture.h"

extern "C" {
long ft_fixture_add3(long, long, long);
long ft_fixture_outer(long (*)(long, long, long), long, long, long);
extern const uint8_t ft_fixture_add3_end[], ft_fixture_outer_end[];
}

namespace ft {
namespace {

constexpr uint64_t kRing = 1 << 16;
constexpr size_t kWindow = 5;  // push rbp; mov rbp, rsp; push rbx
constexpr uint32_t kAdd3 = 1, kOuter = 2;

uint64_t fs_base() {
  uint64_t v = 0;
  ::syscall(SYS_arch_prctl, ARCH_GET_FS, &v);
  return v;
}

using Add3 = long (*)(long, long, long);
using Outer = long (*)(Add3, long, long, long);

// What the SIGTRAP handler knows: where the traps are and where to resume.
struct Traps {
  uint64_t add3_trap = 0, add3_body = 0, outer_trap = 0, outer_body = 0, stub_trap = 0;
  ft_rec_header* region = nullptr;
  ft_rec_own* own = nullptr;
  int entries = 0, returns = 0;
} g_traps;

void on_trap(int, siginfo_t*, void* uc_v) {
  auto* uc = static_cast<ucontext_t*>(uc_v);
  greg_t& rip = uc->uc_mcontext.gregs[REG_RIP];
  uint64_t at = static_cast<uint64_t>(rip) - 1;  // the int3's own address
  if (at == g_traps.add3_trap || at == g_traps.outer_trap) {
    // functracer handles the entry with a stop, then the displaced instructions run.
    ++g_traps.entries;
    rip = static_cast<greg_t>(at == g_traps.add3_trap ? g_traps.add3_body : g_traps.outer_body);
  } else if (at == g_traps.stub_trap) {
    // As at the trampoline: the innermost hooked frame returns to its real address.
    ++g_traps.returns;
    ft_rec_stack& st = g_traps.own->stacks[0];
    ft_rec_frame* f = st.frames + (st.depth - 1);
    --st.depth;
    rip = static_cast<greg_t>(f->real_ret);
  } else {
    std::abort();
  }
}

// Both ways of reading the thread pointer: rdfsbase (where the kernel enables it) and
// the thread control block's word at fs:0.
class RecorderStubsTest : public ::testing::TestWithParam<arch::ThreadPointerRead> {
 protected:
  void SetUp() override {
    if (GetParam() == arch::ThreadPointerRead::kRegister && !(::getauxval(AT_HWCAP2) & 2))  // HWCAP2_FSGSBASE
      GTEST_SKIP() << "SKIPPED: rdfsbase is not enabled on this machine (kernel < 5.9, or a CPU or hypervisor "
                      "without FSGSBASE): only the fs:0 stubs are run";
    region_size_ = RecorderRegion::region_size(kRing);
    region_mem_ = ::mmap(nullptr, region_size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(region_mem_, MAP_FAILED);
    region_.emplace(RecorderRegion::create(region_mem_, kRing, own_.addr()));
    code_ = static_cast<uint8_t*>(::mmap(nullptr, kCodeSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(code_, MAP_FAILED);
    auto addr = [&](size_t off) { return reinterpret_cast<uint64_t>(code_ + off); };
    const auto& stubs = arch::kX86_64RecorderStubs;
    std::memcpy(code_, recorder_image::kCode, sizeof recorder_image::kCode);
    uint64_t region = reinterpret_cast<uint64_t>(region_mem_);
    auto stub = stubs.return_stub(region, addr(recorder_image::kReturnOffset), GetParam());
    std::memcpy(code_ + kStubAt, stub.code.data(), stub.code.size());
    region_->header()->return_stub = addr(kStubAt);
    g_traps = {};
    g_traps.region = region_->header();
    g_traps.own = own_.get();
    g_traps.stub_trap = addr(kStubAt + stub.slow_trap);
    add3_ = reinterpret_cast<Add3>(place(reinterpret_cast<const void*>(ft_fixture_add3), ft_fixture_add3_end, kAdd3At, kAdd3TrampAt, kAdd3, 3,
                                         g_traps.add3_trap, g_traps.add3_body));
    outer_ = reinterpret_cast<Outer>(place(reinterpret_cast<const void*>(ft_fixture_outer), ft_fixture_outer_end,
                                           kOuterAt, kOuterTrampAt, kOuter, 4, g_traps.outer_trap, g_traps.outer_body));
    ASSERT_EQ(::mprotect(code_, kCodeSize, PROT_READ | PROT_EXEC), 0);
    struct sigaction sa {};
    sa.sa_sigaction = on_trap;
    sa.sa_flags = SA_SIGINFO;
    ASSERT_EQ(::sigaction(SIGTRAP, &sa, &old_), 0);
  }
  void TearDown() override {
    if (code_) {
      ::sigaction(SIGTRAP, &old_, nullptr);
      ::munmap(code_, kCodeSize);
      ::munmap(region_mem_, region_size_);
    }
  }

  // Copies fn to code_+at, writes its trampoline at code_+tramp_at, and patches the
  // copy's entry with a jump there. Returns the copy's address.
  uint8_t* place(const void* fn, const void* end, size_t at, size_t tramp_at, uint32_t id, unsigned nargs,
                 uint64_t& trap, uint64_t& body) {
    auto* src = static_cast<const uint8_t*>(fn);
    size_t len = static_cast<size_t>(static_cast<const uint8_t*>(end) - src);
    uint8_t* copy = code_ + at;
    std::memcpy(copy, src, len);
    uint64_t site = id | FT_REC_SITE_RETURN | uint64_t{nargs} << FT_REC_SITE_NARGS_SHIFT;
    auto t = arch::kX86_64RecorderStubs.entry_trampoline(
        reinterpret_cast<uint64_t>(code_ + tramp_at), reinterpret_cast<uint64_t>(region_mem_), site,
        reinterpret_cast<uint64_t>(code_ + recorder_image::kEntryOffset), {copy, kWindow},
        reinterpret_cast<uint64_t>(copy + kWindow), 0, {}, GetParam());
    std::memcpy(code_ + tramp_at, t.code.data(), t.code.size());
    trap = reinterpret_cast<uint64_t>(code_ + tramp_at + t.slow_trap);
    body = reinterpret_cast<uint64_t>(code_ + tramp_at + t.body);
    int32_t rel = static_cast<int32_t>(static_cast<int64_t>(tramp_at) - static_cast<int64_t>(at + 5));
    copy[0] = 0xe9;
    std::memcpy(copy + 1, &rel, 4);
    return copy;
  }

  struct Ev {
    uint16_t kind;
    uint32_t fn;
    std::vector<uint64_t> words;
    uint64_t tsc;
  };
  std::vector<Ev> take(uint32_t ring) {
    std::vector<Ev> out;
    region_->drain(ring, [&](const RecordedEvent& e) {
      out.push_back({e.kind, e.fn, {e.words.begin(), e.words.end()}, e.tsc});
    });
    return out;
  }

  static constexpr size_t kCodeSize = 1 << 16;
  static constexpr size_t kStubAt = 0x2000, kAdd3TrampAt = 0x3000, kOuterTrampAt = 0x3800;
  static constexpr size_t kAdd3At = 0x8000, kOuterAt = 0x9000;
  uint64_t region_size_ = 0;
  void* region_mem_ = nullptr;
  OwnPart own_;
  std::optional<RecorderRegion> region_;
  uint8_t* code_ = nullptr;
  Add3 add3_ = nullptr;
  Outer outer_ = nullptr;
  struct sigaction old_ {};
};

TEST_P(RecorderStubsTest, CallsAndReturnsAreRecordedWithoutATrap) {
  uint32_t ring = *region_->add_thread(fs_base());
  EXPECT_EQ(outer_(add3_, 1, 2, 3), 7);
  EXPECT_EQ(g_traps.entries + g_traps.returns, 0);
  auto evs = take(ring);
  ASSERT_EQ(evs.size(), 4u);
  EXPECT_EQ(evs[0].kind, FT_REC_CALL);
  EXPECT_EQ(evs[0].fn, kOuter);
  EXPECT_EQ(evs[0].words[FT_REC_CALL_ARGS + 0], reinterpret_cast<uint64_t>(add3_));
  EXPECT_EQ(evs[0].words[FT_REC_CALL_ARGS + 3], 3u);
  EXPECT_EQ(evs[1].kind, FT_REC_CALL);
  EXPECT_EQ(evs[1].fn, kAdd3);
  EXPECT_EQ(evs[1].words.size(), 2u + 3);
  EXPECT_EQ(evs[1].words[FT_REC_CALL_ARGS + 0], 1u);
  EXPECT_EQ(evs[1].words[FT_REC_CALL_ARGS + 1], 2u);
  EXPECT_EQ(evs[1].words[FT_REC_CALL_ARGS + 2], 3u);
  // add3 was called from inside outer: its return address is in outer's copy.
  uint64_t ret = evs[1].words[FT_REC_CALL_RETURN_TO];
  EXPECT_GT(ret, reinterpret_cast<uint64_t>(outer_));
  EXPECT_LT(ret, reinterpret_cast<uint64_t>(outer_) + 64);
  EXPECT_EQ(evs[2].kind, FT_REC_RETURN);
  EXPECT_EQ(evs[2].fn, kAdd3);
  EXPECT_EQ(evs[2].words[FT_REC_RETURN_VALUE], 6u);
  EXPECT_EQ(evs[2].words[FT_REC_RETURN_TO], ret);
  EXPECT_EQ(evs[2].words[FT_REC_RETURN_SLOT], evs[1].words[FT_REC_CALL_SLOT]);
  EXPECT_EQ(evs[3].kind, FT_REC_RETURN);
  EXPECT_EQ(evs[3].fn, kOuter);
  EXPECT_EQ(evs[3].words[FT_REC_RETURN_VALUE], 7u);
  for (size_t i = 1; i < evs.size(); ++i) EXPECT_LE(evs[i - 1].tsc, evs[i].tsc);
  EXPECT_EQ(own_.stack(ring).depth, 0u);
}

TEST_P(RecorderStubsTest, ManyCallsKeepEveryResultAndRecordEachOnce) {
  uint32_t ring = *region_->add_thread(fs_base());
  size_t calls = 0, returns = 0;
  long sum = 0;
  for (long i = 0; i < 20000; ++i) {
    sum += outer_(add3_, i, 2 * i, 3);
    if (i % 100 == 0)
      region_->drain(ring, [&](const RecordedEvent& e) { (e.kind == FT_REC_CALL ? calls : returns)++; });
  }
  region_->drain(ring, [&](const RecordedEvent& e) { (e.kind == FT_REC_CALL ? calls : returns)++; });
  long want = 0;
  for (long i = 0; i < 20000; ++i) want += 3 * i + 4;
  EXPECT_EQ(sum, want);
  EXPECT_EQ(calls + region_->lost(ring), 40000u);
  EXPECT_EQ(calls, returns);
}

TEST_P(RecorderStubsTest, AThreadWithoutARingTrapsAndRunsTheDisplacedInstructions) {
  // No key for this thread: both entries take the stop path.
  EXPECT_EQ(outer_(add3_, 1, 2, 3), 7);
  EXPECT_EQ(g_traps.entries, 2);
  EXPECT_EQ(region_->header()->no_ring, 2u);
}

// Called by outer instead of add3: the thread loses its ring while outer's return is
// hooked, so the return stub cannot find the frame and takes the stop path.
RecorderRegion* g_region = nullptr;
long forget_thread(long a, long, long) {
  g_region->remove_thread(fs_base());
  return a;
}

TEST_P(RecorderStubsTest, AReturnTheRecorderCannotMatchTrapsWithTheReturnValueKept) {
  region_->add_thread(fs_base());
  g_region = &*region_;
  EXPECT_EQ(outer_(forget_thread, 41, 0, 0), 42);
  EXPECT_EQ(g_traps.returns, 1);
}

INSTANTIATE_TEST_SUITE_P(ThreadPointer, RecorderStubsTest,
                         ::testing::Values(arch::ThreadPointerRead::kRegister, arch::ThreadPointerRead::kSelfWord),
                         [](const auto& info) {
                           return info.param == arch::ThreadPointerRead::kRegister ? "rdfsbase" : "fs0";
                         });

}  // namespace
}  // namespace ft
