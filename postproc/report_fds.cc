#include "postproc/report_fds.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "functracer/schema.h"
#include "postproc/json_writer.h"
#include "postproc/plugin_records.h"
#include "postproc/site_groups.h"
#include "postproc/site_table.h"

namespace ft::post {

namespace {

// What select_groups sums per site and group. Sites are (function, backtrace) and no
// function opens both fds and streams, so a group has one kind; a hand-made trace that
// mixes them gets two entries for the group.
struct FdCounts {
  uint64_t fds = 0;
  uint64_t streams = 0;

  FdCounts& operator+=(const FdCounts& o) {
    fds += o.fds;
    streams += o.streams;
    return *this;
  }
  uint64_t total() const { return fds + streams; }
};

// An fd or a stream open during the replay.
struct Open {
  SiteId site = 0;
  int64_t fd = -1;
  std::optional<std::string> path;
};

// A leak kept for listing; `order` is when it was left open, over all traces.
struct Listed {
  uint64_t order = 0;
  FdKind kind = FdKind::kFd;
  OpenEntry entry;
};

// The replay of doc/trace-format.md §3.6 (see report_fds.h), counting leaks per site
// and keeping the first FdReport::kMaxListed of each kind per site for the listings.
// Memory is bounded by what is open at once and by the distinct sites.
class FdReplay {
 public:
  FdReplay(SiteTable& sites, Symbolizer& symbolizer, Diagnostics& diag, std::optional<int64_t> tid)
      : sites_(sites), symbolizer_(symbolizer), diag_(diag), tid_(tid) {}

  Status run(const std::vector<std::string>& traces) {
    return replay_each_trace(traces, diag_, [this](TraceReader& reader) {
      replay(reader);
      ++processes_;
    });
  }

  uint64_t processes() const { return processes_; }
  // The sites with leaks, in SiteId order.
  std::vector<std::pair<SiteId, FdCounts>> per_site() const {
    std::vector<std::pair<SiteId, FdCounts>> out;
    for (SiteId s = 0; s < counts_.size(); ++s) {
      if (counts_[s].total() > 0) out.emplace_back(s, counts_[s]);
    }
    return out;
  }
  const std::vector<Listed>& listed(SiteId site) const {
    static const std::vector<Listed> kNone;
    return site < listed_.size() ? listed_[site] : kNone;
  }

 private:
  void replay(TraceReader& reader);
  void leak(FdKind kind, const Open& o, uint64_t stream);
  // fd was closed, or opened anew: a stream that held it no longer does.
  void forget_stream_fd(int64_t fd) {
    auto [first, last] = stream_of_fd_.equal_range(fd);
    for (auto it = first; it != last; ++it) {
      if (auto s = streams_.find(it->second); s != streams_.end()) s->second.fd = -1;
    }
    stream_of_fd_.erase(first, last);
  }
  void add_stream(uint64_t address, Open o) {
    if (o.fd >= 0) stream_of_fd_.emplace(o.fd, address);
    streams_.emplace(address, std::move(o));
  }
  void remove_stream(uint64_t address) {
    auto it = streams_.find(address);
    if (it == streams_.end()) return;
    auto [first, last] = stream_of_fd_.equal_range(it->second.fd);
    for (auto f = first; f != last; ++f) {
      if (f->second == address) {
        stream_of_fd_.erase(f);
        break;
      }
    }
    streams_.erase(it);
  }
  void clear_streams() {
    streams_.clear();
    stream_of_fd_.clear();
  }
  bool followed(const TraceRecord& r) const { return !tid_ || r.tid == *tid_; }
  static std::optional<std::string> path_of(const TraceRecord& r) {
    const std::string* p = r.get_str(schema::key::kPath);
    return p != nullptr ? std::optional<std::string>(*p) : std::nullopt;
  }

