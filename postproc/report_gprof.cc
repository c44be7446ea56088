#include "postproc/report_gprof.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "functracer/schema.h"
#include "postproc/call_graph.h"

namespace ft::post {

namespace {

constexpr uint64_t kMaxBins = uint64_t{1} << 22;
constexpr uint64_t kMaxPerBin = UINT16_MAX;
constexpr uint64_t kMaxRate = 1'000'000'000;  // 1 GHz: a sample is 1 ns
constexpr uint64_t kNsPerSecond = 1'000'000'000;

// The executable of each process: the module record of the header's exe (or of the
// exe an exec record names), else the first module record of the process.
class ExeGraph : public CallGraph {
 public:
  struct Exe {
    int64_t pid = 0;
    std::string trace;
    std::string path;      // as in the module record
    std::string build_id;  // "" when the trace has none
    bool found = false;
  };

  using CallGraph::CallGraph;

  void begin_process(const TraceReader& reader) override {
    CallGraph::begin_process(reader);
    current_ = Exe{};
    current_.pid = reader.pid();
    current_.trace = reader.path();
    wanted_.clear();
    if (const TraceRecord* h = reader.header()) {
      if (const std::string* exe = h->get_str(schema::key::kExe)) wanted_ = *exe;
    }
    exact_ = false;
  }

  void on_record(const TraceRecord& r) override {
    CallGraph::on_record(r);
    if (r.type == schema::type::kExec) {
      if (const std::string* exe = r.get_str(schema::key::kExe)) wanted_ = *exe;
      current_.found = false;
      exact_ = false;
    } else if (r.type == schema::type::kModule && !exact_) {
      const std::string* path = r.get_str(schema::key::kPath);
      if (path == nullptr) return;
      bool exact = *path == wanted_;
      if (!exact && current_.found) return;
      const std::string* id = r.get_str(schema::key::kBuildId);
      current_.path = *path;
      current_.build_id = id ? *id : std::string();
      current_.found = true;
      exact_ = exact;
    }
  }

  void end_process() override {
    CallGraph::end_process();
    exes_.push_back(current_);
  }

  const std::vector<Exe>& exes() const { return exes_; }

