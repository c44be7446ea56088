#include "postproc/site_groups.h"

#include <fmt/format.h>

namespace ft::post {

uint32_t SiteGrouper::group_of(SiteId site) {
  if (group_of_site_.size() <= site) group_of_site_.resize(sites_.size(), kUnset);
  uint32_t& g = group_of_site_[site];
  if (g != kUnset) return g;
  Key key{sites_.site(site).function, {}};
  std::vector<Symbolizer::Location> frames = sites_.frames(site);
  key.frames.reserve(frames.size());
  for (const Symbolizer::Location& l : frames) key.frames.push_back(symbolizer_.key(l));
  auto [it, inserted] = index_.try_emplace(std::move(key), static_cast<uint32_t>(first_site_.size()));
  if (inserted) first_site_.push_back(site);
  g = it->second;
  return g;
}

GroupHead SiteGrouper::head(uint32_t group) {
  GroupHead h;
  h.site = first_site_[group];
  h.mangled = sites_.function(h.site);
  h.function = demangler_.full(h.mangled);
  return h;
}

std::vector<ReportFrame> SiteGrouper::resolve(SiteId site) {
  std::vector<ReportFrame> out;
  for (const Symbolizer::Location& loc : sites_.frames(site)) {
    const ResolvedAddress& r = symbolizer_.resolve(loc, true);
    uint64_t offset = symbolizer_.key(loc).offset;
    for (const SourceFrame& sf : r.frames) {
      ReportFrame f;
      f.address = loc.address;
      f.function = sf.function;
      f.file = sf.file;
      f.line = sf.line;
      if (r.module != nullptr) f.module = *r.module;
      f.module_offset = offset;
      f.inlined = sf.inlined;
      out.push_back(std::move(f));
    }
  }
  return out;
}

void append_frames_text(std::string& out, const std::vector<ReportFrame>& frames) {
  auto it = std::back_inserter(out);
  if (frames.empty()) out += "  (no backtrace)\n";
  for (size_t i = 0; i < frames.size(); ++i) {
    const ReportFrame& f = frames[i];
    fmt::format_to(it, "  #{} {:#x} {}", i, f.address, f.function ? *f.function : "??");
    if (f.file) {
      out += " (" + *f.file;
      if (f.line) fmt::format_to(it, ":{}", *f.line);
      out += ')';
    }
    if (f.module) out += " [" + *f.module + "]";
    if (f.inlined) out += " (inlined)";
    out += '\n';
  }
}

void write_frames_json(JsonWriter& w, const std::vector<ReportFrame>& frames) {
  auto string_or_null = [&](const std::optional<std::string>& s) {
    if (s) {
      w.string(*s);
    } else {
      w.null();
    }
  };
  w.key("frames").begin_array();
  for (const ReportFrame& f : frames) {
    w.begin_object();
    w.key("address").string(fmt::format("{:#x}", f.address));
    w.key("function");
    string_or_null(f.function);
    w.key("file");
    string_or_null(f.file);
    w.key("line");
    if (f.line) {
      w.integer(*f.line);
    } else {
      w.null();
    }
    w.key("module");
    string_or_null(f.module);
    w.key("inlined").boolean(f.inlined);
    w.end_object();
  }
  w.end_array();
}

std::string plural(uint64_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

void append_group_totals(std::string& out, size_t groups_total, size_t shown, uint64_t processes) {
  out += plural(groups_total, "group", "groups") + ", " + plural(processes, "process", "processes");
  if (shown < groups_total) fmt::format_to(std::back_inserter(out), "; the first {} shown", shown);
  out += ")\n";
}

void append_suppressed(std::string& out, std::string_view counts, size_t suppressed_groups) {
  if (suppressed_groups == 0) return;
  fmt::format_to(std::back_inserter(out), "suppressed: {} ({})\n", counts,
                 plural(suppressed_groups, "group", "groups"));
}

void append_group_text(std::string& out, std::string_view headline,
                       const std::vector<ReportFrame>& frames) {
  out += '\n';
  out += headline;
  out += '\n';
  append_frames_text(out, frames);
}

std::string_view shown_function(const std::string& function) {
  return function.empty() ? std::string_view("??") : std::string_view(function);
}

}  // namespace ft::post
