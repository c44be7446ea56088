#include "core/untraced.h"

#include <set>

#include "common/clock.h"
#include "common/trace_record.h"
#include "core/log.h"
#include "functracer/schema.h"

namespace ft {

namespace {

std::vector<std::string>& untraced_list() {
  static std::vector<std::string> list;
  return list;
}

}  // namespace

const std::vector<std::string>& untraced_so_far() { return untraced_list(); }

void record_untraced(Process& p, const std::string& function, uint64_t addr, const std::string& reason) {
  namespace schema = ft::schema;
  static std::set<std::string> seen;
  if (seen.insert(function).second) untraced_list().push_back(function);
  if (!p.trace) return;
  TraceRecord r;
  r.tid = p.pid();
  r.ts_ns = monotonic_ns();
  r.type = schema::type::kUntraced;
  r.add(schema::key::kFunction, function);
  r.add(schema::key::kAddress, Hex{addr});
  r.add(schema::key::kReason, reason);
  p.trace->write(r);
}

bool first_telling(const std::string& function) {
  static std::set<std::string> told;
  return told.insert(function).second;
}

void report_untraced(Process& p, const std::string& function, uint64_t addr, const std::string& reason) {
  record_untraced(p, function, addr, reason);
  if (!first_telling(function)) return;
  if (reason.starts_with("breakpoint taken away"))
    log::gap("cannot trace {} for part of the run: {}; reports of this trace say their totals are incomplete",
             function, reason.substr(reason.find(':') + 2));
  else if (reason.starts_with("int3"))
    log::gap("cannot trace {}: another tool has a breakpoint on its first instruction (most likely a uprobe of "
             "bpftrace or perf); its calls are missing, and reports of this trace say their totals are incomplete",
             function);
  else
    log::gap("cannot trace {} at {:#x}: {}; its calls are missing from the trace", function, addr, reason);
}

void report_untraced_module(Process& p, const std::string& path, uint64_t base, const std::string& reason) {
  record_untraced(p, path, base, reason);
  if (first_telling(path))
    log::gap("the functions of {} are not traced in process {} ({}); their calls are missing from the trace", path,
             p.pid(), reason);
}

}  // namespace ft
