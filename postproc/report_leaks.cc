#include "postproc/report_leaks.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "functracer/schema.h"
#include "postproc/heap_counts.h"
#include "postproc/heap_session.h"
#include "postproc/json_writer.h"

namespace ft::post {
namespace {

namespace schema = ft::schema;

// The kind names of --kinds and of "kind", and the keys of the "kinds" object.
constexpr const char* kKindNames[] = {schema::leak_kind::kReachable, schema::leak_kind::kPossible,
                                      schema::leak_kind::kIndirect, schema::leak_kind::kDefinite};
constexpr const char* kKindKeys[] = {"still_reachable", "possibly_lost", "indirectly_lost", "definitely_lost"};
constexpr const char* kKindWords[] = {"still reachable", "possibly lost", "indirectly lost", "definitely lost"};
// Listing order: lost kinds first (memcheck's), blocks without a kind, still reachable.
constexpr size_t kOrder[] = {static_cast<size_t>(LeakKind::kDefinite), static_cast<size_t>(LeakKind::kIndirect),
                             static_cast<size_t>(LeakKind::kPossible), kNoKind,
                             static_cast<size_t>(LeakKind::kReachable)};
constexpr size_t kReachable = static_cast<size_t>(LeakKind::kReachable);

size_t order_of(size_t kind) { return static_cast<size_t>(std::find(std::begin(kOrder), std::end(kOrder), kind) - std::begin(kOrder)); }

// The replay reads every trace again and says what is wrong with it, once.
class Quiet : public Diagnostics {
 public:
  void warning(std::string_view) override {}
};

// The last leak scan of each trace: the blocks it found lost, by address.
struct Scan {
  std::unordered_map<uint64_t, LeakKind> lost;
};

// What a first pass over the traces finds: their leak scans. (Functions the engine
// could not trace are warned about by the replay, as in every heap report.)
struct FirstPass {
  std::map<std::string, Scan> scans;
};

Result<FirstPass> first_pass(const std::vector<std::string>& traces) {
  Quiet diag;
  FirstPass pass;
  auto& scans = pass.scans;
  for (const std::string& path : traces) {
    auto reader = TraceReader::open(path, diag);
    if (!reader) return reader.error();
    Scan* scan = nullptr;
    while (const TraceRecord* r = reader->next()) {
      if (r->type == schema::type::kLeakScan) {
        scan = &scans[path];
        scan->lost.clear();
      } else if (r->type == schema::type::kLeak && scan) {
        auto l = schema::LeakRecord::read(*r);
        if (!l) continue;
        for (size_t k = 0; k < 4; ++k)
          if (l->kind == kKindNames[k]) scan->lost[l->address] = static_cast<LeakKind>(k);
      }
    }
  }
  return pass;
}

// Blocks live at the end, per kind and site.
class KindCounter : public HeapObserver {
 public:
  explicit KindCounter(const std::map<std::string, Scan>& scans) : scans_(scans) {}
  void begin_process(const TraceReader& reader) override {
    auto it = scans_.find(reader.path());
    scan_ = it == scans_.end() ? nullptr : &it->second;
  }
  void on_live_at_end(const Block& block, ImageEnd how) override {
    size_t kind = kNoKind;
    if (scan_ && how == ImageEnd::kEnd) {
      auto it = scan_->lost.find(block.address);
      kind = it == scan_->lost.end() ? kReachable : static_cast<size_t>(it->second);
    }
    auto& c = counts_[kind];
    if (c.size() <= block.site) c.resize(block.site + 1);
    ++c[block.site].leaked_blocks;
    c[block.site].leaked_bytes += block.size;
  }
  std::vector<std::pair<SiteId, HeapCounts>> per_site(size_t kind) const {
    std::vector<std::pair<SiteId, HeapCounts>> out;
    for (size_t i = 0; i < counts_[kind].size(); ++i)
      if (counts_[kind][i].leaked_blocks) out.emplace_back(static_cast<SiteId>(i), counts_[kind][i]);
    return out;
  }

