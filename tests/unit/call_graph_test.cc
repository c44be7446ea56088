// CallGraph (postproc/call_graph.h) and the callgrind report written from it, on
// hand-written traces whose times are known.
#include "postproc/call_graph.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "postproc/report.h"
#include "postproc/report_callgrind.h"
#include "tests/unit/test_support.h"

namespace ft::post {
namespace {

struct Event {
  int64_t tid;
  uint64_t ts;
  bool call;
  std::string function;
  int64_t depth;
};

std::string trace_text(int64_t pid, const std::vector<Event>& events, uint64_t end_ts) {
  std::string t = "functracer-trace 1\n";
  uint64_t seq = 1;
  t += std::to_string(seq++) + " " + std::to_string(pid) +
       " 1 header format=1 arch=\"x86_64\" pid=" + std::to_string(pid) +
       " exe=\"/nonexistent/prog\" cmdline=\"prog\" start_realtime_ns=0 plugins=\"calltrace\" "
       "backtrace_depth=0\n";
  for (const Event& e : events) {
    // Every function at its own address outside any module.
    uint64_t address = 0x1000 + 0x100 * static_cast<uint64_t>(e.function[0]);
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(address));
    t += std::to_string(seq++) + " " + std::to_string(e.tid) + " " + std::to_string(e.ts) +
         (e.call ? " call" : " return") + " function=\"" + e.function + "\" address=" + hex +
         " depth=" + std::to_string(e.depth) + (e.call ? " args=[]" : " retval=0x0") + "\n";
  }
  t += std::to_string(seq++) + " " + std::to_string(pid) + " " + std::to_string(end_ts) +
       " exit status=0\n";
  return t;
}

const CallGraph::Function* find(const CallGraph& g, const std::string& name) {
  for (const CallGraph::Function& f : g.functions()) {
    if (f.mangled == name) return &f;
  }
  return nullptr;
}

std::optional<CallGraph::Arc> arc(const CallGraph& g, const std::string& from,
                                  const std::string& to) {
  for (const CallGraph::Arc& a : g.arcs()) {
    bool from_ok = from.empty() ? a.caller == CallGraph::kRoot
                                : a.caller != CallGraph::kRoot &&
                                      g.functions()[a.caller].mangled == from;
    if (from_ok && g.functions()[a.callee].mangled == to) return a;
  }
  return std::nullopt;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// even(10..100) -> odd(20..90) -> even(30..80) -> odd(40..60)
std::vector<Event> mutual() {
  return {{100, 10, true, "even", 0},  {100, 20, true, "odd", 1},
          {100, 30, true, "even", 2},  {100, 40, true, "odd", 3},
          {100, 60, false, "odd", 3},  {100, 80, false, "even", 2},
          {100, 90, false, "odd", 1},  {100, 100, false, "even", 0}};
}

TEST(CallGraph, MutualRecursionCountsEveryCallButTimeOnlyOnce) {
  test::TempDir dir;
  std::string path = dir.write("a.trace", trace_text(100, mutual(), 200));
  CollectingDiagnostics diag;
  Symbolizer symbolizer(diag);
  CallGraph g(symbolizer, std::nullopt);
  ASSERT_TRUE(build_call_graph({path}, g, diag));

  const CallGraph::Function* even = find(g, "even");
  const CallGraph::Function* odd = find(g, "odd");
  ASSERT_TRUE(even && odd);
  EXPECT_EQ(even->calls, 2u);
  EXPECT_EQ(odd->calls, 2u);
  EXPECT_EQ(even->self_ns, 10u + 10u + 10u + 20u);  // 10..20, 90..100, 30..40, 60..80
  EXPECT_EQ(odd->self_ns, 10u + 10u + 20u);         // 20..30, 80..90, 40..60
  EXPECT_EQ(even->inclusive_ns, 90u);
  EXPECT_EQ(odd->inclusive_ns, 70u);
  EXPECT_EQ(g.total_self_ns(), 90u);

  auto root = arc(g, "", "even");
  auto e2o = arc(g, "even", "odd");
  auto o2e = arc(g, "odd", "even");
  ASSERT_TRUE(root && e2o && o2e);
  EXPECT_EQ(root->calls, 1u);
  EXPECT_EQ(root->inclusive_ns, 90u);
  EXPECT_EQ(e2o->calls, 2u);
  EXPECT_EQ(e2o->inclusive_ns, 70u);  // the inner odd was already open
  EXPECT_EQ(o2e->calls, 1u);
  EXPECT_EQ(o2e->inclusive_ns, 0u);  // even was already open
  // Time flowing into each function is its wall time.
  EXPECT_EQ(root->inclusive_ns + o2e->inclusive_ns, even->inclusive_ns);
  EXPECT_EQ(e2o->inclusive_ns, odd->inclusive_ns);
}

TEST(CallGraph, ThreadsHaveTheirOwnStacksAndTidFilters) {
  // Two threads, each running f -> f; a recursion check across threads would be wrong.
  std::vector<Event> ev = {{100, 10, true, "f", 0},  {101, 15, true, "f", 0},
                           {100, 20, true, "f", 1},  {101, 25, true, "g", 1},
                           {100, 30, false, "f", 1}, {101, 35, false, "g", 1},
                           {100, 40, false, "f", 0}, {101, 45, false, "f", 0}};
  test::TempDir dir;
  std::string path = dir.write("a.trace", trace_text(100, ev, 50));
  CollectingDiagnostics diag;
  Symbolizer symbolizer(diag);
  CallGraph all(symbolizer, std::nullopt);
  ASSERT_TRUE(build_call_graph({path}, all, diag));
  EXPECT_EQ(find(all, "f")->calls, 3u);
  EXPECT_EQ(find(all, "f")->inclusive_ns, 30u + 30u);
  EXPECT_EQ(arc(all, "f", "f")->inclusive_ns, 0u);
  EXPECT_EQ(arc(all, "f", "g")->inclusive_ns, 10u);
  EXPECT_EQ(arc(all, "", "f")->calls, 2u);

  Symbolizer symbolizer2(diag);
  CallGraph one(symbolizer2, 101);
  ASSERT_TRUE(build_call_graph({path}, one, diag));
  EXPECT_EQ(find(one, "f")->calls, 1u);
  EXPECT_EQ(find(one, "g")->calls, 1u);
  EXPECT_EQ(one.total_self_ns(), 30u);
}

TEST(CallgrindReport, CostLinesAddUpAndNamesAreCompressed) {
  test::TempDir dir;
  ReportOptions options;
  options.traces = {dir.write("a.trace", trace_text(100, mutual(), 200))};
  Output out;
  CollectingDiagnostics diag;
  ASSERT_TRUE(report_callgrind(options, out, diag));
  const std::string& text = out.text();
  EXPECT_NE(text.find("version: 1\n"), std::string::npos);
  EXPECT_NE(text.find("events: ns\n"), std::string::npos);
  EXPECT_NE(text.find("pid: 100\n"), std::string::npos);
  EXPECT_NE(text.find("summary: 90\ntotals: 90\n"), std::string::npos);
  // Each name is spelled out once and then referred to by its id.
  EXPECT_EQ(count(text, " even\n"), 1u);
  EXPECT_NE(text.find("fn=(1) even\n"), std::string::npos);
  EXPECT_NE(text.find("cfn=(1)\ncalls=1 0\n"), std::string::npos);
  EXPECT_NE(text.find("fn=(3) (untraced caller)\n0 0\n"), std::string::npos);
  // Self cost lines (after fn=) and call cost lines (after calls=) sum as expected.
  uint64_t self = 0, calls = 0;
  std::string prev;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && (line[0] >= '0' && line[0] <= '9')) {
      uint64_t cost = std::stoull(line.substr(line.find(' ') + 1));
      (prev.rfind("calls=", 0) == 0 ? calls : self) += cost;
    }
    prev = line;
  }
  EXPECT_EQ(self, 90u);
  EXPECT_EQ(calls, 90u + 70u + 0u);
}

}  // namespace
}  // namespace ft::post
