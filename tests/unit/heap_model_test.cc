// Tests of the heap model shared by memtrace, HeapReplay and LiveHeap
// (functracer/heap_model.h): the outcome of allocator calls, and what allocations and
// releases do to the live blocks.
#include "functracer/heap_model.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace ft::heap {
namespace {

TEST(HeapOutcome, AllocationReturnsBlockOrFails) {
  EXPECT_EQ(allocation_outcome(0x10), (Outcome{0, 0x10, false}));
  EXPECT_EQ(allocation_outcome(0), (Outcome{0, 0, true}));
}

TEST(HeapOutcome, Realloc) {
  // realloc(p, n) moving the block: a release and an allocation.
  EXPECT_EQ(realloc_outcome(0x10, 64, false, 0x20), (Outcome{0x10, 0x20, false}));
  // realloc(NULL, n): only an allocation.
  EXPECT_EQ(realloc_outcome(0, 64, false, 0x20), (Outcome{0, 0x20, false}));
  // realloc(p, 0) returning NULL: only a release.
  EXPECT_EQ(realloc_outcome(0x10, 0, false, 0), (Outcome{0x10, 0, false}));
  // A failed realloc leaves p live.
  EXPECT_EQ(realloc_outcome(0x10, 64, false, 0), (Outcome{0, 0, true}));
  // reallocarray whose nmemb * size overflowed to 0: a failure, not a release.
  EXPECT_EQ(realloc_outcome(0x10, 0, true, 0), (Outcome{0, 0, true}));
  // realloc(NULL, 0) returning NULL: a failure.
  EXPECT_EQ(realloc_outcome(0, 0, false, 0), (Outcome{0, 0, true}));
}

TEST(HeapOutcome, PosixMemalign) {
  EXPECT_EQ(posix_memalign_outcome(0, 0x1000), (Outcome{0, 0x1000, false}));
  EXPECT_EQ(posix_memalign_outcome(22, 0x1000), (Outcome{0, 0, true}));  // EINVAL
  EXPECT_EQ(posix_memalign_outcome(0, std::nullopt), (Outcome{0, 0, true}));  // unreadable
  EXPECT_EQ(posix_memalign_outcome(0, 0), (Outcome{0, 0, true}));
}

TEST(HeapModel, AllocAndFree) {
  HeapModel<> h;
  EXPECT_FALSE(h.alloc(0x10, 100));
  EXPECT_FALSE(h.alloc(0x20, 50));
  EXPECT_EQ(h.live_bytes(), 150u);
  auto r = h.release(0x10);
  EXPECT_EQ(r.kind, HeapModel<>::Release::kFreed);
  ASSERT_TRUE(r.block);
  EXPECT_EQ(r.block->size, 100u);
  EXPECT_EQ(h.live_bytes(), 50u);
  EXPECT_EQ(h.peak_bytes(), 150u);
  EXPECT_EQ(h.allocations(), 2u);
  EXPECT_EQ(h.releases(), 1u);
  EXPECT_FALSE(h.is_live(0x10));
}

TEST(HeapModel, DoubleAndUnknownReleases) {
  HeapModel<> remembering(true);
  remembering.alloc(0x10, 8);
  remembering.release(0x10);
  EXPECT_EQ(remembering.release(0x10).kind, HeapModel<>::Release::kDouble);
  EXPECT_EQ(remembering.release(0x30).kind, HeapModel<>::Release::kUnknown);
  EXPECT_EQ(remembering.releases(), 1u);
  // Allocated again: a later release is a release, the one after it a double.
  remembering.alloc(0x10, 8);
  EXPECT_EQ(remembering.release(0x10).kind, HeapModel<>::Release::kFreed);
  EXPECT_EQ(remembering.release(0x10).kind, HeapModel<>::Release::kDouble);
  // Without remembering releases, the post-processor's way, both are unknown.
  HeapModel<> plain;
  plain.alloc(0x10, 8);
  plain.release(0x10);
  auto again = plain.release(0x10);
  EXPECT_EQ(again.kind, HeapModel<>::Release::kUnknown);
  EXPECT_FALSE(again.block);
  EXPECT_EQ(plain.live_bytes(), 0u);
}

TEST(HeapModel, AllocOverLiveBlockReplacesIt) {
  HeapModel<int> h;
  h.alloc(0x10, 100, 1);
  auto replaced = h.alloc(0x10, 30, 2);
  ASSERT_TRUE(replaced);
  EXPECT_EQ(replaced->size, 100u);
  EXPECT_EQ(replaced->info, 1);
  EXPECT_EQ(h.live_bytes(), 30u);
  EXPECT_EQ(h.blocks(), 1u);
  EXPECT_EQ(h.releases(), 0u);  // not a release that was seen
  EXPECT_EQ(h.sorted_blocks().front().info, 2);
}

TEST(HeapModel, ReallocSequences) {
  // realloc(p, 0) then realloc of an unknown block, applied the way memtrace does.
  HeapModel<> h(true);
  h.alloc(0x10, 64);
  Outcome to_zero = realloc_outcome(0x10, 0, false, 0);
  EXPECT_EQ(h.release(to_zero.released).kind, HeapModel<>::Release::kFreed);
  EXPECT_EQ(h.live_bytes(), 0u);
  Outcome unknown = realloc_outcome(0x90, 32, false, 0xa0);
  EXPECT_EQ(h.release(unknown.released).kind, HeapModel<>::Release::kUnknown);
  h.alloc(unknown.allocated, 32);
  EXPECT_TRUE(h.is_live(0xa0));
  EXPECT_EQ(h.live_bytes(), 32u);
  // realloc in place: the same address released and allocated again.
  Outcome in_place = realloc_outcome(0xa0, 48, false, 0xa0);
  EXPECT_EQ(h.release(in_place.released).kind, HeapModel<>::Release::kFreed);
  h.alloc(in_place.allocated, 48);
  EXPECT_EQ(h.live_bytes(), 48u);
  EXPECT_EQ(h.release(0xa0).kind, HeapModel<>::Release::kFreed);
  EXPECT_EQ(h.release(0xa0).kind, HeapModel<>::Release::kDouble);
}

TEST(HeapModel, TakeEndsWithoutRelease) {
  HeapModel<> h(true);
  h.alloc(0x10, 8);
  ASSERT_TRUE(h.take(0x10));
  EXPECT_FALSE(h.take(0x10));
  EXPECT_EQ(h.release(0x10).kind, HeapModel<>::Release::kUnknown);
}

TEST(HeapModel, ForkCopyAndClear) {
  HeapModel<> parent(true);
  parent.alloc(0x10, 100);
  parent.alloc(0x20, 100);
  parent.release(0x20);
  HeapModel<> child = parent.fork_copy();
  EXPECT_EQ(child.live_bytes(), 100u);
  EXPECT_EQ(child.peak_bytes(), 100u);
  EXPECT_EQ(child.allocations(), 0u);
  EXPECT_EQ(child.release(0x20).kind, HeapModel<>::Release::kDouble);
  EXPECT_EQ(child.release(0x10).kind, HeapModel<>::Release::kFreed);
  EXPECT_TRUE(parent.is_live(0x10));
  parent.clear();  // exec
  EXPECT_EQ(parent.blocks(), 0u);
  EXPECT_EQ(parent.live_bytes(), 0u);
  EXPECT_EQ(parent.release(0x20).kind, HeapModel<>::Release::kUnknown);
}

TEST(HeapModel, SortedBlocksInAddressOrder) {
  HeapModel<> h;
  for (uint64_t a : {0x50, 0x10, 0x40, 0x30}) h.alloc(a, a);
  auto blocks = h.sorted_blocks();
  ASSERT_EQ(blocks.size(), 4u);
  EXPECT_EQ(blocks[0].address, 0x10u);
  EXPECT_EQ(blocks[3].address, 0x50u);
}

}  // namespace
}  // namespace ft::heap
