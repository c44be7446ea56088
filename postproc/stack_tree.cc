#include "postproc/stack_tree.h"

#include "common/check.h"

namespace ft::post {

StackTree::StackTree() { nodes_.push_back(Node{}); }

StackTree::Id StackTree::intern(std::span<const Symbolizer::Location> frames) {
  Id id = kEmpty;
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    Key key{id, it->mapping, it->address};
    auto [pos, inserted] = children_.try_emplace(key, static_cast<Id>(nodes_.size()));
    if (inserted) {
      FT_CHECK(nodes_.size() < UINT32_MAX, "stack tree full");
      nodes_.push_back(Node{*it, id, nodes_[id].depth + 1});
    }
    id = pos->second;
  }
  return id;
}

void StackTree::frames(Id id, std::vector<Symbolizer::Location>& out) const {
  for (; id != kEmpty; id = nodes_[id].parent) out.push_back(nodes_[id].frame);
}

std::vector<Symbolizer::Location> StackTree::frames(Id id) const {
  std::vector<Symbolizer::Location> out;
  out.reserve(depth(id));
  frames(id, out);
  return out;
}

size_t StackTree::depth(Id id) const { return nodes_[id].depth; }

}  // namespace ft::post
