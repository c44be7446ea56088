// PlantPass (core/plant_pass.h) against a real process: a forked copy of this test,
// whose memory is where this one's is. What is checked is the pass's contract: the
// queued bytes are in the process after flush() and not before, a write that fails is
// undone (its undo told why) while the others are made, nothing of the program's code
// is written when the out-of-line code could not be, and PassScope writes only in the
// scope that opened the pass. Also RecorderSpace::patch_over, which planting checks
// against before queueing a trap or a jump.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <string>
#include <vector>

#include "core/plant_pass.h"
#include "core/recorder_space.h"
#include "core/remote_memory.h"

namespace ft {
namespace {

alignas(4096) uint8_t g_text[4096];

// A child that waits, with g_text as this process had it at the fork.
class Child {
 public:
  Child() {
    pid_ = ::fork();
    if (pid_ == 0) {
      for (;;) ::pause();
    }
  }
  ~Child() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

RemoteAddr at(size_t offset) { return RemoteAddr(reinterpret_cast<uint64_t>(g_text) + offset); }

// An address nothing is mapped at in the child: a page this process unmapped before
// the fork.
RemoteAddr unmapped_page() {
  void* p = ::mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ::munmap(p, 4096);
  return RemoteAddr(reinterpret_cast<uint64_t>(p));
}

std::vector<uint8_t> read(const RemoteMemory& mem, RemoteAddr a, size_t n) {
  std::vector<uint8_t> out(n);
  EXPECT_TRUE(mem.read_exact(a, out).ok());
  return out;
}

class PlantPassTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (size_t i = 0; i < sizeof g_text; ++i) g_text[i] = 0x90;
    hole_ = unmapped_page();
    child_ = std::make_unique<Child>();
    mem_ = std::make_unique<RemoteMemory>(child_->pid());
    ASSERT_TRUE(mem_->open().ok());
  }
  RemoteAddr hole_;
  std::unique_ptr<Child> child_;
  std::unique_ptr<RemoteMemory> mem_;
};

TEST_F(PlantPassTest, WritesNothingBeforeFlushAndEverythingAfter) {
  PlantPass pass;
  const std::array<uint8_t, 2> a{1, 2}, b{3, 4};
  pass.outline(at(0), a);
  pass.outline(at(2), b);  // contiguous: one piece
  const std::array<uint8_t, 1> trap{0xcc};
  pass.code(at(200), trap, [](const std::string&) { ADD_FAILURE() << "undone"; });
  pass.code(at(100), trap, [](const std::string&) { ADD_FAILURE() << "undone"; });
  EXPECT_FALSE(pass.empty());
  EXPECT_EQ(read(*mem_, at(0), 4), (std::vector<uint8_t>{0x90, 0x90, 0x90, 0x90}));
  EXPECT_EQ(pass.flush(*mem_), 0u);
  EXPECT_TRUE(pass.empty());
  EXPECT_EQ(read(*mem_, at(0), 5), (std::vector<uint8_t>{1, 2, 3, 4, 0x90}));
  EXPECT_EQ(read(*mem_, at(100), 1), std::vector<uint8_t>{0xcc});
  EXPECT_EQ(read(*mem_, at(200), 1), std::vector<uint8_t>{0xcc});
  EXPECT_EQ(g_text[0], 0x90);  // the child's memory, not ours
}

TEST_F(PlantPassTest, AFailedCodeWriteIsUndoneAndTheOthersAreMade) {
  PlantPass pass;
  const std::array<uint8_t, 1> trap{0xcc};
  std::vector<std::string> undone;
  pass.code(hole_, trap, [&](const std::string& why) { undone.push_back(why); });
  pass.code(at(8), trap, [&](const std::string& why) { undone.push_back("at 8: " + why); });
  EXPECT_EQ(pass.flush(*mem_), 1u);
  ASSERT_EQ(undone.size(), 1u);
  EXPECT_NE(undone[0].find("its code cannot be written"), std::string::npos) << undone[0];
  EXPECT_EQ(read(*mem_, at(8), 1), std::vector<uint8_t>{0xcc});
}

TEST_F(PlantPassTest, NoCodeIsWrittenWhenTheOutOfLineCodeCannotBe) {
  PlantPass pass;
  const std::array<uint8_t, 4> slot{0x0f, 0x0b, 0x0f, 0x0b};
  const std::array<uint8_t, 1> trap{0xcc};
  pass.outline(hole_, slot);
  int undone = 0;
  std::string why;
  pass.code(at(16), trap, [&](const std::string& w) {
    ++undone;
    why = w;
  });
  pass.code(at(32), trap, [&](const std::string&) { ++undone; });
  EXPECT_EQ(pass.flush(*mem_), 2u);
  EXPECT_EQ(undone, 2);
  EXPECT_NE(why.find("out-of-line code cannot be written"), std::string::npos) << why;
  EXPECT_EQ(read(*mem_, at(16), 1), std::vector<uint8_t>{0x90});
  EXPECT_EQ(read(*mem_, at(32), 1), std::vector<uint8_t>{0x90});
}

TEST_F(PlantPassTest, TheScopeThatOpensThePassWritesIt) {
  PlantPass* open = nullptr;
  const std::array<uint8_t, 1> trap{0xcc};
  {
    PassScope outer(open, *mem_);
    ASSERT_NE(open, nullptr);
    PlantPass* outer_pass = open;
    {
      PassScope inner(open, *mem_);
      EXPECT_EQ(open, outer_pass);  // the same pass: the inner scope writes nothing
      open->code(at(64), trap, nullptr);
    }
    EXPECT_EQ(read(*mem_, at(64), 1), std::vector<uint8_t>{0x90});
  }
  EXPECT_EQ(open, nullptr);
  EXPECT_EQ(read(*mem_, at(64), 1), std::vector<uint8_t>{0xcc});
}

EntryPatchSite site(uint64_t entry, unsigned offset, size_t len) {
  EntryPatchSite s;
  s.entry = RemoteAddr(entry);
  s.at = RemoteAddr(entry + offset);
  s.original.assign(len, 0x90);
  s.slow_trap = RemoteAddr(0x9000 + entry);
  return s;
}

TEST(PatchOver, FindsThePatchWhoseReplacedBytesCoverARange) {
  RecorderSpace rs;
  rs.add_patch(site(0x1000, 4, 5));   // endbr64 kept: the jump covers [0x1004, 0x1009)
  rs.add_patch(site(0x1040, 0, 8));   // [0x1040, 0x1048)
  EXPECT_EQ(rs.patch_over(RemoteAddr(0x1000), 4), nullptr);  // the endbr64 stays
  ASSERT_NE(rs.patch_over(RemoteAddr(0x1000), 5), nullptr);
  EXPECT_EQ(rs.patch_over(RemoteAddr(0x1000), 5)->entry, RemoteAddr(0x1000));
  EXPECT_NE(rs.patch_over(RemoteAddr(0x1008), 1), nullptr);
  EXPECT_EQ(rs.patch_over(RemoteAddr(0x1009), 1), nullptr);
  EXPECT_EQ(rs.patch_over(RemoteAddr(0x1030), 16), nullptr);
  ASSERT_NE(rs.patch_over(RemoteAddr(0x1030), 17), nullptr);
  EXPECT_EQ(rs.patch_over(RemoteAddr(0x1047), 1)->entry, RemoteAddr(0x1040));
  EXPECT_EQ(rs.patch_over(RemoteAddr(0x1048), 100), nullptr);
  rs.remove_patch(RemoteAddr(0x1004));
  EXPECT_EQ(rs.patch_over(RemoteAddr(0x1000), 16), nullptr);
  EXPECT_EQ(rs.patch_at_entry(RemoteAddr(0x1000)), nullptr);
  ASSERT_NE(rs.patch_at_entry(RemoteAddr(0x1040)), nullptr);
  EXPECT_EQ(rs.patch_by_trap.at(RemoteAddr(0x9000 + 0x1040)), 0u);  // indexes follow the removal
}

}  // namespace
}  // namespace ft
