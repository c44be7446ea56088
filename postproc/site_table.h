// SiteTable: the places events come from. A site is the traced function an event was
// recorded in (the allocator entry point for memtrace, the opening call for fileops)
// together with the event's backtrace; reports count blocks, bytes or descriptors per
// site and later merge sites into groups (site_groups.h).
//
// Sites are interned while a trace is read: the function name once in a string table,
// the backtrace once in a StackTree, the pair once here. So per-event memory in the
// reports is one 32-bit SiteId, whatever the depth of the backtraces.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/trace_record.h"
#include "postproc/stack_tree.h"
#include "postproc/symbolizer.h"

namespace ft::post {

using SiteId = uint32_t;

class SiteTable {
 public:
  struct Site {
    uint32_t function = 0;  // index into the function names
    StackTree::Id stack = StackTree::kEmpty;
  };

  // The site of a record: its `function` and `frames` fields, the frames located in the
  // symbolizer's current module map.
  SiteId intern(const TraceRecord& record, const Symbolizer& symbolizer);
  SiteId intern(std::string_view function, std::span<const Symbolizer::Location> frames);

  const Site& site(SiteId id) const { return sites_[id]; }
  const std::string& function(SiteId id) const { return functions_[sites_[id].function]; }
  std::vector<Symbolizer::Location> frames(SiteId id) const { return stacks_.frames(sites_[id].stack); }
  size_t size() const { return sites_.size(); }
  const StackTree& stacks() const { return stacks_; }

 private:
  uint32_t function_id(std::string_view name);

  std::vector<std::string> functions_;
  std::unordered_map<std::string, uint32_t> function_index_;
  StackTree stacks_;
  std::vector<Site> sites_;
  std::unordered_map<uint64_t, SiteId> site_index_;  // function << 32 | stack
  std::vector<Symbolizer::Location> scratch_;
};

}  // namespace ft::post
