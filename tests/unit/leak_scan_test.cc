// LeakScanner against the pointer chains of valgrind's manual ("Memory leak
// detection", the table of nine cases: RRR a root, AAA and BBB heap blocks, "--->"
// a pointer to a block's start, "-?->" a pointer into its middle), on a small
// memory made here.
#include "functracer/leak_scan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

namespace {

using ft::heap::LeakKind;
using ft::heap::LeakScanner;

// A process memory of 8-byte words, unset words reading as 0.
struct Memory {
  std::map<uint64_t, uint64_t> words;
  long read(uint64_t addr, void* buf, size_t n) const {
    auto* out = static_cast<uint8_t*>(buf);
    for (size_t i = 0; i < n; ++i) {
      uint64_t a = addr + i, w = 0;
      if (auto it = words.find(a & ~uint64_t{7}); it != words.end()) w = it->second;
      out[i] = static_cast<uint8_t>(w >> (8 * (a & 7)));
    }
    return static_cast<long>(n);
  }
};

constexpr uint64_t kRoot = 0x10000;  // root words at kRoot + 8 * i
constexpr uint64_t kA = 0x200000, kB = 0x300000, kC = 0x400000;

struct Case {
  Memory mem;
  std::vector<LeakScanner::Block> blocks{{kA, 64}, {kB, 64}, {kC, 64}};
  size_t roots = 0;
  void root(uint64_t value) { mem.words[kRoot + 8 * roots++] = value; }
  void at(uint64_t block, uint64_t off, uint64_t value) { mem.words[block + off] = value; }
  std::map<uint64_t, LeakKind> run() {
    auto read = [this](uint64_t a, void* b, size_t n) { return mem.read(a, b, n); };
    LeakScanner s(blocks, read);
    s.scan_range(kRoot, kRoot + 8 * (roots + 1), read);
    s.finish();
    std::map<uint64_t, LeakKind> out;
    for (size_t i = 0; i < s.size(); ++i) out[s.block(i).address] = s.kind(i);
    return out;
  }
};

TEST(LeakScan, Case1StartPointerFromRootIsReachable) {
  Case c;
  c.root(kB);
  EXPECT_EQ(c.run()[kB], LeakKind::kReachable);
}

TEST(LeakScan, Case2ChainOfStartPointersIsReachable) {
  Case c;
  c.root(kA);
  c.at(kA, 8, kB);
  auto k = c.run();
  EXPECT_EQ(k[kA], LeakKind::kReachable);
  EXPECT_EQ(k[kB], LeakKind::kReachable);
}

TEST(LeakScan, Case3NoPointerIsDefinitelyLost) {
  Case c;
  EXPECT_EQ(c.run()[kB], LeakKind::kDefinite);
}

TEST(LeakScan, Case4PointedToOnlyByALostBlockIsIndirect) {
  Case c;
  c.at(kA, 0, kB);
  auto k = c.run();
  EXPECT_EQ(k[kA], LeakKind::kDefinite);
  EXPECT_EQ(k[kB], LeakKind::kIndirect);
}

TEST(LeakScan, Case5InteriorPointerFromRootIsPossiblyLost) {
  Case c;
  c.root(kB + 16);
  EXPECT_EQ(c.run()[kB], LeakKind::kPossible);
}

TEST(LeakScan, Case6InteriorPointerFromAReachableBlock) {
  Case c;
  c.root(kA);
  c.at(kA, 0, kB + 40);
  auto k = c.run();
  EXPECT_EQ(k[kA], LeakKind::kReachable);
  EXPECT_EQ(k[kB], LeakKind::kPossible);
}

TEST(LeakScan, Case7StartPointerFromAPossiblyLostBlock) {
  Case c;
  c.root(kA + 16);
  c.at(kA, 32, kB);
  auto k = c.run();
  EXPECT_EQ(k[kA], LeakKind::kPossible);
  EXPECT_EQ(k[kB], LeakKind::kPossible);
}

TEST(LeakScan, Case9InteriorPointerFromALostBlockIsIndirect) {
  Case c;
  c.at(kA, 0, kB + 24);
  auto k = c.run();
  EXPECT_EQ(k[kA], LeakKind::kDefinite);
  EXPECT_EQ(k[kB], LeakKind::kIndirect);
}

TEST(LeakScan, APossibleBlockReachedLaterByAStartPointerBecomesReachableWithItsChildren) {
  Case c;
  c.root(kA + 16);  // A possibly lost, B reached from it
  c.at(kA, 32, kB);
  c.root(kC);       // then C, reachable, points at A's start
  c.at(kC, 0, kA);
  auto k = c.run();
  EXPECT_EQ(k[kA], LeakKind::kReachable);
  EXPECT_EQ(k[kB], LeakKind::kReachable);
  EXPECT_EQ(k[kC], LeakKind::kReachable);
}

TEST(LeakScan, ALostCycleHasOneDefinitelyLostBlock) {
  Case c;
  c.at(kA, 0, kB);
  c.at(kB, 0, kC);
  c.at(kC, 0, kA);
  auto k = c.run();
  EXPECT_EQ(k[kA], LeakKind::kDefinite);  // the lowest address leads the clique
  EXPECT_EQ(k[kB], LeakKind::kIndirect);
  EXPECT_EQ(k[kC], LeakKind::kIndirect);
}

TEST(LeakScan, AnEarlierLeaderPointedToByALaterOneBecomesIndirect) {
  Case c;
  c.at(kC, 0, kA);  // A (lowest) leads first; then C, unreached, reaches A
  auto k = c.run();
  EXPECT_EQ(k[kA], LeakKind::kIndirect);
  EXPECT_EQ(k[kC], LeakKind::kDefinite);
}

TEST(LeakScan, PointersPastTheEndAndUnalignedWordsDoNotCount) {
  Case c;
  c.root(kB + 64);                         // one past the end
  c.mem.words[kRoot + 8 * c.roots++] = 0;  // then an unaligned copy of kA's address
  c.mem.words[kRoot + 8 * c.roots] = kA << 8;
  c.mem.words[kRoot + 8 * c.roots + 8] = kA >> 56;
  c.roots += 2;
  auto k = c.run();
  EXPECT_EQ(k[kA], LeakKind::kDefinite);
  EXPECT_EQ(k[kB], LeakKind::kDefinite);
}

TEST(LeakScan, ZeroSizedBlockIsReachedByItsStart) {
  Case c;
  c.blocks.push_back({0x500000, 0});
  c.root(0x500000);
  EXPECT_EQ(c.run()[0x500000], LeakKind::kReachable);
}

TEST(LeakScan, MemchecksDefaultHeuristicsMakeSomeInteriorPointersCount) {
  Case c;
  c.at(kA, 0, 56);        // length64: the first word is the size of the rest
  c.root(kA + 8);
  c.at(kB, 0, 5);         // not a count dividing 56, nor the rest's size
  c.root(kB + 8);
  c.blocks[2] = {kC, 3 * 8 + 15 + 1};  // stdstring: length 10, capacity 15
  c.at(kC, 0, 10);
  c.at(kC, 8, 15);
  c.root(kC + 24);
  auto k = c.run();
  EXPECT_EQ(k[kA], LeakKind::kReachable);
  EXPECT_EQ(k[kB], LeakKind::kPossible);
  EXPECT_EQ(k[kC], LeakKind::kReachable);
}

TEST(LeakScan, RegistersAreRoots) {
  Case c;
  LeakScanner s(c.blocks, [&](uint64_t a, void* b, size_t n) { return c.mem.read(a, b, n); });
  uint64_t regs[] = {0, kB, 7};
  s.scan_words(regs);
  s.finish();
  EXPECT_EQ(s.kind(1), LeakKind::kReachable);
  EXPECT_EQ(s.kind(0), LeakKind::kDefinite);
}

}  // namespace
