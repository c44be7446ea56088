// The in-process recorder (core/recorder.h), twice over: compiled natively, and as the
// freestanding image functracer copies into traced processes (loaded here into
// executable memory and called through its entry offsets). Both must do exactly what
// the protocol says, checked by reading the region with RecorderRegion.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <vector>

#include "core/recorder.h"
#include "core/recorder_image.h"
#include "core/recorder_region.h"
#include "tests/unit/recorder_image_fixture.h"

namespace ft {
namespace {

constexpr uint64_t kRing = 4096;
constexpr uint64_t kTp = 0x7f12345000;
constexpr uint64_t kStub = 0x7fee00001000;  // the return stub's address, as the region says

using EntryFn = uint64_t (*)(ft_rec_header*, uint64_t, const uint64_t*, uint64_t*, uint64_t, uint64_t);
using ReturnFn = uint64_t (*)(ft_rec_header*, uint64_t, const uint64_t*, uint64_t, uint64_t);

struct Recorder {
  EntryFn entry;
  ReturnFn ret;
};

class RecorderTest : public ::testing::TestWithParam<bool> {
 protected:
  RecorderTest()
      : size_(RecorderRegion::region_size(kRing)),
        base_(::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)),
        region_(RecorderRegion::create(base_, kRing, own_.addr())) {
    region_.header()->return_stub = kStub;
    rec_ = GetParam() ? Recorder{image_.at<EntryFn>(recorder_image::kEntryOffset), image_.at<ReturnFn>(recorder_image::kReturnOffset)}
                   : Recorder{ft_recorder_entry, ft_recorder_return};
  }
  ~RecorderTest() override { ::munmap(base_, size_); }

  std::vector<RecordedEvent> take(uint32_t ring) {
    std::vector<RecordedEvent> out;
    words_.clear();
    region_.drain(ring, [&](const RecordedEvent& ev) {
      out.push_back(ev);
      words_.emplace_back(ev.words.begin(), ev.words.end());
      out.back().words = {};
    });
    for (size_t i = 0; i < out.size(); ++i) out[i].words = words_[i];
    return out;
  }

  ft_rec_header* h() { return region_.header(); }

  LoadedRecorderImage image_;
  uint64_t size_;
  void* base_;
  OwnPart own_;
  RecorderRegion region_;
  Recorder rec_{};
  std::vector<std::vector<uint64_t>> words_;
};

uint64_t site(uint32_t fn, bool hook, unsigned nargs) {
  return fn | (hook ? FT_REC_SITE_RETURN : 0) | uint64_t{nargs} << FT_REC_SITE_NARGS_SHIFT;
}

TEST_P(RecorderTest, ACallIsRecordedWithItsArgumentsAndItsReturnHooked) {
  uint32_t ring = *region_.add_thread(kTp);
  uint64_t stack[4] = {0x555555551234, 0, 0, 0};  // [0]: the return address at the entry
  const uint64_t args[6] = {1, 2, 3, 4, 5, 6};
  EXPECT_EQ(rec_.entry(h(), site(42, true, 3), args, &stack[0], kTp, 1000), FT_REC_PASS);
  EXPECT_EQ(stack[0], kStub);  // the return comes to the stub now
  auto evs = take(ring);
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].kind, FT_REC_CALL);
  EXPECT_EQ(evs[0].fn, 42u);
  EXPECT_EQ(evs[0].flags, FT_REC_HOOKED | 3u << 8);  // hooked, three arguments
  EXPECT_EQ(evs[0].tsc, 1000u);
  EXPECT_EQ(evs[0].words.size(), 5u);
  EXPECT_EQ(evs[0].words[FT_REC_CALL_SLOT], reinterpret_cast<uint64_t>(&stack[0]));
  EXPECT_EQ(evs[0].words[FT_REC_CALL_RETURN_TO], 0x555555551234u);
  EXPECT_EQ(evs[0].words[FT_REC_CALL_ARGS + 2], 3u);

  // The function returns: ret popped the slot, sp is one word above it.
  const uint64_t rets[3] = {0xabc, 0xdef, 0x4010000000000000};
  uint64_t sp_after = reinterpret_cast<uint64_t>(&stack[1]);
  EXPECT_EQ(rec_.ret(h(), sp_after, rets, kTp, 2000), 0x555555551234u);
  evs = take(ring);
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].kind, FT_REC_RETURN);
  EXPECT_EQ(evs[0].fn, 42u);
  EXPECT_EQ(evs[0].tsc, 2000u);
  ASSERT_EQ(evs[0].words.size(), size_t{FT_REC_RETURN_WORDS});
  EXPECT_EQ(evs[0].words[FT_REC_RETURN_VALUE], 0xabcu);
  EXPECT_EQ(evs[0].words[FT_REC_RETURN_VALUE2], 0xdefu);
  EXPECT_EQ(evs[0].words[FT_REC_RETURN_FP], 0x4010000000000000u);
  EXPECT_EQ(own_.stack(ring).depth, 0u);
}

