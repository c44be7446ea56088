// Site groups: what the heap and descriptor reports show one entry for. Sites (the
// traced function and backtrace of an event, site_table.h) whose function is the same
// and whose frames point at the same code are one group, even when they were recorded
// in several processes that mapped their modules at different addresses (frames are
// compared by Symbolizer::CodeKey: module file and link-time address).
//
// select_groups() is the pipeline the reports share: sum per-site counts into groups,
// resolve each group's frames (function, file:line, module, inlined frames), apply the
// GroupFilter (--function, --suppressions), sort largest first and keep --top N. Ties
// are broken by frame addresses, then by function name, so output is deterministic.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/demangle.h"
#include "postproc/group_filter.h"
#include "postproc/json_writer.h"
#include "postproc/report_frame.h"
#include "postproc/site_table.h"
#include "postproc/symbolizer.h"

namespace ft::post {

class SiteGrouper {
 public:
  SiteGrouper(const SiteTable& sites, Symbolizer& symbolizer)
      : sites_(sites), symbolizer_(symbolizer) {}

  uint32_t group_of(SiteId site);
  SiteId first_site(uint32_t group) const { return first_site_[group]; }
  size_t size() const { return first_site_.size(); }

  GroupHead head(uint32_t group);
  std::vector<ReportFrame> resolve(SiteId site);
  const SiteTable& sites() const { return sites_; }

 private:
  struct Key {
    uint32_t function;
    std::vector<Symbolizer::CodeKey> frames;
    auto operator<=>(const Key&) const = default;
  };
  const SiteTable& sites_;
  Symbolizer& symbolizer_;
  Demangler demangler_;
  std::vector<uint32_t> group_of_site_;  // kUnset until computed
  std::vector<SiteId> first_site_;
  std::map<Key, uint32_t> index_;
  static constexpr uint32_t kUnset = UINT32_MAX;
};

template <typename Counts>
struct SelectedGroup {
  GroupHead head;
  Counts counts{};
  std::vector<ReportFrame> frames;
};

template <typename Counts>
struct GroupSelection {
  std::vector<SelectedGroup<Counts>> groups;  // sorted, at most --top
  size_t groups_total = 0;                    // kept by the filter, before --top
  Counts total{};                             // over the groups kept by the filter
  Counts suppressed{};                        // over the suppressed groups
  size_t suppressed_groups = 0;
};

// Sums `per_site` into groups and selects them. `greater(a, b)`: whether counts a come
// before counts b. Counts must be default-constructible with `+=`.
template <typename Counts, typename Greater>
GroupSelection<Counts> select_groups(SiteGrouper& grouper,
                                     const std::vector<std::pair<SiteId, Counts>>& per_site,
                                     const GroupFilter& filter, Greater greater,
                                     std::optional<size_t> top) {
  std::vector<Counts> counts;
  std::vector<uint32_t> groups;
  std::vector<int32_t> slot;  // group -> index in `groups`
  for (const auto& [site, c] : per_site) {
    uint32_t g = grouper.group_of(site);
    if (slot.size() <= g) slot.resize(g + 1, -1);
    if (slot[g] < 0) {
      slot[g] = static_cast<int32_t>(groups.size());
      groups.push_back(g);
      counts.emplace_back();
    }
    counts[static_cast<size_t>(slot[g])] += c;
  }

  GroupSelection<Counts> sel;
  std::vector<SelectedGroup<Counts>> kept;
  bool filtering = !filter.empty();
  for (size_t i = 0; i < groups.size(); ++i) {
    SelectedGroup<Counts> g{grouper.head(groups[i]), counts[i], {}};
    if (filtering) {
      g.frames = grouper.resolve(g.head.site);
      if (!filter.selects(g.head, g.frames)) continue;
      if (filter.suppresses(g.head, g.frames)) {
        sel.suppressed += g.counts;
        ++sel.suppressed_groups;
        continue;
      }
    }
    sel.total += g.counts;
    kept.push_back(std::move(g));
  }
  sel.groups_total = kept.size();

  std::vector<std::vector<Symbolizer::Location>> frames(kept.size());
  for (size_t i = 0; i < kept.size(); ++i) frames[i] = grouper.sites().frames(kept[i].head.site);
  std::vector<size_t> order(kept.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (greater(kept[a].counts, kept[b].counts)) return true;
    if (greater(kept[b].counts, kept[a].counts)) return false;
    auto by_address = [](const Symbolizer::Location& x, const Symbolizer::Location& y) {
      return x.address < y.address;
    };
    const auto& fa = frames[a];
    const auto& fb = frames[b];
    if (std::lexicographical_compare(fa.begin(), fa.end(), fb.begin(), fb.end(), by_address))
      return true;
    if (std::lexicographical_compare(fb.begin(), fb.end(), fa.begin(), fa.end(), by_address))
      return false;
    if (kept[a].head.mangled != kept[b].head.mangled)
      return kept[a].head.mangled < kept[b].head.mangled;
    return a < b;
  });
  if (top && order.size() > *top) order.resize(*top);
  for (size_t i : order) {
    if (!filtering) kept[i].frames = grouper.resolve(kept[i].head.site);
    sel.groups.push_back(std::move(kept[i]));
  }
  return sel;
}

