#include "postproc/heap_call_views.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

namespace ft::post {

namespace {

constexpr std::string_view kNoBacktrace = "(no backtrace)";

std::string location(const ReportFrame& f) {
  if (f.file) return f.line ? fmt::format("{}:{}", *f.file, *f.line) : *f.file;
  if (f.module) return *f.module;
  return {};
}

// The frame names of a stack, innermost first, and their locations.
void names_of(const HeapStack& s, std::vector<std::string>& names, std::vector<std::string>* where) {
  names.clear();
  if (where) where->clear();
  for (const ReportFrame& f : s.frames) {
    names.push_back(frame_name(f));
    if (where) where->push_back(location(f));
  }
  if (names.empty()) {
    names.emplace_back(kNoBacktrace);
    if (where) where->emplace_back();
  }
}

}  // namespace

ViewValues view_values(const HeapValues& v) {
  return {v.allocations, v.allocated, v.temporary_count, v.peak, v.leaked};
}

void add_values(ViewValues& to, const ViewValues& v) {
  for (size_t i = 0; i < kViewMetrics; ++i) to[i] += v[i];
}

CallTree build_call_tree(const std::vector<HeapStack>& stacks, bool bottom_up) {
  CallTree tree;
  tree.nodes.push_back(CallTreeNode{"all", {}, {}, {}});
  std::map<std::pair<uint32_t, std::string>, uint32_t> index;
  std::vector<std::string> names, where;
  for (const HeapStack& s : stacks) {
    ViewValues v = view_values(s.values);
    names_of(s, names, &where);
    if (!bottom_up) {
      std::reverse(names.begin(), names.end());
      std::reverse(where.begin(), where.end());
    }
    uint32_t node = 0;
    add_values(tree.nodes[0].values, v);
    for (size_t i = 0; i < names.size(); ++i) {
      auto [it, added] = index.emplace(std::pair(node, names[i]), static_cast<uint32_t>(tree.nodes.size()));
      if (added) {
        tree.nodes.push_back(CallTreeNode{names[i], where[i], {}, {}});
        tree.nodes[node].children.push_back(it->second);
      }
      node = it->second;
      add_values(tree.nodes[node].values, v);
    }
  }
  return tree;
}

std::vector<FunctionTotals> function_totals(const std::vector<HeapStack>& stacks) {
  std::unordered_map<std::string, size_t> index;
  std::vector<FunctionTotals> out;
  auto at = [&](const std::string& name) -> FunctionTotals& {
    auto [it, added] = index.emplace(name, out.size());
    if (added) out.push_back(FunctionTotals{name, {}, {}, {}, {}});
    return out[it->second];
  };
  std::vector<std::string> names;
  std::set<std::string> seen;
  std::set<std::pair<std::string, std::string>> edges;
  for (const HeapStack& s : stacks) {
    ViewValues v = view_values(s.values);
    names_of(s, names, nullptr);
    add_values(at(names.front()).self, v);
    seen.clear();
    edges.clear();
    for (size_t i = 0; i < names.size(); ++i) {
      if (seen.insert(names[i]).second) add_values(at(names[i]).inclusive, v);
      if (i + 1 < names.size() && edges.emplace(names[i + 1], names[i]).second) {
        add_values(at(names[i]).callers[names[i + 1]], v);
        add_values(at(names[i + 1]).callees[names[i]], v);
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const FunctionTotals& a, const FunctionTotals& b) {
    if (a.inclusive != b.inclusive) return a.inclusive > b.inclusive;
    return a.name < b.name;
  });
  return out;
}

}  // namespace ft::post
