#include "postproc/report_leaks.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_map>

#include "postproc/demangle.h"
#include "postproc/json_writer.h"
#include "postproc/symbolizer.h"
#include "postproc/trace_reader.h"

namespace ft::post {

namespace {

// A backtrace as recorded in one process: allocating entry point and frame locations.
struct StackKey {
  std::string function;
  std::vector<Symbolizer::Location> frames;
  bool operator==(const StackKey&) const = default;
};

struct StackKeyHash {
  size_t operator()(const StackKey& k) const {
    size_t h = std::hash<std::string>()(k.function);
    for (const Symbolizer::Location& l : k.frames)
      h = h * 1000003 ^ (std::hash<uint64_t>()(l.address) + l.mapping);
    return h;
  }
};

struct Stack {
  const StackKey* key = nullptr;
  uint64_t bytes = 0;
  uint64_t blocks = 0;
};

// What makes leaks of several stacks (from several processes) one group: allocating
// entry point and the code each frame points at.
struct GroupKey {
  std::string function;
  std::vector<Symbolizer::CodeKey> frames;
  auto operator<=>(const GroupKey&) const = default;
};

struct Group {
  const Stack* first = nullptr;  // frames are shown as this stack recorded them
  uint64_t bytes = 0;
  uint64_t blocks = 0;
};

struct LiveBlock {
  uint64_t size = 0;
  uint32_t stack = 0;
};

class LeakCollector {
 public:
  LeakCollector(Symbolizer& symbolizer, Diagnostics& diag) : symbolizer_(symbolizer), diag_(diag) {}

  void begin_process(const std::string& path) {
    path_ = path;
    live_.clear();
    lost_ = 0;
    symbolizer_.begin_process();
  }

  void feed(const TraceRecord& r) {
    symbolizer_.observe(r);
    if (r.type == "alloc") {
      on_alloc(r);
    } else if (r.type == "free") {
      if (auto address = r.get_hex("address")) live_.erase(*address);
    } else if (r.type == "exec") {
      flush_live();  // the old image's heap is gone
    } else if (r.type == "lost") {
      lost_ += static_cast<uint64_t>(std::max<int64_t>(r.get_int("count").value_or(0), 0));
    }
  }

  void end_process() {
    flush_live();
    if (lost_ > 0) {
      diag_.warning(path_ + ": " + std::to_string(lost_) +
                    (lost_ == 1 ? " event was" : " events were") +
                    " lost while tracing; leaks may be missing or wrong");
    }
  }

  const std::vector<Stack>& stacks() const { return stacks_; }

 private:
  void on_alloc(const TraceRecord& r) {
    auto address = r.get_hex("address");
    if (!address) return;
    const std::string* function = r.get_str("function");
    int64_t size = r.get_int("size").value_or(0);
    StackKey key;
    if (function != nullptr) key.function = *function;
    if (const HexList* frames = r.get_list("frames")) {
      key.frames.reserve(frames->size());
      for (uint64_t a : *frames) key.frames.push_back(symbolizer_.locate(a));
    }
    auto [it, inserted] = index_.try_emplace(std::move(key), static_cast<uint32_t>(stacks_.size()));
    if (inserted) stacks_.push_back(Stack{&it->first, 0, 0});
    live_[*address] = LiveBlock{static_cast<uint64_t>(std::max<int64_t>(size, 0)), it->second};
  }

  void flush_live() {
    for (const auto& [address, block] : live_) {
      Stack& s = stacks_[block.stack];
      s.bytes += block.size;
      ++s.blocks;
    }
    live_.clear();
  }