 private:
  const std::map<std::string, Scan>& scans_;
  const Scan* scan_ = nullptr;
  std::vector<HeapCounts> counts_[kKindSlots];
};

LeakGroup leak_group(SelectedGroup<HeapCounts>& g, size_t kind) {
  LeakGroup lg;
  lg.mangled = std::move(g.head.mangled);
  lg.function = std::move(g.head.function);
  lg.bytes = g.counts.leaked_bytes;
  lg.blocks = g.counts.leaked_blocks;
  lg.kind = kind;
  lg.frames = std::move(g.frames);
  return lg;
}

}  // namespace

Result<uint32_t> parse_leak_kinds(const std::string& list) {
  uint32_t bits = 0;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = std::min(list.find(',', start), list.size());
    std::string word = list.substr(start, comma - start);
    if (word == "all") bits |= 0xf;
    else if (word == "none") {
    } else {
      size_t k = 0;
      while (k < 4 && word != kKindNames[k]) ++k;
      if (k == 4)
        return Error::msg("unknown leak kind '" + word + "' (definite, indirect, possible, reachable, all, none)");
      bits |= 1u << k;
    }
    start = comma + 1;
  }
  return bits;
}

namespace {
Result<LeakReport> compute_leak_kinds(const std::vector<std::string>& traces, const LeakOptions& options,
                                      const std::map<std::string, Scan>& scans, CountRank rank, Diagnostics& diag);
}  // namespace

uint64_t LeakReport::lost_blocks() const {
  if (!scanned) return leaked_blocks;
  return leaked_blocks - kinds[kReachable].blocks;
}

Result<LeakReport> compute_leaks(const std::vector<std::string>& traces, const LeakOptions& options,
                                 Diagnostics& diag) {
  CountRank rank = [](const HeapCounts& c) { return std::pair(c.leaked_bytes, c.leaked_blocks); };
  if (options.sort == LeakSort::kBlocks) {
    rank = [](const HeapCounts& c) { return std::pair(c.leaked_blocks, c.leaked_bytes); };
  }
  auto pass = first_pass(traces);
  if (!pass) return pass.error();
  if (!pass->scans.empty()) return compute_leak_kinds(traces, options, pass->scans, rank, diag);
  auto ranked = rank_groups(traces, options.replay, options.resolve, options.filter, rank,
                            options.top, diag);
  if (!ranked) return ranked.error();
  GroupSelection<HeapCounts>& sel = ranked->selection;

  LeakReport report;
  report.processes = ranked->processes;
  report.cut_short = ranked->cut_short;
  report.at = options.replay.stop;
  report.leaked_bytes = sel.total.leaked_bytes;
  report.leaked_blocks = sel.total.leaked_blocks;
  report.groups_total = sel.groups_total;
  report.suppressed_bytes = sel.suppressed.leaked_bytes;
  report.suppressed_blocks = sel.suppressed.leaked_blocks;
  report.suppressed_groups = sel.suppressed_groups;
  for (SelectedGroup<HeapCounts>& g : sel.groups) report.groups.push_back(leak_group(g, kNoKind));
  return report;
}

