// Reports of a trace with a function the engine could not trace (an `untraced`
// record): every report built from it says, once per function, that its totals are
// incomplete (TraceReader warns at the end of each trace), the warning goes to the
// diagnostics and never into the report's output, so JSON stays one valid value.
#include <gtest/gtest.h>

#include <string>

#include "json_checker.h"
#include "postproc/report.h"
#include "postproc_fixture.h"

namespace ft::post {
namespace {

using test::data;
using test::is_valid_json;
using test::read_file;
using test::TempDir;

constexpr char kGap[] = "t.trace: _Z3lexv was not traced (int3: a breakpoint is already there): the totals are incomplete";

// recursion.trace with lex refused at its entry (and refused again after it, as after
// an exec: still one gap).
std::string trace_with_gap(const TempDir& tmp) {
  std::string text = read_file(data("recursion.trace"));
  const char* gap = "untraced function=\"_Z3lexv\" address=0x55551400 reason=\"int3: a breakpoint is already there\"\n";
  text += "29 100 4100 " + std::string(gap) + "30 100 4100 " + gap;
  return tmp.write("t.trace", text);
}

size_t times_said(const CollectingDiagnostics& diag) {
  size_t n = 0;
  for (const std::string& w : diag.warnings)
    if (w.ends_with(kGap)) ++n;
  return n;
}

TEST(ReportGaps, EveryCallReportSaysOnceThatAFunctionWasNotTraced) {
  TempDir tmp;
  std::string t = trace_with_gap(tmp);
  for (const char* name : {"calls", "tree", "callgrind", "gprof", "flamegraph", "speedscope", "chrome", "dot",
                           "dump", "html"}) {
    const ReportSpec* spec = find_report(name);
    ASSERT_NE(spec, nullptr) << name;
    for (bool json : {false, true}) {
      if (json && !(spec->accepts & kAcceptsJson)) continue;
      ReportOptions o = test::options_for({t});
      o.json = json;
      CollectingDiagnostics diag;
      Output out;
      auto status = spec->run(o, out, diag);
      EXPECT_TRUE(status.ok()) << name;
      EXPECT_EQ(times_said(diag), 1u) << name << (json ? " --json" : "");
      EXPECT_EQ(out.text().find("was not traced"), std::string::npos) << name;
      if (json && std::string_view(name) != "dump") {
        EXPECT_TRUE(is_valid_json(out.text())) << name;
      }
    }
  }
}

TEST(ReportGaps, ATraceWithoutGapsSaysNothing) {
  CollectingDiagnostics diag;
  Output out;
  ASSERT_TRUE(find_report("calls")->run(test::options_for({data("recursion.trace")}), out, diag).ok());
  EXPECT_TRUE(diag.warnings.empty());
}

}  // namespace
}  // namespace ft::post
