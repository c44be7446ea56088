// What the html report shows of frames and numbers (postproc/display_name.h,
// format_bytes in postproc/report.h): shortened C++ names, the first frame of the
// program's own code, binary units; and the heap views' sums (heap_call_views.h).
#include "postproc/display_name.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "postproc/heap_call_views.h"
#include "postproc/report.h"

namespace ft::post {
namespace {

TEST(ShortDisplayName, TemplatesAndParametersElided) {
  EXPECT_EQ(short_display_name("std::vector<int, std::allocator<int> >::push_back(int const&)"),
            "std::vector<\u2026>::push_back(\u2026)");
  EXPECT_EQ(short_display_name("main"), "main");
  EXPECT_EQ(short_display_name("f()"), "f()");
  EXPECT_EQ(short_display_name("ns::g(std::map<int, int>) const"), "ns::g(\u2026) const");
  EXPECT_EQ(short_display_name("(anonymous namespace)::A<int>::f(int)"),
            "(anonymous namespace)::A<\u2026>::f(\u2026)");
}

TEST(ShortDisplayName, OperatorsKept) {
  EXPECT_EQ(short_display_name("operator<<(std::ostream&, A const&)"), "operator<<(\u2026)");
  EXPECT_EQ(short_display_name("A::operator<(A const&) const"), "A::operator<(\u2026) const");
  EXPECT_EQ(short_display_name("A::operator->()"), "A::operator->()");
  EXPECT_EQ(short_display_name("F<int>::operator()(int)"), "F<\u2026>::operator()(\u2026)");
  EXPECT_EQ(short_display_name("operator new(unsigned long)"), "operator new(\u2026)");
}

ReportFrame frame(std::string function, std::string file = {}, std::string module = "/usr/bin/app") {
  ReportFrame f;
  f.function = std::move(function);
  if (!file.empty()) f.file = std::move(file);
  f.module = std::move(module);
  return f;
}

TEST(FirstUserFrame, SkipsRuntimeCode) {
  std::vector<ReportFrame> frames = {
      frame("std::__new_allocator<int>::allocate(unsigned long, void const*)",
            "/usr/include/c++/12/bits/new_allocator.h"),
      frame("std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>(int const&)"),
      frame("xmalloc", "/src/util.c"),
      frame("fill", "/src/app.cc"),
      frame("main", "/src/app.cc"),
  };
  ASSERT_NE(first_user_frame(frames), nullptr);
  EXPECT_EQ(*first_user_frame(frames)->function, "fill");
  EXPECT_TRUE(is_runtime_frame(frame("foo", {}, "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30")));
  EXPECT_TRUE(is_runtime_frame(frame("inlined_helper", "/usr/include/c++/12/bits/stl_vector.h")));
  EXPECT_FALSE(is_runtime_frame(frame("stdio_like", "/src/x.c")));
}

TEST(FirstUserFrame, AllRuntimeGivesTheInnermost) {
  std::vector<ReportFrame> frames = {frame("operator new(unsigned long)"), frame("__libc_start_main")};
  EXPECT_EQ(*first_user_frame(frames)->function, "operator new(unsigned long)");
  EXPECT_EQ(first_user_frame({}), nullptr);
}

TEST(FormatBytes, BinaryUnits) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.00 KiB");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(50 * 1024), "50.0 KiB");
  EXPECT_EQ(format_bytes(300 * 1024), "300 KiB");
  EXPECT_EQ(format_bytes(uint64_t{5} << 20), "5.00 MiB");
  EXPECT_EQ(format_bytes(uint64_t{3} << 30), "3.00 GiB");
}

HeapStack stack(std::vector<std::string> innermost_first, uint64_t allocated, uint64_t leaked) {
  HeapStack s;
  for (std::string& n : innermost_first) s.frames.push_back(frame(std::move(n)));
  s.function = "malloc";
  s.values.allocated = allocated;
  s.values.allocations = 1;
  s.values.leaked = leaked;
  return s;
}

TEST(HeapCallViews, TreesAndFunctionTotals) {
  // main -> a -> a (recursion) -> leaf; main -> b
  std::vector<HeapStack> stacks = {stack({"leaf", "a", "a", "main"}, 100, 10),
                                   stack({"b", "main"}, 50, 0)};
  CallTree top = build_call_tree(stacks, false);
  ASSERT_EQ(top.nodes[0].values[1], 150u);
  ASSERT_EQ(top.nodes[0].children.size(), 1u);
  const CallTreeNode& main = top.nodes[top.nodes[0].children[0]];
  EXPECT_EQ(main.name, "main");
  EXPECT_EQ(main.values[1], 150u);
  EXPECT_EQ(main.children.size(), 2u);
  CallTree bottom = build_call_tree(stacks, true);
  EXPECT_EQ(bottom.nodes[0].children.size(), 2u);  // leaf, b

  std::vector<FunctionTotals> f = function_totals(stacks);
  auto find = [&](const std::string& n) -> const FunctionTotals& {
    for (const FunctionTotals& t : f) {
      if (t.name == n) return t;
    }
    ADD_FAILURE() << n;
    return f.front();
  };
  EXPECT_EQ(find("main").inclusive[1], 150u);
  EXPECT_EQ(find("main").self[1], 0u);
  EXPECT_EQ(find("a").inclusive[1], 100u);  // once, although it recursed
  EXPECT_EQ(find("a").inclusive[4], 10u);
  EXPECT_EQ(find("leaf").self[1], 100u);
  EXPECT_EQ(find("a").callers.at("main")[1], 100u);
  EXPECT_EQ(find("a").callers.at("a")[1], 100u);
  EXPECT_EQ(find("main").callees.at("b")[1], 50u);
}

}  // namespace
}  // namespace ft::post
