#include "postproc/report_callgrind.h"

#include <iterator>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "common/demangle.h"
#include "postproc/call_graph.h"

namespace ft::post {

namespace {

constexpr std::string_view kUnknown = "???";
constexpr std::string_view kRootName = "(untraced caller)";

// A name on one line of the file: line breaks would end the line.
std::string one_line(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

struct Place {
  std::string object;  // module path
  std::string file;
  int64_t line = 0;
  std::string name;  // demangled
};

// "(id) name" the first time a name is written in a context, "(id)" after.
class Compressor {
 public:
  std::string operator()(const std::string& name) {
    auto [it, inserted] = ids_.try_emplace(name, ids_.size() + 1);
    if (inserted) return fmt::format("({}) {}", it->second, name);
    return fmt::format("({})", it->second);
  }

 private:
  std::unordered_map<std::string, size_t> ids_;
};

}  // namespace

Status report_callgrind(const ReportOptions& options, Output& out, Diagnostics& diag) {
  Symbolizer symbolizer(diag, options.resolve);
  CallGraph graph(symbolizer, options.tid);
  if (Status st = build_call_graph(options.traces, graph, diag); !st) return st;

  Demangler demangler;
  std::vector<Place> places;
  places.reserve(graph.functions().size());
  for (const CallGraph::Function& f : graph.functions()) {
    Place p;
    p.name = one_line(demangler.full(f.mangled));
    const ResolvedAddress& r = symbolizer.resolve(f.location, false);
    p.object = r.module ? one_line(*r.module) : std::string(kUnknown);
    const SourceFrame& outer = r.frames.back();
    p.file = outer.file ? one_line(*outer.file) : std::string(kUnknown);
    p.line = outer.line.value_or(0);
    places.push_back(std::move(p));
  }
  Place root{std::string(kUnknown), std::string(kUnknown), 0, std::string(kRootName)};
  auto place = [&](uint32_t id) -> const Place& {
    return id == CallGraph::kRoot ? root : places[id];
  };

  std::string text;
  auto flush = [&] { out.write_when_large(text); };
  auto line = [&](std::string_view s) {
    text += s;
    text += '\n';
  };

  const auto& processes = graph.processes();
  line("# callgrind format");
  line("version: 1");
  line("creator: functracer-postproc");
  if (processes.size() == 1) {
    line(fmt::format("pid: {}", processes[0].pid));
    line("cmd: " + one_line(processes[0].cmdline));
  } else {
    for (const CallGraph::Process& p : processes) {
      line(fmt::format("desc: Process: {} {}", p.pid, one_line(p.cmdline)));
    }
    if (!processes.empty()) line("cmd: " + one_line(processes[0].cmdline));
  }
  if (options.tid) line(fmt::format("thread: {}", *options.tid));
  line("desc: Trigger: end of the traces");
  line("positions: line");
  line("event: ns : Time (ns)");
  line("events: ns");

  // Arcs are sorted by caller, so each function's calls follow its self cost.
  std::vector<CallGraph::Arc> arcs = graph.arcs();
  Compressor ob, fl, fn;
  size_t next_arc = 0;
  auto write_function = [&](uint32_t id, uint64_t self_ns) {
    const Place& p = place(id);
    text += '\n';
    line("ob=" + ob(p.object));
    line("fl=" + fl(p.file));
    line("fn=" + fn(p.name));
    line(fmt::format("{} {}", p.line, self_ns));
    std::string file = p.file;  // of the position lines that follow
    for (; next_arc < arcs.size() && arcs[next_arc].caller == id; ++next_arc) {
      const CallGraph::Arc& a = arcs[next_arc];
      const Place& c = place(a.callee);
      // The line of the call: the caller's own source frame at the call site.
      int64_t at = p.line;
      std::string site_file;
      if (a.site) {
        const SourceFrame& s = symbolizer.resolve(*a.site, true).frames.back();
        if (s.line && s.file) {
          at = *s.line;
          site_file = one_line(*s.file);
        }
      }
      if (site_file.empty()) site_file = p.file;
      if (site_file != file) {
        line("fi=" + fl(site_file));
        file = std::move(site_file);
      }
      line("cob=" + ob(c.object));
      line("cfl=" + fl(c.file));
      line("cfn=" + fn(c.name));
      line(fmt::format("calls={} {}", a.calls, c.line));
      line(fmt::format("{} {}", at, a.inclusive_ns));
    }
    flush();
  };
  for (uint32_t id = 0; id < graph.functions().size(); ++id) {
    write_function(id, graph.functions()[id].self_ns);
  }
  if (next_arc < arcs.size()) write_function(CallGraph::kRoot, 0);

  uint64_t total = graph.total_self_ns();
  text += '\n';
  line(fmt::format("summary: {}", total));
  line(fmt::format("totals: {}", total));
  out.write(text);
  return {};
}

}  // namespace ft::post