 private:
  Exe current_;
  std::string wanted_;
  bool exact_ = false;
  std::vector<Exe> exes_;
};

std::string describe(const ExeGraph::Exe& e) {
  return fmt::format("{} (pid {}, {}, build-id {})", e.path, e.pid, e.trace,
                     e.build_id.empty() ? "none" : e.build_id);
}

void put(std::string& out, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

struct Placed {
  uint64_t start = 0, size = 0;  // link-time
  uint64_t self_ns = 0;
};

}  // namespace

Status report_gprof(const ReportOptions& options, Output& out, Diagnostics& diag) {
  Symbolizer symbolizer(diag, options.resolve);
  ExeGraph graph(symbolizer, options.tid);
  if (Status st = build_call_graph(options.traces, graph, diag); !st) return st;

  // One executable.
  const ExeGraph::Exe* exe = nullptr;
  for (const ExeGraph::Exe& e : graph.exes()) {
    if (!e.found) continue;
    if (exe == nullptr) {
      exe = &e;
    } else if (e.build_id != exe->build_id || (e.build_id.empty() && e.path != exe->path)) {
      return Error::msg("gprof profiles one executable, but the traces are of two: " +
                        describe(*exe) + " and " + describe(e));
    }
  }
  if (exe == nullptr) {
    std::string traces;
    for (const std::string& path : options.traces) traces += (traces.empty() ? "" : ", ") + path;
    return Error::msg("no module record names the executable in " + traces);
  }
  // The same executable may have been run from several places.
  std::set<std::string> exe_paths;
  for (const ExeGraph::Exe& e : graph.exes()) {
    if (e.found) exe_paths.insert(e.path);
  }

  // The executable's functions, at link-time addresses.
  const auto& functions = graph.functions();
  std::vector<std::optional<Placed>> placed(functions.size());
  uint64_t in_libraries = 0, unplaceable = 0;
  for (size_t i = 0; i < functions.size(); ++i) {
    const CallGraph::Function& f = functions[i];
    const ResolvedAddress& r = symbolizer.resolve(f.location, false);
    if (r.module == nullptr || exe_paths.count(*r.module) == 0) {
      ++in_libraries;
      continue;
    }
    if (r.symbol_size == 0) {
      ++unplaceable;
      continue;
    }
    placed[i] = Placed{r.symbol_address, r.symbol_size, f.self_ns};
  }
  if (in_libraries > 0) {
    diag.warning(fmt::format(
        "{} traced function{} outside the executable {} left out: gprof names only the "
        "executable's functions",
        in_libraries, in_libraries == 1 ? "" : "s", exe->path));
  }
  if (unplaceable > 0) {
    diag.warning(fmt::format(
        "{} traced function{} of {} left out: no symbol with a size for {} (cannot read "
        "the executable's symbol table?)",
        unplaceable, unplaceable == 1 ? "" : "s", exe->path, unplaceable == 1 ? "it" : "them"));
  }

  // The histogram's range and bin size.
  uint64_t low = UINT64_MAX, high = 0;
  for (const auto& p : placed) {
    if (!p) continue;
    low = std::min(low, p->start);
    high = std::max(high, p->start + p->size);
  }
  uint64_t bin = 2;
  std::vector<uint16_t> bins;
  uint64_t rate = kMaxRate;
  if (low < high) {
    while ((high - low) / bin > kMaxBins) bin *= 2;
    low -= low % bin;
    high += (bin - high % bin) % bin;
    // Each function's bins: those wholly inside it, else the one its entry is in.
    auto bins_of = [&](const Placed& p) -> std::pair<uint64_t, uint64_t> {
      uint64_t first = (p.start - low + bin - 1) / bin;
      uint64_t last = (p.start + p.size - low) / bin;  // exclusive
      if (first >= last) {
        first = (p.start - low) / bin;
        last = first + 1;
      }
      return {first, last};
    };
    auto samples = [&](const Placed& p, uint64_t r) {
      return static_cast<uint64_t>(
          (static_cast<unsigned __int128>(p.self_ns) * r + kNsPerSecond / 2) / kNsPerSecond);
    };
    for (bool fits = false; !fits && rate > 1;) {
      fits = true;
      for (const auto& p : placed) {
        if (!p) continue;
        auto [first, last] = bins_of(*p);
        if (samples(*p, rate) > (last - first) * kMaxPerBin) fits = false;
      }
      if (!fits) rate /= 10;
    }
    bins.assign((high - low) / bin, 0);
    for (const auto& p : placed) {
      if (!p) continue;
      auto [first, last] = bins_of(*p);
      uint64_t n = last - first;
      uint64_t s = samples(*p, rate);
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t add = s / n + (i < s % n ? 1 : 0);
        bins[first + i] = static_cast<uint16_t>(std::min<uint64_t>(bins[first + i] + add, kMaxPerBin));
      }
    }
  } else {
    low = high = 0;
  }

  std::string data;
  data.append("gmon", 4);
  put(data, 1, 4);
  data.append(12, '\0');

  data += '\0';  // GMON_TAG_TIME_HIST
  put(data, low, sizeof(void*));
  put(data, high, sizeof(void*));
  put(data, bins.size(), 4);
  put(data, rate, 4);
  char dimension[15] = {};
  std::memcpy(dimension, "seconds", 7);
  data.append(dimension, sizeof dimension);
  data += 's';
  for (uint16_t b : bins) put(data, b, 2);

  uint64_t outermost = 0, library_arcs = 0;
  for (const CallGraph::Arc& a : graph.arcs()) {
    if (a.caller == CallGraph::kRoot) {
      if (placed[a.callee]) outermost += a.calls;
      continue;
    }
    if (!placed[a.caller] || !placed[a.callee]) {
      library_arcs += a.calls;
      continue;
    }
    // Inside the call instruction, as its line is wanted (gprof -l), not the next one's.
    uint64_t from = placed[a.caller]->start;
    if (a.site) {
      Symbolizer::CodeKey site = symbolizer.key(*a.site);
      if (site.file != Symbolizer::kNone && site.offset > from) from = site.offset - 1;
    }
    for (uint64_t left = a.calls; left > 0;) {
      uint64_t count = std::min<uint64_t>(left, UINT32_MAX);
      data += '\1';  // GMON_TAG_CG_ARC
      put(data, from, sizeof(void*));
      put(data, placed[a.callee]->start, sizeof(void*));
      put(data, count, 4);
      left -= count;
    }
  }
  if (outermost > 0) {
    diag.warning(fmt::format(
        "{} outermost call{} of the executable's traced functions left out of the call "
        "graph: {} caller was not traced (gprof shows <spontaneous>)",
        outermost, outermost == 1 ? "" : "s", outermost == 1 ? "its" : "their"));
  }
  if (library_arcs > 0) {
    diag.warning(fmt::format("{} call{} from or to functions outside the executable left out",
                             library_arcs, library_arcs == 1 ? "" : "s"));
  }
  out.write(data);
  return {};
}

}  // namespace ft::post