namespace {
Result<LeakReport> compute_leak_kinds(const std::vector<std::string>& traces, const LeakOptions& options,
                                      const std::map<std::string, Scan>& scans, CountRank rank, Diagnostics& diag) {
  HeapSession session(diag, options.resolve);
  KindCounter counter(scans);
  auto processes = session.replay(traces, counter, options.replay);
  if (!processes) return processes.error();
  LeakReport report;
  report.processes = *processes;
  report.cut_short = session.cut_short();
  report.at = options.replay.stop;
  report.scanned = true;
  report.listed = options.kinds;
  auto greater = [rank](const HeapCounts& a, const HeapCounts& b) { return rank(a) > rank(b); };
  for (size_t kind : kOrder) {
    auto sel = select_groups(session.grouper(), counter.per_site(kind), options.filter, greater, std::nullopt);
    report.leaked_bytes += sel.total.leaked_bytes;
    report.leaked_blocks += sel.total.leaked_blocks;
    report.kinds[kind] = {sel.total.leaked_bytes, sel.total.leaked_blocks, sel.groups_total};
    report.suppressed_bytes += sel.suppressed.leaked_bytes;
    report.suppressed_blocks += sel.suppressed.leaked_blocks;
    report.suppressed_groups += sel.suppressed_groups;
    bool listed = kind == kNoKind || !options.kinds || (*options.kinds >> kind) & 1;
    if (!listed) continue;
    report.groups_total += sel.groups_total;
    for (SelectedGroup<HeapCounts>& g : sel.groups) report.groups.push_back(leak_group(g, kind));
  }
  // Largest first over every kind (the JSON contract); equal ones in listing order.
  auto key = [&](const LeakGroup& g) {
    HeapCounts c;
    c.leaked_bytes = g.bytes;
    c.leaked_blocks = g.blocks;
    return rank(c);
  };
  std::stable_sort(report.groups.begin(), report.groups.end(),
                   [&](const LeakGroup& a, const LeakGroup& b) { return key(a) > key(b); });
  if (options.top && report.groups.size() > *options.top) report.groups.resize(*options.top);
  return report;
}

// The line after the totals that says the report is incomplete, when it is.
std::string cut_short_text(const LeakReport& report) {
  if (report.cut_short == 0) return {};
  return fmt::format("incomplete: {} cut short (no exit, detach or killed record); blocks freed after the cut "
                     "count as live here, not all of them are leaks\n",
                     report.cut_short == 1 ? std::string("1 trace") : std::to_string(report.cut_short) + " traces");
}

// Text of the kinds: the totals line, the groups lost kinds first, the still
// reachable ones summed at the end unless --kinds lists them.
std::string format_kinds_text(const LeakReport& report) {
  std::string text;
  auto out = std::back_inserter(text);
  fmt::format_to(out, "{} in {} in use at the end ({}, {}",
                 plural(report.leaked_bytes, "byte", "bytes"), plural(report.leaked_blocks, "block", "blocks"),
                 plural(report.groups_total, "group", "groups"), plural(report.processes, "process", "processes"));
  if (report.groups.size() < report.groups_total) fmt::format_to(out, "; the first {} shown", report.groups.size());
  text += ")\n";
  text += cut_short_text(report);
  for (size_t kind : kOrder) {
    if (kind == kNoKind) {
      if (report.kinds[kind].blocks)
        fmt::format_to(out, "  not scanned: {} in {}\n", plural(report.kinds[kind].bytes, "byte", "bytes"),
                       plural(report.kinds[kind].blocks, "block", "blocks"));
      continue;
    }
    fmt::format_to(out, "  {}: {} in {}\n", kKindWords[kind], plural(report.kinds[kind].bytes, "byte", "bytes"),
                   plural(report.kinds[kind].blocks, "block", "blocks"));
  }
  if (report.suppressed_groups > 0) {
    fmt::format_to(out, "suppressed: {} in {} ({})\n", plural(report.suppressed_bytes, "byte", "bytes"),
                   plural(report.suppressed_blocks, "block", "blocks"),
                   plural(report.suppressed_groups, "group", "groups"));
  }
  std::vector<const LeakGroup*> shown;
  for (const LeakGroup& g : report.groups)
    if (report.listed || g.kind != kReachable) shown.push_back(&g);
  std::stable_sort(shown.begin(), shown.end(),
                   [](const LeakGroup* a, const LeakGroup* b) { return order_of(a->kind) < order_of(b->kind); });
  for (const LeakGroup* g : shown) {
    fmt::format_to(out, "\n{} in {} {}{}allocated by {}\n", plural(g->bytes, "byte", "bytes"),
                   plural(g->blocks, "block", "blocks"), g->kind == kNoKind ? "" : kKindWords[g->kind],
                   g->kind == kNoKind ? "" : ", ", g->function.empty() ? "??" : g->function);
    append_frames_text(text, g->frames);
  }
  const KindTotals& r = report.kinds[kReachable];
  if (!report.listed && r.blocks)
    fmt::format_to(out, "\nstill reachable: {} in {} ({}; --kinds=reachable lists them)\n",
                   plural(r.bytes, "byte", "bytes"), plural(r.blocks, "block", "blocks"),
                   plural(r.groups, "group", "groups"));
  return text;
}
}  // namespace

