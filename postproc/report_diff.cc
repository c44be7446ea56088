#include "postproc/report_diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "postproc/heap_counts.h"
#include "postproc/heap_session.h"

namespace ft::post {

namespace {

struct Side {
  HeapCounts counts;
  uint64_t processes = 0;
};

struct Row {
  GroupHead head;
  std::vector<ReportFrame> frames;
  bool seen = false;
  bool frames_from_new = false;
  HeapCounts old_counts, new_counts;
};

// What makes groups of the two runs the same: see the header.
std::string match_key(const GroupHead& head, const std::vector<ReportFrame>& frames) {
  std::string key = head.mangled;
  for (const ReportFrame& f : frames) {
    key += '\n';
    std::string module =
        f.module ? std::filesystem::path(*f.module).filename().string() : std::string("?");
    if (f.function && f.file && f.line) {
      key += fmt::format("{}\t{}\t{}", *f.function, *f.file, *f.line);
    } else if (f.function) {
      key += *f.function;
    } else if (f.module) {
      key += fmt::format("{}+{:#x}", module, f.module_offset);
    } else {
      key += fmt::format("{:#x}", f.address);
    }
  }
  return key;
}

int64_t delta(uint64_t before, uint64_t after) {
  return static_cast<int64_t>(after) - static_cast<int64_t>(before);
}

void write_counts(JsonWriter& w, const char* name, const HeapCounts& c) {
  w.key(name).begin_object();
  w.key("leaked_bytes").unsigned_integer(c.leaked_bytes);
  w.key("leaked_blocks").unsigned_integer(c.leaked_blocks);
  w.key("allocations").unsigned_integer(c.allocations);
  w.key("allocated_bytes").unsigned_integer(c.allocated_bytes);
}

std::string signed_text(int64_t v) { return v > 0 ? fmt::format("+{}", v) : std::to_string(v); }

}  // namespace

Status report_diff(const ReportOptions& options, Output& out, Diagnostics& diag) {
  auto filter = group_filter(options);
  if (!filter) return filter.error();
  HeapSession session(diag, options.resolve);
  HeapReplayOptions replay_options = heap_replay_options(options);

  std::vector<std::vector<std::string>> inputs = options.inputs;
  if (inputs.size() != 2 && options.traces.size() == 2) {
    inputs = {{options.traces[0]}, {options.traces[1]}};
  }
  if (inputs.size() != 2) return Error::msg("diff compares two traces (files or directories)");

  std::map<std::string, Row> rows;
  Side sides[2];
  for (int s = 0; s < 2; ++s) {
    SiteCounter counter;
    auto processes = session.replay(inputs[s], counter, replay_options);
    if (!processes) return processes.error();
    sides[s].processes = *processes;
    for (const auto& [site, c] : counter.per_site()) {
      GroupHead head = session.grouper().head(session.grouper().group_of(site));
      std::vector<ReportFrame> frames = session.grouper().resolve(head.site);
      if (!filter->selects(head, frames) || filter->suppresses(head, frames)) continue;
      sides[s].counts += c;
      Row& row = rows[match_key(head, frames)];
      if ((s == 1 && !row.frames_from_new) || (s == 0 && !row.seen)) {
        row.head = std::move(head);
        row.frames = std::move(frames);
        row.frames_from_new = s == 1;
      }
      row.seen = true;
      (s == 0 ? row.old_counts : row.new_counts) += c;
    }
  }

  std::vector<const Row*> changed;
  for (const auto& [key, row] : rows) {
    const HeapCounts& a = row.old_counts;
    const HeapCounts& b = row.new_counts;
    if (a.leaked_bytes != b.leaked_bytes || a.leaked_blocks != b.leaked_blocks ||
        a.allocations != b.allocations || a.allocated_bytes != b.allocated_bytes) {
      changed.push_back(&row);
    }
  }
  auto magnitude = [&](const Row* r) {
    const HeapCounts& a = r->old_counts;
    const HeapCounts& b = r->new_counts;
    auto d = [](uint64_t x, uint64_t y) { return x > y ? x - y : y - x; };
    uint64_t bytes = d(a.leaked_bytes, b.leaked_bytes);
    uint64_t blocks = d(a.leaked_blocks, b.leaked_blocks);
    uint64_t count = d(a.allocations, b.allocations);
    uint64_t allocated = d(a.allocated_bytes, b.allocated_bytes);
    if (options.sort == "blocks") return std::tuple(blocks, bytes, count, allocated);
    if (options.sort == "count") return std::tuple(count, allocated, bytes, blocks);
    return std::tuple(bytes, blocks, count, allocated);
  };
  std::stable_sort(changed.begin(), changed.end(),
                   [&](const Row* a, const Row* b) { return magnitude(a) > magnitude(b); });
  size_t groups_total = changed.size();
  if (options.top && changed.size() > static_cast<size_t>(*options.top)) {
    changed.resize(static_cast<size_t>(*options.top));
  }

  std::string text;
  if (options.json) {
    JsonWriter w(text, 2);
    w.begin_object();
    for (int s = 0; s < 2; ++s) {
      write_counts(w, s == 0 ? "old" : "new", sides[s].counts);
      w.key("processes").unsigned_integer(sides[s].processes);
      w.end_object();
    }
    w.key("groups_total").unsigned_integer(groups_total);
    w.key("groups").begin_array();
    for (const Row* r : changed) {
      w.begin_object();
      w.key("function").string(r->head.function);
      w.key("mangled").string(r->head.mangled);
      write_counts(w, "old", r->old_counts);
      w.end_object();
      write_counts(w, "new", r->new_counts);
      w.end_object();
      w.key("delta").begin_object();
      w.key("leaked_bytes").integer(delta(r->old_counts.leaked_bytes, r->new_counts.leaked_bytes));
      w.key("leaked_blocks").integer(delta(r->old_counts.leaked_blocks, r->new_counts.leaked_blocks));
      w.key("allocations").integer(delta(r->old_counts.allocations, r->new_counts.allocations));
      w.key("allocated_bytes")
          .integer(delta(r->old_counts.allocated_bytes, r->new_counts.allocated_bytes));
      w.end_object();
      write_frames_json(w, r->frames);
      w.end_object();
    }
    w.end_array();
    w.end_object();
    text += '\n';
    out.write(text);
    return {};
  }

  auto it = std::back_inserter(text);
  const HeapCounts& a = sides[0].counts;
  const HeapCounts& b = sides[1].counts;
  fmt::format_to(it, "leaked: {} in {} -> {} in {} ({} bytes, {} blocks)\n",
                 plural(a.leaked_bytes, "byte", "bytes"), plural(a.leaked_blocks, "block", "blocks"),
                 plural(b.leaked_bytes, "byte", "bytes"), plural(b.leaked_blocks, "block", "blocks"),
                 signed_text(delta(a.leaked_bytes, b.leaked_bytes)),
                 signed_text(delta(a.leaked_blocks, b.leaked_blocks)));
  fmt::format_to(it, "allocated: {} of {} -> {} of {} ({} allocations, {} bytes)\n",
                 plural(a.allocations, "allocation", "allocations"),
                 plural(a.allocated_bytes, "byte", "bytes"),
                 plural(b.allocations, "allocation", "allocations"),
                 plural(b.allocated_bytes, "byte", "bytes"),
                 signed_text(delta(a.allocations, b.allocations)),
                 signed_text(delta(a.allocated_bytes, b.allocated_bytes)));
  fmt::format_to(it, "{} changed", plural(groups_total, "group", "groups"));
  if (changed.size() < groups_total) fmt::format_to(it, "; the first {} shown", changed.size());
  text += '\n';
  for (const Row* r : changed) {
    const HeapCounts& o = r->old_counts;
    const HeapCounts& n = r->new_counts;
    fmt::format_to(it,
                   "\nleaked {} bytes, {} blocks ({} -> {} bytes); allocations {} ({} -> {}) by {}\n",
                   signed_text(delta(o.leaked_bytes, n.leaked_bytes)),
                   signed_text(delta(o.leaked_blocks, n.leaked_blocks)), o.leaked_bytes,
                   n.leaked_bytes, signed_text(delta(o.allocations, n.allocations)), o.allocations,
                   n.allocations, r->head.function.empty() ? "??" : r->head.function);
    append_frames_text(text, r->frames);
  }
  out.write(text);
  return {};
}

}  // namespace ft::post
