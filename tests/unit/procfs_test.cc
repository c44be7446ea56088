// core/procfs: answers read from /proc about this very process, and the shadow stack
// line of a thread's status.
#include "core/procfs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace ft {
namespace {

TEST(Procfs, StatusFieldsOfThisProcess) {
  EXPECT_EQ(tgid_of(::getpid()), ::getpid());
  EXPECT_EQ(status_field(::getpid(), "Pid"), "\t" + std::to_string(::getpid()));
  EXPECT_EQ(status_field(::getpid(), "NoSuchField"), "");
  // "Pid" must not match "PPid".
  EXPECT_EQ(status_field(::getpid(), "PPid"), "\t" + std::to_string(::getppid()));
}

TEST(Procfs, ShadowStackFeatures) {
  // As Linux 6.6 prints them: the features a thread has enabled, by name.
  EXPECT_TRUE(features_say_shadow_stack("\tshstk wrss"));
  EXPECT_TRUE(features_say_shadow_stack("\twrss shstk"));
  EXPECT_FALSE(features_say_shadow_stack("\twrss"));
  EXPECT_FALSE(features_say_shadow_stack(""));
  EXPECT_FALSE(features_say_shadow_stack("\tshstkx"));
  EXPECT_FALSE(features_say_shadow_stack("\txshstk"));
}

TEST(Procfs, ShadowStackOfThisProcess) {
  // This test program is not marked for a shadow stack (nor is the test runner's
  // glibc asked to enable one), so whatever the kernel, it runs without: the status
  // line, when the kernel prints it, must not say shstk.
  std::ifstream f("/proc/self/status");
  std::string line, features;
  while (std::getline(f, line))
    if (line.starts_with("x86_Thread_features:")) features = line.substr(20);
  EXPECT_EQ(shadow_stack_on(::getpid()), features_say_shadow_stack(features));
}

}  // namespace
}  // namespace ft