std::string format_leaks_text(const LeakReport& report) {
  if (report.scanned) return format_kinds_text(report);
  std::string text;
  auto out = std::back_inserter(text);
  fmt::format_to(out, "{} in {} {} ({}, {}", plural(report.leaked_bytes, "byte", "bytes"),
                 plural(report.leaked_blocks, "block", "blocks"),
                 report.at          ? "live at " + format_when(*report.at)
                 : report.cut_short ? std::string("live at the end")
                                    : std::string("leaked"),
                 plural(report.groups_total, "group", "groups"),
                 plural(report.processes, "process", "processes"));
  if (report.groups.size() < report.groups_total) {
    fmt::format_to(out, "; the first {} shown", report.groups.size());
  }
  text += ")\n";
  text += cut_short_text(report);
  if (report.suppressed_groups > 0) {
    fmt::format_to(out, "suppressed: {} in {} ({})\n",
                   plural(report.suppressed_bytes, "byte", "bytes"),
                   plural(report.suppressed_blocks, "block", "blocks"),
                   plural(report.suppressed_groups, "group", "groups"));
  }
  for (const LeakGroup& g : report.groups) {
    fmt::format_to(out, "\n{} in {} allocated by {}\n", plural(g.bytes, "byte", "bytes"),
                   plural(g.blocks, "block", "blocks"), g.function.empty() ? "??" : g.function);
    append_frames_text(text, g.frames);
  }
  return text;
}

std::string format_leaks_json(const LeakReport& report) {
  std::string text;
  JsonWriter w(text, 2);
  w.begin_object();
  w.key("leaked_bytes").unsigned_integer(report.leaked_bytes);
  w.key("leaked_blocks").unsigned_integer(report.leaked_blocks);
  w.key("processes").unsigned_integer(report.processes);
  w.key("groups_total").unsigned_integer(report.groups_total);
  if (report.at) w.key("at").string(format_when(*report.at));
  if (report.cut_short) w.key("cut_short").unsigned_integer(report.cut_short);
  w.key("suppressed_bytes").unsigned_integer(report.suppressed_bytes);
  w.key("suppressed_blocks").unsigned_integer(report.suppressed_blocks);
  if (report.scanned) {
    w.key("kinds").begin_object();
    for (size_t kind : kOrder) {
      if (kind == kNoKind) continue;
      w.key(kKindKeys[kind]).begin_object();
      w.key("bytes").unsigned_integer(report.kinds[kind].bytes);
      w.key("blocks").unsigned_integer(report.kinds[kind].blocks);
      w.end_object();
    }
    w.end_object();
  }
  w.key("groups").begin_array();
  for (const LeakGroup& g : report.groups) {
    w.begin_object();
    w.key("bytes").unsigned_integer(g.bytes);
    w.key("blocks").unsigned_integer(g.blocks);
    if (report.scanned) {
      w.key("kind");
      if (g.kind == kNoKind) w.null();
      else w.string(kKindNames[g.kind]);
    }
    w.key("function").string(g.function);
    w.key("mangled").string(g.mangled);
    write_frames_json(w, g.frames);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  text += '\n';
  return text;
}

Status report_leaks(const ReportOptions& options, Output& out, Diagnostics& diag) {
  LeakOptions leak_options;
  if (options.sort == "blocks") leak_options.sort = LeakSort::kBlocks;
  if (options.top) leak_options.top = static_cast<size_t>(*options.top);
  leak_options.replay = heap_replay_options(options);
  auto filter = group_filter(options);
  if (!filter) return filter.error();
  leak_options.filter = std::move(*filter);
  leak_options.resolve = options.resolve;
  if (!options.leak_kinds.empty()) {
    auto kinds = parse_leak_kinds(options.leak_kinds);
    if (!kinds) return Error::msg("option '--kinds': " + kinds.error().message);
    leak_options.kinds = *kinds;
  }
  auto report = compute_leaks(options.traces, leak_options, diag);
  if (!report) return report.error();
  out.write(options.json ? format_leaks_json(*report) : format_leaks_text(*report));
  if (options.error_exitcode && report->lost_blocks() > 0) out.set_exit_status(static_cast<int>(*options.error_exitcode));
  return {};
}

}  // namespace ft::post
