// HeapCallViews: the heap stacks (heap_stacks.h) arranged as heaptrack_gui shows them,
// with the values of five metrics at every place:
//
//  - the top-down tree: from the outermost frame of each backtrace to the innermost
//    (the code that called the allocator); a node's values are those of the stacks
//    that pass through it (inclusive);
//  - the bottom-up tree: the same stacks from the innermost frame outwards, so the
//    roots are the functions that allocate and their children who called them;
//  - the caller/callee table: per function, its inclusive values (each stack counted
//    once, however often the function recurses in it), its self values (the stacks
//    in which it is the innermost frame), and per caller and per callee the values of
//    the stacks in which it called, or was called by, that function.
//
// Frames are keyed by their name (frame_name: the function, or MODULE+0xOFFSET), so
// the lines of one function are one node. A stack without a backtrace is one frame,
// "(no backtrace)". The allocating function (malloc, operator new) is not a frame of
// these views: every stack would end in it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "postproc/heap_stacks.h"

namespace ft::post {

// The metrics of the views, in column order.
enum class ViewMetric { kAllocations, kAllocated, kTemporary, kPeak, kLeaked };
inline constexpr size_t kViewMetrics = 5;
using ViewValues = std::array<uint64_t, kViewMetrics>;

ViewValues view_values(const HeapValues& v);
void add_values(ViewValues& to, const ViewValues& v);

struct CallTreeNode {
  std::string name;
  std::string location;  // "file:line" of the first frame seen, or the module
  ViewValues values{};
  std::vector<uint32_t> children;  // indices into CallTree::nodes
};

struct CallTree {
  std::vector<CallTreeNode> nodes;  // nodes[0]: the root, every stack
};

CallTree build_call_tree(const std::vector<HeapStack>& stacks, bool bottom_up);

struct FunctionTotals {
  std::string name;
  ViewValues inclusive{};
  ViewValues self{};
  std::map<std::string, ViewValues> callers;
  std::map<std::string, ViewValues> callees;
};

// Every function of the stacks, largest inclusive allocations first.
std::vector<FunctionTotals> function_totals(const std::vector<HeapStack>& stacks);

}  // namespace ft::post
