// StackTree: interns backtraces as paths in a prefix tree, so that a trace of millions
// of events holds each distinct call stack once, and stacks that share their outer
// frames (main -> run -> ...) share those nodes too.
//
// A backtrace is recorded innermost frame first (doc/trace-format.md §3.4). The tree is
// rooted at the outermost frame: node = (parent node, frame), and a stack is identified
// by the node of its innermost frame. Interning costs one hash lookup per frame, and
// memory grows with the number of distinct (prefix, frame) pairs only, not with the
// number of events. Frames are Symbolizer::Locations (address and the module mapping it
// fell in when recorded), so the same address in a module that was replaced (dlclose,
// then dlopen at the same place) is a different frame.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "postproc/symbolizer.h"

namespace ft::post {

class StackTree {
 public:
  using Id = uint32_t;
  static constexpr Id kEmpty = 0;  // the stack without frames

  StackTree();

  // The stack of `frames` (innermost first), interned.
  Id intern(std::span<const Symbolizer::Location> frames);
  // Appends the frames of a stack to `out`, innermost first.
  void frames(Id id, std::vector<Symbolizer::Location>& out) const;
  std::vector<Symbolizer::Location> frames(Id id) const;
  size_t depth(Id id) const;
  // Nodes in the tree, the empty stack included.
  size_t size() const { return nodes_.size(); }

 private:
  struct Node {
    Symbolizer::Location frame;
    Id parent = kEmpty;
    uint32_t depth = 0;
  };
  struct Key {
    Id parent;
    uint32_t mapping;
    uint64_t address;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      uint64_t h = k.address * 0x9e3779b97f4a7c15ull;
      h ^= (uint64_t{k.parent} << 32 | k.mapping) + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
      return static_cast<size_t>(h);
    }
  };

  std::vector<Node> nodes_;
  std::unordered_map<Key, Id, KeyHash> children_;
};

}  // namespace ft::post
