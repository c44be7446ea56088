// functracer-postproc's command line (postproc/cli.h): reports, options in their short,
// long and --opt=value forms, "--", and every usage error in one line naming the problem.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "postproc/cli.h"
#include "test_support.h"

namespace ft::post {
namespace {

using test::contains;

Result<CommandLine> parse(std::vector<std::string> args) { return parse_command_line(args); }

TEST(CommandLine, Parses) {
  auto cl = parse({"tree", "a.trace", "--tid=5", "--time", "-o", "out.txt", "b.trace"});
  ASSERT_TRUE(cl.ok()) << cl.error().message;
  EXPECT_EQ(cl->report->name, "tree");
  EXPECT_EQ(cl->options.traces, (std::vector<std::string>{"a.trace", "b.trace"}));
  EXPECT_EQ(cl->options.tid, 5);
  EXPECT_TRUE(cl->options.time);
  EXPECT_EQ(cl->output, "out.txt");

  cl = parse({"calls", "--json", "-oX", "--", "--json"});
  ASSERT_TRUE(cl.ok()) << cl.error().message;
  EXPECT_TRUE(cl->options.json);
  EXPECT_EQ(cl->output, "X");
  EXPECT_EQ(cl->options.traces, (std::vector<std::string>{"--json"}));

  cl = parse({"dump", "--output=o", "--tid", "7", "t"});
  ASSERT_TRUE(cl.ok()) << cl.error().message;
  EXPECT_EQ(cl->output, "o");
  EXPECT_EQ(cl->options.tid, 7);

  cl = parse({"--help"});
  ASSERT_TRUE(cl.ok());
  EXPECT_TRUE(cl->help);
}

TEST(CommandLine, UsageErrors) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  std::vector<Case> cases = {
      {{}, "no report given"},
      {{"nope", "t"}, "unknown report 'nope' (one of: leaks, peak, temporary, allocators, histogram, diff, "},
      {{"calls"}, "no trace files given"},
      {{"calls", "--bogus", "t"}, "unknown option '--bogus'"},
      {{"calls", "-x", "t"}, "unknown option '-x'"},
      {{"chrome", "--json", "t"}, "the chrome report has no --json output"},
      {{"calls", "--time", "t"}, "the calls report does not take --time"},
      {{"calls", "t", "-o"}, "option '-o' needs a file name"},
      {{"calls", "t", "--tid"}, "option '--tid' needs a thread id"},
      {{"calls", "t", "--tid=abc"}, "needs a thread id (a positive number), not 'abc'"},
      {{"calls", "t", "--tid=-3"}, "not '-3'"},
      {{"calls", "t", "--json=1"}, "option '--json' takes no value"},
  };
  for (const Case& c : cases) {
    auto cl = parse(c.args);
    ASSERT_FALSE(cl.ok()) << c.message;
    EXPECT_TRUE(contains(cl.error().message, c.message)) << cl.error().message;
    EXPECT_FALSE(contains(cl.error().message, "\n"));
  }
}

}  // namespace
}  // namespace ft::post