// "  #0 0x401136 leak_one (/src/leaks.c:12) [/usr/bin/leaks]", one line per frame, or
// "  (no backtrace)".
void append_frames_text(std::string& out, const std::vector<ReportFrame>& frames);
// "frames": [{"address", "function", "file", "line", "module", "inlined"}], as key and
// value of the object being written.
void write_frames_json(JsonWriter& w, const std::vector<ReportFrame>& frames);

// "1 byte", "2 bytes", ...
std::string plural(uint64_t n, const char* one, const char* many);

// What the group reports (leaks, allocators, temporary, peak, fds) write alike.
//
// Text: the end of the summary line, "N groups, M processes)" and a newline, with
// "; the first K shown" before the parenthesis when --top cut the list.
void append_group_totals(std::string& out, size_t groups_total, size_t shown, uint64_t processes);
// Text: "suppressed: COUNTS (N groups)" and a newline, when any group was suppressed
// (--suppressions).
void append_suppressed(std::string& out, std::string_view counts, size_t suppressed_groups);
// Text: one group, a blank line, `headline` (which names the group's function, see
// shown_function), a newline and the frames.
void append_group_text(std::string& out, std::string_view headline,
                       const std::vector<ReportFrame>& frames);
// The name a group is shown by in text: its function, "??" when the records had none.
std::string_view shown_function(const std::string& function);

// JSON: a group's "function", "mangled", then what `more(w)` writes (fields a report
// adds), then "frames".
template <typename More>
void write_group_json(JsonWriter& w, const std::string& function, const std::string& mangled,
                      const std::vector<ReportFrame>& frames, More more) {
  w.key("function").string(function);
  w.key("mangled").string(mangled);
  more(w);
  write_frames_json(w, frames);
}
inline void write_group_json(JsonWriter& w, const std::string& function, const std::string& mangled,
                             const std::vector<ReportFrame>& frames) {
  write_group_json(w, function, mangled, frames, [](JsonWriter&) {});
}

// JSON: "groups_total" and "groups", one object per selected group: what
// `counts(w, group.counts)` writes, then the group as write_group_json writes it.
template <typename Counts, typename WriteCounts>
void write_groups_json(JsonWriter& w, const GroupSelection<Counts>& sel, WriteCounts counts) {
  w.key("groups_total").unsigned_integer(sel.groups_total);
  w.key("groups").begin_array();
  for (const auto& g : sel.groups) {
    w.begin_object();
    counts(w, g.counts);
    write_group_json(w, g.head.function, g.head.mangled, g.frames);
    w.end_object();
  }
  w.end_array();
}

}  // namespace ft::post
