#include "call_summary.h"

#include <algorithm>
#include <cinttypes>

namespace calltrace {

void CallSummary::add_call(const std::string& name) { ++entries_[name].calls; }

void CallSummary::add_time(const std::string& name, uint64_t ns, bool error) {
  Entry& e = entries_[name];
  e.ns += ns;
  if (error) ++e.errors;
}

std::string CallSummary::table() const {
  std::vector<std::pair<std::string, Entry>> rows(entries_.begin(), entries_.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    if (a.second.ns != b.second.ns) return a.second.ns > b.second.ns;
    if (a.second.calls != b.second.calls) return a.second.calls > b.second.calls;
    return a.first < b.first;
  });
  Entry total;
  for (const auto& [name, e] : rows) {
    total.calls += e.calls;
    total.ns += e.ns;
    total.errors += e.errors;
  }
  std::string out;
  char line[512];
  const char* rule = "------ ----------- ----------- --------- --------- --------------------\n";
  out += "% time     seconds  usecs/call     calls    errors function\n";
  out += rule;
  auto row = [&](const std::string& name, const Entry& e, bool per_call) {
    double share = total.ns ? 100.0 * static_cast<double>(e.ns) / static_cast<double>(total.ns) : 0.0;
    char usecs[32] = "";
    if (per_call)
      std::snprintf(usecs, sizeof usecs, "%" PRIu64, e.calls ? e.ns / 1000 / e.calls : 0);
    char errors[32] = "";
    if (e.errors) std::snprintf(errors, sizeof errors, "%" PRIu64, e.errors);
    std::snprintf(line, sizeof line, "%6.2f %11.6f %11s %9" PRIu64 " %9s %s\n", share,
                  static_cast<double>(e.ns) / 1e9, usecs, e.calls, errors, name.c_str());
    out += line;
  };
  for (const auto& [name, e] : rows) row(name, e, true);
  out += rule;
  row("total", total, false);
  return out;
}

}  // namespace calltrace
