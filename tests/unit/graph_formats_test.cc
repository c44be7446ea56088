// Tests of the pure parts of the massif and dot reports: the massif allocation tree
// (child counts, order, the 1% threshold line) and DOT string escaping. Expected
// output is worked out by hand from valgrind's massif format, in the comments.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "postproc/report_dot.h"
#include "postproc/report_massif.h"

namespace ft::post {
namespace {

constexpr const char* kRoot = "(heap allocation functions) malloc/new/new[], --alloc-fns, etc.";

TEST(MassifTree, ChildrenLargestFirstWithCounts) {
  // 600 + 300 under f (from main and g), 100 directly from h: all above 1% of 1000.
  std::vector<MassifStack> stacks = {
      {{"0x1: f", "0x2: main"}, 600},
      {{"0x1: f", "0x3: g"}, 300},
      {{"0x4: h"}, 100},
  };
  std::string out;
  append_massif_tree(out, stacks, 1000);
  EXPECT_EQ(out, std::string("n2: 1000 ") + kRoot + "\n" +
                     " n2: 900 0x1: f\n"
                     "  n0: 600 0x2: main\n"
                     "  n0: 300 0x3: g\n"
                     " n0: 100 0x4: h\n");
}

TEST(MassifTree, BelowThresholdSummed) {
  // Of 10000 bytes, 9 and 90 are below 1% (100 bytes); 100 is not.
  std::vector<MassifStack> stacks = {
      {{"0xa: big"}, 9801}, {{"0xb: small"}, 90}, {{"0xc: tiny"}, 9}, {{"0xd: edge"}, 100}};
  std::string out;
  append_massif_tree(out, stacks, 10000);
  EXPECT_EQ(out, std::string("n3: 10000 ") + kRoot + "\n" +
                     " n0: 9801 0xa: big\n"
                     " n0: 100 0xd: edge\n"
                     " n0: 99 in 2 places, all below massif's threshold (1.00%)\n");
  out.clear();
  append_massif_tree(out, {{{"0xa: big"}, 9991}, {{"0xc: tiny"}, 9}}, 10000);
  EXPECT_NE(out.find(" n0: 9 in 1 place, below massif's threshold (1.00%)\n"), std::string::npos)
      << out;
}

TEST(MassifTree, EmptyHeap) {
  std::string out;
  append_massif_tree(out, {}, 0);
  EXPECT_EQ(out, std::string("n0: 0 ") + kRoot + "\n");
}

TEST(DotEscape, QuotesBackslashesNewlines) {
  EXPECT_EQ(dot_escape("std::vector<int, std::allocator<int> >::push_back(int const&)"),
            "std::vector<int, std::allocator<int> >::push_back(int const&)");
  EXPECT_EQ(dot_escape("operator\"\" _km(char const*)"), "operator\\\"\\\" _km(char const*)");
  EXPECT_EQ(dot_escape("a\\b\nc"), "a\\\\b\\nc");
}

}  // namespace
}  // namespace ft::post
