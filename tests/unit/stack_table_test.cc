// StackTable (core/stack_table.h): a call stack met again gets the id it got the first
// time, every other stack a new one (1, 2, 3, ... in the order they came); stacks
// that share a prefix or differ in one frame are different stacks; the bounds refuse
// new stacks and go on finding the old ones.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/trace_record.h"
#include "core/stack_table.h"

namespace ft {
namespace {

StackTable::Interned intern(StackTable& t, const std::vector<uint64_t>& v) { return t.intern(v.data(), v.size()); }

TEST(StackTable, SameStackSameIdInOrderOfArrival) {
  StackTable t;
  auto a = intern(t, {0x401000, 0x402000, 0x403000});
  EXPECT_EQ(a.id, 1u);
  EXPECT_TRUE(a.added);
  auto b = intern(t, {0x401000, 0x402000});  // a prefix of the first
  EXPECT_EQ(b.id, 2u);
  EXPECT_TRUE(b.added);
  auto c = intern(t, {0x401000, 0x402000, 0x403000, 0x404000});  // the first, one deeper
  EXPECT_EQ(c.id, 3u);
  auto d = intern(t, {0x401000, 0x402000, 0x403001});  // one frame differs
  EXPECT_EQ(d.id, 4u);
  auto again = intern(t, {0x401000, 0x402000, 0x403000});
  EXPECT_EQ(again.id, 1u);
  EXPECT_FALSE(again.added);
  EXPECT_EQ(intern(t, {0x401000, 0x402000}).id, 2u);
  EXPECT_EQ(t.size(), 4u);
}

TEST(StackTable, NoFramesIsNoStack) {
  StackTable t;
  auto none = t.intern(nullptr, 0);
  EXPECT_EQ(none.id, 0u);
  EXPECT_FALSE(none.added);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.refused(), 0u);
}

TEST(StackTable, ListsLongerThanAStackRecordMayHoldAreNotStacks) {
  StackTable t;
  std::vector<uint64_t> longest(kMaxStackFrames, 0x401000), longer(kMaxStackFrames + 1, 0x401000);
  EXPECT_EQ(intern(t, longest).id, 1u);
  auto s = intern(t, longer);
  EXPECT_EQ(s.id, 0u);
  EXPECT_FALSE(s.added);
  EXPECT_EQ(t.size(), 1u);
}

TEST(StackTable, ManyStacksAcrossGrowth) {
  StackTable t;
  const uint64_t n = 100000;
  auto stack = [](uint64_t i) { return std::vector<uint64_t>{0x7f0000001000 + (i % 7), 0x555500000000 + i * 16, i}; };
  for (uint64_t i = 0; i < n; ++i) {
    auto s = intern(t, stack(i));
    ASSERT_EQ(s.id, i + 1) << i;
    ASSERT_TRUE(s.added);
  }
  for (uint64_t i = 0; i < n; i += 97) {
    auto s = intern(t, stack(i));
    ASSERT_EQ(s.id, i + 1) << i;
    ASSERT_FALSE(s.added);
  }
  EXPECT_EQ(t.size(), n);
}

TEST(StackTable, FullTableRefusesNewStacksAndKeepsOldOnes) {
  StackTable by_count(/*max_stacks=*/3, /*max_frames=*/1000);
  for (uint64_t i = 1; i <= 3; ++i) EXPECT_EQ(intern(by_count, {i, i}).id, i);
  auto refused = intern(by_count, {4, 4});
  EXPECT_EQ(refused.id, 0u);
  EXPECT_FALSE(refused.added);
  EXPECT_EQ(by_count.refused(), 1u);
  EXPECT_EQ(intern(by_count, {2, 2}).id, 2u);  // still found

  StackTable by_frames(/*max_stacks=*/100, /*max_frames=*/5);
  EXPECT_EQ(intern(by_frames, {1, 2, 3}).id, 1u);
  EXPECT_EQ(intern(by_frames, {4, 5, 6}).id, 0u);  // 6 frames > 5
  EXPECT_EQ(intern(by_frames, {7, 8}).id, 2u);     // 5 frames: fits
  EXPECT_EQ(intern(by_frames, {1, 2, 3}).id, 1u);
  EXPECT_EQ(by_frames.refused(), 1u);
}

}  // namespace
}  // namespace ft
