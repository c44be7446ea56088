// The unit tests' main. GoogleTest exits 0 when tests were skipped (GTEST_SKIP), so meson
// would count a test binary whose checks never ran for want of a tool (objcopy, clang,
// separate debug info) as passed, and nobody would notice. This main runs the tests as
// gtest_main does; when none failed but some were skipped it prints one line per skipped
// test, naming the test and why (the tool or the part of the environment missing), and
// exits 77, which meson reports as SKIP (`meson test` summary, "Skipped:").
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace {

constexpr int kSkipStatus = 77;  // meson's exit status for a skipped test

std::string skip_reason(const testing::TestResult& result) {
  for (int i = 0; i < result.total_part_count(); ++i) {
    const testing::TestPartResult& part = result.GetTestPartResult(i);
    if (part.skipped()) return part.message();
  }
  return "";
}

// Prints the skipped tests; how many there were.
int report_skipped() {
  const testing::UnitTest& unit = *testing::UnitTest::GetInstance();
  int skipped = 0;
  for (int s = 0; s < unit.total_test_suite_count(); ++s) {
    const testing::TestSuite& suite = *unit.GetTestSuite(s);
    for (int t = 0; t < suite.total_test_count(); ++t) {
      const testing::TestInfo& info = *suite.GetTestInfo(t);
      if (!info.should_run() || !info.result()->Skipped()) continue;
      ++skipped;
      std::printf("SKIP %s.%s: %s\n", suite.name(), info.name(),
                  skip_reason(*info.result()).c_str());
    }
  }
  return skipped;
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  int status = RUN_ALL_TESTS();
  if (status != 0) return status;
  int skipped = report_skipped();
  if (skipped == 0) return 0;
  std::printf("SKIP: %d test(s) skipped, the others passed (exit status %d)\n", skipped,
              kSkipStatus);
  std::fflush(stdout);
  return kSkipStatus;
}