  SiteTable& sites_;
  Symbolizer& symbolizer_;
  Diagnostics& diag_;
  std::optional<int64_t> tid_;
  // Ordered, so that leaks are listed by fd number and stream address.
  std::map<int64_t, Open> fds_;
  std::map<uint64_t, Open> streams_;
  // The streams holding each fd.
  std::unordered_multimap<int64_t, uint64_t> stream_of_fd_;
  std::vector<FdCounts> counts_;             // by SiteId
  std::vector<std::vector<Listed>> listed_;  // by SiteId
  PluginRecords records_{schema::plugin::kFileops, "descriptor"};
  uint64_t order_ = 0;
  uint64_t processes_ = 0;
};

void FdReplay::leak(FdKind kind, const Open& o, uint64_t stream) {
  if (counts_.size() <= o.site) {
    counts_.resize(o.site + 1);
    listed_.resize(o.site + 1);
  }
  FdCounts& c = counts_[o.site];
  uint64_t& n = kind == FdKind::kFd ? c.fds : c.streams;
  if (n++ < FdReport::kMaxListed) {
    listed_[o.site].push_back(Listed{order_, kind, OpenEntry{o.fd, o.path, stream}});
  }
  ++order_;
}

void FdReplay::replay(TraceReader& reader) {
  fds_.clear();
  clear_streams();
  symbolizer_.begin_process();
  records_.begin();

  while (const TraceRecord* r = reader.next()) {
    symbolizer_.observe(*r);
    const std::string& type = r->type;
    namespace rt = schema::type;
    if (type == rt::kFdOpen) {
      records_.count();
      auto fd = r->get_int(schema::key::kFd);
      if (!fd) continue;
      // An fd that is open already was closed unseen: replaced, not leaked.
      fds_.erase(*fd);
      forget_stream_fd(*fd);
      if (!followed(*r)) continue;
      fds_.emplace(*fd, Open{sites_.intern(*r, symbolizer_), *fd, path_of(*r)});
    } else if (type == rt::kFdClose) {
      records_.count();
      auto fd = r->get_int(schema::key::kFd);
      if (!fd) continue;
      fds_.erase(*fd);
      forget_stream_fd(*fd);
    } else if (type == rt::kFileOpen) {
      records_.count();
      auto stream = r->get_hex(schema::key::kStream);
      if (!stream) continue;
      remove_stream(*stream);
      if (!followed(*r)) continue;
      int64_t fd = std::max<int64_t>(r->get_int(schema::key::kFd).value_or(-1), -1);
      add_stream(*stream, Open{sites_.intern(*r, symbolizer_), fd, path_of(*r)});
    } else if (type == rt::kFileClose) {
      records_.count();
      if (auto stream = r->get_hex(schema::key::kStream)) remove_stream(*stream);
    } else if (type == rt::kExec) {
      // The streams go with the old image, never closed; the fds stay (the close-on-exec
      // ones come next as fd_close records).
      for (const auto& [address, o] : streams_) leak(FdKind::kStream, o, address);
      clear_streams();
    } else if (type == rt::kLost) {
      records_.lost(*r);
    }
  }
  for (const auto& [fd, o] : fds_) leak(FdKind::kFd, o, 0);
  for (const auto& [address, o] : streams_) leak(FdKind::kStream, o, address);
  fds_.clear();
  clear_streams();

  records_.warn_lost(reader, diag_);
  records_.warn_without_plugin(reader, diag_);
}

}  // namespace

Result<FdReport> compute_fds(const std::vector<std::string>& traces, const FdOptions& options,
                             Diagnostics& diag) {
  Symbolizer symbolizer(diag, options.resolve);
  SiteTable sites;
  SiteGrouper grouper(sites, symbolizer);
  FdReplay replay(sites, symbolizer, diag, options.tid);
  if (Status st = replay.run(traces); !st) return st.error();

  std::vector<std::pair<SiteId, FdCounts>> leaked = replay.per_site();
  auto greater = [](const FdCounts& a, const FdCounts& b) { return a.total() > b.total(); };
  GroupSelection<FdCounts> sel =
      select_groups(grouper, leaked, options.filter, greater, options.top);

  FdReport report;
  report.processes = replay.processes();
  report.open_fds = sel.total.fds;
  report.open_streams = sel.total.streams;
  report.groups_total = sel.groups_total;
  report.groups_shown = sel.groups.size();
  report.suppressed_fds = sel.suppressed.fds;
  report.suppressed_streams = sel.suppressed.streams;
  report.suppressed_groups = sel.suppressed_groups;

  // The sites of each group shown, for their listings.
  std::map<uint32_t, std::vector<SiteId>> sites_of;
  for (const SelectedGroup<FdCounts>& g : sel.groups) sites_of[grouper.group_of(g.head.site)];
  for (const auto& [site, counts] : leaked) {
    auto it = sites_of.find(grouper.group_of(site));
    if (it != sites_of.end()) it->second.push_back(site);
  }

  for (SelectedGroup<FdCounts>& g : sel.groups) {
    std::vector<Listed> listed;
    for (SiteId site : sites_of[grouper.group_of(g.head.site)]) {
      const std::vector<Listed>& l = replay.listed(site);
      listed.insert(listed.end(), l.begin(), l.end());
    }
    std::sort(listed.begin(), listed.end(),
              [](const Listed& a, const Listed& b) { return a.order < b.order; });
    for (FdKind kind : {FdKind::kFd, FdKind::kStream}) {
      uint64_t count = kind == FdKind::kFd ? g.counts.fds : g.counts.streams;
      if (count == 0) continue;
      FdGroup fg;
      fg.kind = kind;
      fg.mangled = g.head.mangled;
      fg.function = g.head.function;
      fg.count = count;
      for (const Listed& l : listed) {
        if (l.kind == kind && fg.open.size() < FdReport::kMaxListed) fg.open.push_back(l.entry);
      }
      fg.frames = g.frames;
      report.groups.push_back(std::move(fg));
    }
  }
  return report;
}

namespace {

std::string entry_text(const FdGroup& g, const OpenEntry& e) {
  std::string s;
  if (g.kind == FdKind::kStream) {
    s = fmt::format("{:#x} ({})", e.stream, e.fd >= 0 ? fmt::format("fd {}", e.fd) : "fd ?");
  } else {
    s = std::to_string(e.fd);
  }
  if (e.path) s += " " + *e.path;
  return s;
}

}  // namespace

std::string format_fds_text(const FdReport& report) {
  std::string text = fmt::format("{} and {} left open (",
                                 plural(report.open_fds, "file descriptor", "file descriptors"),
                                 plural(report.open_streams, "stream", "streams"));
  append_group_totals(text, report.groups_total, report.groups_shown, report.processes);
  append_suppressed(text,
                    plural(report.suppressed_fds, "file descriptor", "file descriptors") + " and " +
                        plural(report.suppressed_streams, "stream", "streams"),
                    report.suppressed_groups);
  for (const FdGroup& g : report.groups) {
    std::string headline = fmt::format(
        "{} opened by {}:",
        g.kind == FdKind::kFd ? plural(g.count, "fd", "fds") : plural(g.count, "stream", "streams"),
        shown_function(g.function));
    for (size_t i = 0; i < g.open.size(); ++i) {
      headline += i == 0 ? " " : ", ";
      headline += entry_text(g, g.open[i]);
    }
    if (g.count > g.open.size()) headline += fmt::format(" and {} more", g.count - g.open.size());
    append_group_text(text, headline, g.frames);
  }
  return text;
}

std::string format_fds_json(const FdReport& report) {
  std::string text;
  JsonWriter w(text, 2);
  w.begin_object();
  w.key("open_fds").unsigned_integer(report.open_fds);
  w.key("open_streams").unsigned_integer(report.open_streams);
  w.key("processes").unsigned_integer(report.processes);
  w.key("groups_total").unsigned_integer(report.groups_total);
  w.key("groups").begin_array();
  for (const FdGroup& g : report.groups) {
    w.begin_object();
    w.key("kind").string(g.kind == FdKind::kFd ? "fd" : "stream");
    w.key("count").unsigned_integer(g.count);
    write_group_json(w, g.function, g.mangled, g.frames, [&g](JsonWriter& o) {
      o.key("open").begin_array();
      for (const OpenEntry& e : g.open) {
        o.begin_object();
        o.key("fd");
        e.fd >= 0 ? o.integer(e.fd) : o.null();
        o.key("path");
        e.path ? o.string(*e.path) : o.null();
        if (g.kind == FdKind::kStream) o.key("stream").string(fmt::format("{:#x}", e.stream));
        o.end_object();
      }
      o.end_array();
    });
    w.end_object();
  }
  w.end_array();
  w.end_object();
  text += '\n';
  return text;
}

Status report_fds(const ReportOptions& options, Output& out, Diagnostics& diag) {
  FdOptions fd_options;
  fd_options.tid = options.tid;
  if (options.top) fd_options.top = static_cast<size_t>(*options.top);
  auto filter = group_filter(options);
  if (!filter) return filter.error();
  fd_options.filter = std::move(*filter);
  fd_options.resolve = options.resolve;
  auto report = compute_fds(options.traces, fd_options, diag);
  if (!report) return report.error();
  out.write(options.json ? format_fds_json(*report) : format_fds_text(*report));
  return {};
}

}  // namespace ft::post
