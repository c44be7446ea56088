// The guard's trap table (core/trap_table.h) as functracer fills it and as the
// program's SIGTRAP handler (ft_recorder_trap, core/recorder.c) reads it once
// functracer is gone: natively compiled and as the image functracer copies into
// processes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/recorder.h"
#include "core/recorder_image.h"
#include "core/recorder_region.h"
#include "core/trap_table.h"
#include "tests/unit/recorder_image_fixture.h"

namespace ft {
namespace {

constexpr uint64_t kRing = 4096;

// n addresses whose entries share one chain of the table (same first slot).
std::vector<uint64_t> colliding(size_t n) {
  std::vector<uint64_t> out;
  uint64_t first = ft_rec_addr_hash(0x400000) & (FT_REC_TRAPS - 1);
  for (uint64_t a = 0x400000; out.size() < n; a += 1)
    if ((ft_rec_addr_hash(a) & (FT_REC_TRAPS - 1)) == first) out.push_back(a);
  return out;
}

// What the program's own SIGTRAP handler saw (the handler forwards to it).
int g_forwarded = 0;
void program_handler(int, siginfo_t*, void*) { ++g_forwarded; }

using TrapFn = void (*)(int, void*, void*, ft_rec_header*);

class TrapTable : public ::testing::TestWithParam<bool> {
 protected:
  TrapTable()
      : size_(RecorderRegion::region_size(kRing)),
        base_(::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)),
        region_(RecorderRegion::create(base_, kRing, own_.addr())) {
    g_ = ft_rec_guard_of(region_.header());
    g_->installed = 1;
    g_->old_action.handler = reinterpret_cast<uint64_t>(&program_handler);
    g_->old_action.flags = SA_SIGINFO;
    g_forwarded = 0;
    if (GetParam()) trap_ = image_.at<TrapFn>(recorder_image::kTrapOffset);
  }
  ~TrapTable() override { ::munmap(base_, size_); }

  const ft_rec_trap* find(uint64_t at) const { return ft_rec_trap_find(g_, at); }

  // The handler, for an int3 the thread ran just before `pc`; the pc it sends the
  // thread on to.
  uint64_t trap_at(uint64_t pc) {
    siginfo_t si{};
    si.si_signo = SIGTRAP;
    si.si_code = SI_KERNEL;
    ucontext_t uc{};
    uc.uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(pc);
    uc.uc_mcontext.gregs[REG_RSP] = reinterpret_cast<greg_t>(&stack_[8]);
    trap_(SIGTRAP, &si, &uc, region_.header());
    return static_cast<uint64_t>(uc.uc_mcontext.gregs[REG_RIP]);
  }

  size_t size_;
  void* base_;
  OwnPart own_;
  RecorderRegion region_;
  ft_rec_guard* g_ = nullptr;
  std::vector<uint32_t> slots_;
  LoadedRecorderImage image_;
  TrapFn trap_ = ft_recorder_trap;
  uint64_t stack_[16] = {};
};

TEST_P(TrapTable, EntriesAreFoundAndUpdatedInPlace) {
  trap_table::put(g_, slots_, 0x401000, 0x7000, 0);
  trap_table::put(g_, slots_, 0x401000, 0x7100, 0);
  ASSERT_NE(find(0x401000), nullptr);
  EXPECT_EQ(find(0x401000)->resume, 0x7100u);
  EXPECT_EQ(find(0x401001), nullptr);
  EXPECT_EQ(g_->ntraps, 1u);
  EXPECT_EQ(slots_.size(), 1u);
}

TEST_P(TrapTable, TakingAnEntryOutLeavesThoseAfterItInItsChainFound) {
  auto keys = colliding(4);
  for (uint64_t k : keys) trap_table::put(g_, slots_, k, k + 0x100, 0);
  std::vector<uint64_t> keep = {keys[0], keys[2], keys[3]};
  std::sort(keep.begin(), keep.end());
  trap_table::keep_only(g_, slots_, keep);
  EXPECT_EQ(find(keys[1]), nullptr);
  for (uint64_t k : keep) {
    ASSERT_NE(find(k), nullptr) << std::hex << k;
    EXPECT_EQ(find(k)->resume, k + 0x100);
  }
  // The next trap in the chain takes the place taken out; nothing grows.
  auto more = colliding(5);
  trap_table::put(g_, slots_, more[4], 0x9999, 0);
  EXPECT_EQ(find(more[4])->resume, 0x9999u);
  EXPECT_EQ(g_->ntraps, 4u);
  EXPECT_EQ(slots_.size(), 4u);
  for (uint64_t k : keep) EXPECT_NE(find(k), nullptr);
  trap_table::clear(g_, slots_);
  for (uint64_t k : more) EXPECT_EQ(find(k), nullptr);
  EXPECT_EQ(g_->ntraps, 0u);
}

TEST_P(TrapTable, AStopPathTrapIsSentOnToItsResumeAddress) {
  trap_table::put(g_, slots_, 0x5000, 0x5100, 0);
  EXPECT_EQ(trap_at(0x5001), 0x5100u);
  EXPECT_EQ(g_forwarded, 0);
  EXPECT_EQ(g_->gone, 1u);
}

// functracer died with the thread's stop taken in: the kernel let it go on past the
// trap without the signal, onto the int3 after it.
TEST_P(TrapTable, AnInt3RightAfterATrapOfOursIsHandledAsThatTrap) {
  trap_table::put(g_, slots_, 0x5000, 0x5100, 0);
  EXPECT_EQ(trap_at(0x5002), 0x5100u);
  EXPECT_EQ(g_forwarded, 0);
}

TEST_P(TrapTable, AReturnTrapFallenThroughFindsTheRealReturnAddress) {
  trap_table::put(g_, slots_, 0x6000, 0, uint64_t{FT_REC_TRAP_RETURN} << 8);
  // The slot of the replaced return address: just below sp at the trap.
  uint64_t slot = reinterpret_cast<uint64_t>(&stack_[7]);
  uint64_t i = ft_rec_addr_hash(slot) & (FT_REC_RETURNS - 1);
  g_->returns[i].real_ret = 0x123456;
  g_->returns[i].slot = slot;
  g_->nreturns = 1;
  EXPECT_EQ(trap_at(0x6002), 0x123456u);
  EXPECT_EQ(g_forwarded, 0);
}

// Past an entry breakpoint is the program's own code: an int3 there is its own.
TEST_P(TrapTable, AnInt3AfterAnEntryBreakpointIsTheProgramsOwn) {
  static uint8_t code[2] = {0xcc, 0xcc};
  auto at = reinterpret_cast<uint64_t>(&code[0]);
  trap_table::put(g_, slots_, at, 0, 0x55 | uint64_t{FT_REC_TRAP_RESTORE} << 8);
  EXPECT_EQ(trap_at(at + 2), at + 2);
  EXPECT_EQ(g_forwarded, 1);
}

TEST_P(TrapTable, AnInt3NoTrapOfOursIsNextToGoesToTheProgram) {
  static uint8_t code[1] = {0xcc};
  trap_table::put(g_, slots_, 0x5000, 0x5100, 0);
  auto at = reinterpret_cast<uint64_t>(&code[0]);
  EXPECT_EQ(trap_at(at + 1), at + 1);
  EXPECT_EQ(g_forwarded, 1);
}

INSTANTIATE_TEST_SUITE_P(NativeAndImage, TrapTable, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "Image" : "Native"; });

}  // namespace
}  // namespace ft
