// Stack walks in the process (ft_recorder_walk, core/recorder.h) over the unwind
// index functracer builds (UnwindIndexBuilder, core/unwind_index.h): on a stack laid
// out by hand, and on this test's own stack, compared with glibc's backtrace() (which
// walks with libgcc's unwinder: an implementation independent of ours).
#include <execinfo.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <vector>

#include "common/load_bias.h"
#include "core/elf_image.h"
#include "core/module_map.h"
#include "core/recorder.h"
#include "core/recorder_image.h"
#include "tests/unit/recorder_image_fixture.h"
#include "core/unwind_index.h"

extern "C" void ft_fixture_with_entry_state(void (*fn)(uint64_t sp, uint64_t bp, void* arg), void* arg);

namespace ft {
namespace {

using WalkFn = int (*)(const ft_rec_unwind_index*, uint64_t, uint64_t, uint64_t, uint64_t, const ft_rec_frame*,
                       uint64_t, uint64_t*, int, int*);

std::vector<uint8_t> index_of(std::vector<ft_rec_unwind_module> mods, std::vector<ft_rec_unwind_row> rows) {
  ft_rec_unwind_index h{mods.size(), rows.size()};
  std::vector<uint8_t> out(sizeof h + mods.size() * sizeof(ft_rec_unwind_module) + rows.size() * sizeof(ft_rec_unwind_row));
  std::memcpy(out.data(), &h, sizeof h);
  std::memcpy(out.data() + sizeof h, mods.data(), mods.size() * sizeof(ft_rec_unwind_module));
  std::memcpy(out.data() + sizeof h + mods.size() * sizeof(ft_rec_unwind_module), rows.data(),
              rows.size() * sizeof(ft_rec_unwind_row));
  return out;
}

class Walks : public ::testing::TestWithParam<bool> {
 protected:
  WalkFn walk() const { return GetParam() ? image_.at<WalkFn>(recorder_image::kWalkOffset) : ft_recorder_walk; }
  LoadedRecorderImage image_;
};

// A stack laid out by hand. Code at 0x1000..0x3000 (one module): functions A
// (0x1000..0x1800: CFA = rsp + 16, return address at CFA - 8: one push, like a
// frame-pointer-less function with one saved register), B (0x1800..0x2000: CFA =
// rbp + 16, rbp saved at CFA - 16, return address at CFA - 8: a frame-pointer
// function), C (0x2000..0x2800: outermost), then no rule.
TEST_P(Walks, FollowsRulesOnAStackLaidOutByHand) {
  auto idx = index_of({{0x1000, 0x3000, 0, 4}},
                      {{0x1000, 16, -1, 0, 0, 0},
                       {0x1800, 16, -1, -2, FT_REC_CFA_BP | FT_REC_BP_SAVED, 0},
                       {0x2000, 0, 0, 0, FT_REC_OUTERMOST, 0},
                       {0x2800, 0, 0, 0, FT_REC_NO_RULE, 0}});
  // The walk starts at the entry of a function called from A at 0x1100.
  alignas(16) uint64_t stack[16] = {};
  uint64_t base = reinterpret_cast<uint64_t>(stack);
  stack[0] = 0x1100;   // [sp]: return into A
  stack[1] = 0xdead;   // A's pushed register; A's CFA = (sp+8) + 16 = &stack[3]
  stack[2] = 0x1900;   // A's return address (CFA - 8): into B
  // B's frame: rbp (unchanged since B's prologue) = &stack[6]; B's CFA = rbp + 16 = &stack[8]
  stack[6] = 0x7777;   // B's caller's rbp (CFA - 16)
  stack[7] = 0x2100;   // B's return address: into C, which is outermost
  uint64_t out[8] = {};
  int complete = -1;
  int n = walk()(reinterpret_cast<const ft_rec_unwind_index*>(idx.data()), base, base + 6 * 8, base + sizeof stack, 0,
                 nullptr, 0, out, 8, &complete);
  ASSERT_EQ(n, 3);
  EXPECT_EQ(out[0], 0x1100u);
  EXPECT_EQ(out[1], 0x1900u);
  EXPECT_EQ(out[2], 0x2100u);
  EXPECT_EQ(complete, 1);

  // B's return address is the return stub: the hooked frame's real one is given, and
  // the walk goes on from there.
  stack[7] = 0x7fee0000;
  ft_rec_frame hooked{base + 7 * 8, 0x2100, 3};
  n = walk()(reinterpret_cast<const ft_rec_unwind_index*>(idx.data()), base, base + 6 * 8, base + sizeof stack,
             0x7fee0000, &hooked, 1, out, 8, &complete);
  ASSERT_EQ(n, 3);
  EXPECT_EQ(out[2], 0x2100u);
  EXPECT_EQ(complete, 1);

  // The stack's end cuts the walk: B's slots lie beyond it.
  n = walk()(reinterpret_cast<const ft_rec_unwind_index*>(idx.data()), base, base + 6 * 8, base + 6 * 8, 0, nullptr,
             0, out, 8, &complete);
  EXPECT_EQ(n, 2);
  EXPECT_EQ(complete, 0);

  // A return address without a rule ends the walk there.
  stack[0] = 0x2900;
  n = walk()(reinterpret_cast<const ft_rec_unwind_index*>(idx.data()), base, base + 6 * 8, base + sizeof stack, 0,
             nullptr, 0, out, 8, &complete);
  EXPECT_EQ(n, 1);
  EXPECT_EQ(complete, 0);
}

// This process's own code: every executable mapping of an ELF file.
std::vector<uint8_t> own_index(UnwindIndexBuilder& b, std::vector<std::unique_ptr<ElfImage>>& keep) {
  auto maps = read_maps(::getpid());
  EXPECT_TRUE(static_cast<bool>(maps));
  for (const auto& e : *maps) {
    if (!e.x || e.path.empty() || e.path[0] != '/') continue;
    auto img = ElfImage::open(e.path);
    if (!img) continue;
    auto bias = load_bias((*img)->is_dyn(), (*img)->segments(), e.start, e.offset);
    if (!bias) continue;
    b.add_module(**img, *bias, e.start, e.end);
    keep.push_back(std::move(*img));
  }
  return b.build();
}

uint64_t stack_end() {
  auto maps = read_maps(::getpid());
  uint64_t here = reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  for (const auto& e : *maps)
    if (here >= e.start && here < e.end) return e.end;
  return 0;
}

struct Captured {
  WalkFn walk = nullptr;
  const ft_rec_unwind_index* index = nullptr;
  uint64_t end = 0;
  std::vector<uint64_t> ours, glibc;
  int complete = 0;
};

void walk_now(uint64_t sp, uint64_t bp, void* arg) {
  Captured& c = *static_cast<Captured*>(arg);
  uint64_t out[64];
  int n = c.walk(c.index, sp, bp, c.end, 0, nullptr, 0, out, 64, &c.complete);
  c.ours.assign(out, out + n);
}

// Walks from the entry of ft_fixture_with_entry_state (called here), then asks glibc.
[[gnu::noinline]] void level1(Captured& c) {
  ft_fixture_with_entry_state(walk_now, &c);
  void* frames[64];
  int m = ::backtrace(frames, 64);
  for (int i = 0; i < m; ++i) c.glibc.push_back(reinterpret_cast<uint64_t>(frames[i]));
  asm volatile("" ::: "memory");
}
[[gnu::noinline]] void level2(Captured& c) {
  level1(c);
  asm volatile("" ::: "memory");
}
[[gnu::noinline]] void level3(Captured& c) {
  level2(c);
  asm volatile("" ::: "memory");
}

TEST_P(Walks, GivesTheFramesGlibcsBacktraceGivesOnThisStack) {
  UnwindIndexBuilder b;
  std::vector<std::unique_ptr<ElfImage>> keep;
  auto idx = own_index(b, keep);
  ASSERT_GT(b.stats().rows, 100u);
  Captured c;
  c.walk = walk();
  c.index = reinterpret_cast<const ft_rec_unwind_index*>(idx.data());
  c.end = stack_end();
  ASSERT_NE(c.end, 0u);
  level3(c);
  // Both start in level1 (at different calls); from level2 on they name the same
  // return addresses, through the test framework, main and the C library's start.
  ASSERT_GE(c.glibc.size(), 6u);
  ASSERT_GE(c.ours.size(), 2u);
  size_t same = 1;
  while (same < c.ours.size() && same < c.glibc.size() && c.ours[same] == c.glibc[same]) ++same;
  EXPECT_EQ(same, c.glibc.size()) << "frames agree up to " << same << " of glibc's " << c.glibc.size()
                                  << " (ours: " << c.ours.size() << ")";
  EXPECT_EQ(c.ours.size(), c.glibc.size());
}

INSTANTIATE_TEST_SUITE_P(NativeAndImage, Walks, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Image" : "Native"; });

}  // namespace
}  // namespace ft
