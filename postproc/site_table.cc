#include "postproc/site_table.h"

#include "common/check.h"
#include "functracer/schema.h"

namespace ft::post {

uint32_t SiteTable::function_id(std::string_view name) {
  auto it = function_index_.find(std::string(name));
  if (it != function_index_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(functions_.size());
  functions_.emplace_back(name);
  function_index_.emplace(functions_.back(), id);
  return id;
}

SiteId SiteTable::intern(std::string_view function, std::span<const Symbolizer::Location> frames) {
  uint32_t f = function_id(function);
  StackTree::Id stack = stacks_.intern(frames);
  auto [it, inserted] =
      site_index_.try_emplace(uint64_t{f} << 32 | stack, static_cast<SiteId>(sites_.size()));
  if (inserted) {
    FT_CHECK(sites_.size() < UINT32_MAX, "site table full");
    sites_.push_back(Site{f, stack});
  }
  return it->second;
}

SiteId SiteTable::intern(const TraceRecord& record, const Symbolizer& symbolizer) {
  scratch_.clear();
  if (const HexList* frames = record.get_list(schema::key::kFrames)) {
    scratch_.reserve(frames->size());
    for (uint64_t a : *frames) scratch_.push_back(symbolizer.locate(a));
  }
  const std::string* function = record.get_str(schema::key::kFunction);
  return intern(function != nullptr ? std::string_view(*function) : std::string_view(), scratch_);
}

}  // namespace ft::post
