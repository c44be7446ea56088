// CallTreeLayout (functracer/call_tree.h): the layout the live call log and the tree
// report share — braces, notes, durations, prefixes and the time filter, which keeps a
// call with the callers that lead to it and drops the rest, notes excepted.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "functracer/call_tree.h"

namespace {

struct Collected {
  std::vector<std::string> lines;
  ft::CallTreeLayout layout;
  explicit Collected(ft::CallTreeStyle style)
      : layout(style, [this](std::string_view l) { lines.emplace_back(l); }) {}
};

TEST(CallTree, BracesNotesAndUnwound) {
  Collected c({});
  c.layout.call(0, "main(1)");
  c.layout.call(1, "leaf(2)");
  c.layout.ret(1, "3", 10);
  c.layout.call(1, "parse()");
  c.layout.note("<signal SIGUSR1>");
  c.layout.unwound(1, "exception", 10);
  c.layout.call(1, "done()");
  c.layout.ret(1, "", 10);  // void
  c.layout.ret(0, "0", 100);
  EXPECT_EQ(c.lines, (std::vector<std::string>{"main(1) {", "  leaf(2) = 3", "  parse() {", "    <signal SIGUSR1>",
                                               "  } <unwound: exception>", "  done()", "} = 0"}));
}

TEST(CallTree, DurationsAndPrefixes) {
  Collected c({.show_duration = true});
  c.layout.call(0, "a()", "T1 ");
  c.layout.call(1, "b()", "T2 ");
  c.layout.ret(1, "1", 1250, "T3 ");
  c.layout.ret(0, "2", 2'500'000, "T4 ");
  EXPECT_EQ(c.lines, (std::vector<std::string>{"T1 a() {", "T2   b() = 1 <1.250 us>", "T4 } = 2 <2.500 ms>"}));
  EXPECT_EQ(ft::format_duration_ns(999), "999 ns");
  EXPECT_EQ(ft::format_duration_ns(3'000'000'000), "3.000 s");
}

TEST(CallTree, TimeFilterKeepsLongCallsWithTheirCallers) {
  Collected c({.min_duration_ns = 100});
  c.layout.call(0, "main()");
  c.layout.call(1, "quick()");
  c.layout.ret(1, "1", 5);
  c.layout.call(1, "slow()");
  c.layout.call(2, "inner()");
  c.layout.ret(2, "", 150);
  c.layout.call(2, "tiny()");
  c.layout.note("<signal SIGALRM>");  // kept though tiny() is not, at the depth it happened
  c.layout.ret(2, "", 1);
  EXPECT_TRUE(c.lines.empty());  // held back until the outermost call returns
  c.layout.ret(1, "2", 200);
  c.layout.ret(0, "0", 300);
  c.layout.call(0, "short()");
  c.layout.ret(0, "", 10);
  EXPECT_EQ(c.lines, (std::vector<std::string>{"main() {", "  slow() {", "    inner()", "      <signal SIGALRM>",
                                               "  } = 2", "} = 0"}));
}

TEST(CallTree, FinishShowsCallsHeldBack) {
  Collected c({.min_duration_ns = 100});
  c.layout.call(0, "main()");
  c.layout.call(1, "slow()");
  c.layout.ret(1, "", 500);
  c.layout.call(1, "running()");
  c.layout.finish();
  EXPECT_EQ(c.lines, (std::vector<std::string>{"main() {", "  slow()", "  running()"}));
}

}  // namespace