  Symbolizer& symbolizer_;
  Diagnostics& diag_;
  std::string path_;
  std::unordered_map<uint64_t, LiveBlock> live_;
  uint64_t lost_ = 0;
  std::vector<Stack> stacks_;
  std::unordered_map<StackKey, uint32_t, StackKeyHash> index_;
};

std::string hex(uint64_t v) { return fmt::format("{:#x}", v); }

std::string plural(uint64_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

}  // namespace

Result<LeakReport> compute_leaks(const std::vector<std::string>& traces, const LeakOptions& options,
                                 Diagnostics& diag) {
  Symbolizer symbolizer(diag);
  LeakCollector collector(symbolizer, diag);
  LeakReport report;
  for (const std::string& path : traces) {
    auto reader = TraceReader::open(path, diag);
    if (!reader) return reader.error();
    collector.begin_process(path);
    while (const TraceRecord* r = reader->next()) collector.feed(*r);
    collector.end_process();
    ++report.processes;
  }

  // Stacks of different processes that point at the same code are one group.
  std::map<GroupKey, size_t> index;
  std::vector<Group> groups;
  for (const Stack& s : collector.stacks()) {
    if (s.blocks == 0) continue;
    GroupKey key{s.key->function, {}};
    for (const Symbolizer::Location& l : s.key->frames) key.frames.push_back(symbolizer.key(l));
    auto [it, inserted] = index.try_emplace(std::move(key), groups.size());
    if (inserted) groups.push_back(Group{&s, 0, 0});
    groups[it->second].bytes += s.bytes;
    groups[it->second].blocks += s.blocks;
    report.leaked_bytes += s.bytes;
    report.leaked_blocks += s.blocks;
  }
  report.groups_total = groups.size();

  auto primary = [&](const Group& g) {
    return options.sort == LeakSort::kBlocks ? g.blocks : g.bytes;
  };
  auto secondary = [&](const Group& g) {
    return options.sort == LeakSort::kBlocks ? g.bytes : g.blocks;
  };
  std::vector<size_t> order(groups.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t ia, size_t ib) {
    const Group& a = groups[ia];
    const Group& b = groups[ib];
    if (primary(a) != primary(b)) return primary(a) > primary(b);
    if (secondary(a) != secondary(b)) return secondary(a) > secondary(b);
    const std::vector<Symbolizer::Location>& fa = a.first->key->frames;
    const std::vector<Symbolizer::Location>& fb = b.first->key->frames;
    auto by_address = [](const Symbolizer::Location& x, const Symbolizer::Location& y) {
      return x.address < y.address;
    };
    if (std::lexicographical_compare(fa.begin(), fa.end(), fb.begin(), fb.end(), by_address))
      return true;
    if (std::lexicographical_compare(fb.begin(), fb.end(), fa.begin(), fa.end(), by_address))
      return false;
    if (a.first->key->function != b.first->key->function) {
      return a.first->key->function < b.first->key->function;
    }
    return ia < ib;
  });
  if (options.top && order.size() > *options.top) order.resize(*options.top);

  Demangler demangler;
  for (size_t i : order) {
    const Group& group = groups[i];
    LeakGroup g;
    g.mangled = group.first->key->function;
    g.function = demangler.full(g.mangled);
    g.bytes = group.bytes;
    g.blocks = group.blocks;
    for (const Symbolizer::Location& loc : group.first->key->frames) {
      const ResolvedAddress& r = symbolizer.resolve(loc, true);
      for (const SourceFrame& sf : r.frames) {
        LeakFrame f;
        f.address = loc.address;
        f.function = sf.function;
        f.file = sf.file;
        f.line = sf.line;
        if (r.module != nullptr) f.module = *r.module;
        f.inlined = sf.inlined;
        g.frames.push_back(std::move(f));
      }
    }
    report.groups.push_back(std::move(g));
  }
  return report;
}

std::string format_leaks_text(const LeakReport& report) {
  std::string text;
  auto out = std::back_inserter(text);
  fmt::format_to(out, "{} in {} leaked ({}, {}", plural(report.leaked_bytes, "byte", "bytes"),
                 plural(report.leaked_blocks, "block", "blocks"),
                 plural(report.groups_total, "group", "groups"),
                 plural(report.processes, "process", "processes"));
  if (report.groups.size() < report.groups_total) {
    fmt::format_to(out, "; the first {} shown", report.groups.size());
  }
  text += ")\n";
  for (const LeakGroup& g : report.groups) {
    fmt::format_to(out, "\n{} in {} allocated by {}\n", plural(g.bytes, "byte", "bytes"),
                   plural(g.blocks, "block", "blocks"), g.function.empty() ? "??" : g.function);
    if (g.frames.empty()) text += "  (no backtrace)\n";
    for (size_t i = 0; i < g.frames.size(); ++i) {
      const LeakFrame& f = g.frames[i];
      fmt::format_to(out, "  #{} {:#x} {}", i, f.address, f.function ? *f.function : "??");
      if (f.file) {
        text += " (" + *f.file;
        if (f.line) fmt::format_to(out, ":{}", *f.line);
        text += ')';
      }
      if (f.module) text += " [" + *f.module + "]";
      if (f.inlined) text += " (inlined)";
      text += '\n';
    }
  }
  return text;
}

std::string format_leaks_json(const LeakReport& report) {
  std::string text;
  JsonWriter w(text, 2);
  auto string_or_null = [&](const std::optional<std::string>& s) {
    if (s) {
      w.string(*s);
    } else {
      w.null();
    }
  };
  w.begin_object();
  w.key("leaked_bytes").unsigned_integer(report.leaked_bytes);
  w.key("leaked_blocks").unsigned_integer(report.leaked_blocks);
  w.key("processes").unsigned_integer(report.processes);
  w.key("groups_total").unsigned_integer(report.groups_total);
  w.key("groups").begin_array();
  for (const LeakGroup& g : report.groups) {
    w.begin_object();
    w.key("bytes").unsigned_integer(g.bytes);
    w.key("blocks").unsigned_integer(g.blocks);
    w.key("function").string(g.function);
    w.key("mangled").string(g.mangled);
    w.key("frames").begin_array();
    for (const LeakFrame& f : g.frames) {
      w.begin_object();
      w.key("address").string(hex(f.address));
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
  auto report = compute_leaks(options.traces, leak_options, diag);
  if (!report) return report.error();
  out.write(options.json ? format_leaks_json(*report) : format_leaks_text(*report));
  return {};
}

}  // namespace ft::post