TEST_P(RecorderTest, NestedCallsReturnInnermostFirstAndAnOutOfOrderReturnTakesTheStopPath) {
  uint32_t ring = *region_.add_thread(kTp);
  uint64_t stack[8] = {};
  stack[6] = 0x401000;  // outer's return address (higher on the stack)
  stack[2] = 0x402000;  // inner's
  const uint64_t args[6] = {};
  ASSERT_EQ(rec_.entry(h(), site(1, true, 0), args, &stack[6], kTp, 1), FT_REC_PASS);
  ASSERT_EQ(rec_.entry(h(), site(2, true, 0), args, &stack[2], kTp, 2), FT_REC_PASS);
  const uint64_t rets[3] = {};
  // A return through the outer slot while the inner frame is open (a longjmp): not
  // for the recorder to decide.
  EXPECT_EQ(rec_.ret(h(), reinterpret_cast<uint64_t>(&stack[7]), rets, kTp, 3), 0u);
  EXPECT_EQ(rec_.ret(h(), reinterpret_cast<uint64_t>(&stack[3]), rets, kTp, 4), 0x402000u);
  EXPECT_EQ(rec_.ret(h(), reinterpret_cast<uint64_t>(&stack[7]), rets, kTp, 5), 0x401000u);
  std::vector<std::pair<uint16_t, uint32_t>> seen;
  for (const auto& ev : take(ring)) seen.emplace_back(ev.kind, ev.fn);
  EXPECT_EQ(seen, (std::vector<std::pair<uint16_t, uint32_t>>{
                      {FT_REC_CALL, 1}, {FT_REC_CALL, 2}, {FT_REC_RETURN, 2}, {FT_REC_RETURN, 1}}));
}

TEST_P(RecorderTest, AThreadWithoutARingTakesTheStopPathAndIsCounted) {
  uint64_t slot = 0x401000;
  const uint64_t args[6] = {};
  EXPECT_EQ(rec_.entry(h(), site(1, true, 2), args, &slot, kTp, 1), FT_REC_STOP);
  EXPECT_EQ(rec_.entry(h(), site(1, true, 2), args, &slot, 0, 1), FT_REC_STOP);  // no thread pointer yet
  EXPECT_EQ(slot, 0x401000u);  // untouched
  EXPECT_EQ(h()->no_ring, 2u);
  const uint64_t rets[3] = {};
  EXPECT_EQ(rec_.ret(h(), 0x7ffc0000, rets, kTp, 2), 0u);
}

TEST_P(RecorderTest, NothingIsRecordedWhileDisabled) {
  uint32_t ring = *region_.add_thread(kTp);
  h()->enabled = 0;
  uint64_t slot = 0x401000;
  const uint64_t args[6] = {};
  EXPECT_EQ(rec_.entry(h(), site(1, true, 2), args, &slot, kTp, 1), FT_REC_PASS);
  EXPECT_EQ(slot, 0x401000u);
  EXPECT_TRUE(take(ring).empty());
}

TEST_P(RecorderTest, FramesDeeperThanTheRecorderKeepsTakeTheStopPath) {
  uint32_t ring = *region_.add_thread(kTp);
  std::vector<uint64_t> stack(FT_REC_MAX_FRAMES + 2, 0x401000);
  const uint64_t args[6] = {};
  for (unsigned i = 0; i < FT_REC_MAX_FRAMES; ++i) {
    ASSERT_EQ(rec_.entry(h(), site(1, true, 0), args, &stack[stack.size() - 1 - i], kTp, i), FT_REC_PASS) << i;
    take(ring);  // keep the ring from filling
  }
  EXPECT_EQ(rec_.entry(h(), site(1, true, 0), args, &stack[1], kTp, 0), FT_REC_STOP);
  EXPECT_EQ(stack[1], 0x401000u);
  EXPECT_EQ(own_.stack(ring).depth, uint64_t{FT_REC_MAX_FRAMES});
  // A call whose return is not wanted is still recorded.
  EXPECT_EQ(rec_.entry(h(), site(3, false, 0), args, &stack[1], kTp, 0), FT_REC_PASS);
  EXPECT_EQ(take(ring).size(), 1u);
}

TEST_P(RecorderTest, AFullRingSendsTheCallToTheStopPath) {
  uint32_t ring = *region_.add_thread(kTp);
  const uint64_t args[6] = {};
  uint64_t slot = 0x401000;
  int recorded = 0;
  while (rec_.entry(h(), site(1, false, 6), args, &slot, kTp, 0) == FT_REC_PASS) ++recorded;
  EXPECT_GT(recorded, 0);
  EXPECT_EQ(rec_.entry(h(), site(2, true, 6), args, &slot, kTp, 0), FT_REC_STOP);
  EXPECT_EQ(slot, 0x401000u);  // not hooked: the stop path hooks it
  EXPECT_EQ(own_.stack(ring).depth, 0u);
  EXPECT_EQ(region_.lost(ring), 0u);  // nothing lost: functracer empties the ring at the stop
  EXPECT_EQ(take(ring).size(), static_cast<size_t>(recorded));
  EXPECT_EQ(rec_.entry(h(), site(2, true, 6), args, &slot, kTp, 0), FT_REC_PASS);
}

INSTANTIATE_TEST_SUITE_P(NativeAndImage, RecorderTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Image" : "Native"; });

}  // namespace
}  // namespace ft
