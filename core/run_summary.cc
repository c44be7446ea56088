#include "core/run_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/event_reporter.h"

namespace ft {

std::string human_size(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, kUnits[u]);
}

void RunSummary::process(pid_t pid, const std::string& exe) {
  std::string base = exe.substr(exe.rfind('/') + 1);
  entries_[pid].exe = base.empty() ? exe : base;
}

void RunSummary::trace_closed(pid_t pid, const TraceOutcome& t) {
  Entry& e = entries_[pid];
  (t.kept ? e.files : e.removed).push_back(t.path);
  if (t.kept) {
    e.records += t.written;
    e.bytes += t.bytes;
  }
  e.dropped += t.records - std::min(t.written, t.records);
  if (t.error) {
    incomplete_ = true;
    std::string why = std::strerror(t.error);
    if (std::find(e.errors.begin(), e.errors.end(), why) == e.errors.end()) e.errors.push_back(why);
  }
}

namespace {

// English plurals of the words used here: "processes", "events", "files".
std::string plural(uint64_t n, const char* word) {
  std::string_view w = word;
  const char* suffix = n == 1 ? "" : (w.ends_with("s") ? "es" : "s");
  return fmt::format("{} {}{}", n, word, suffix);
}

std::string joined(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "" : ", ") + w;
  return s;
}

// The report that answers the first question about a plugin's traces.
const char* report_for(const std::string& plugin) {
  std::string name = plugin.substr(0, plugin.find(':'));
  if (name == "memtrace") return "leaks";
  if (name == "calltrace") return "calls";
  if (name == "fileops") return "fds";
  return "dump";
}

// A path as a shell reads it back: quoted when it holds anything but the plain characters.
std::string shell_word(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./+,:@%") ==
                        std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::vector<std::string> RunSummary::lines(const TracerStats& stats, const std::string& output_dir,
                                           const std::string& first_plugin,
                                           const std::vector<std::string>& untraced) const {
  std::vector<std::string> out;
  uint64_t files = 0, bytes = 0, records = 0, dropped = 0;
  std::vector<std::string> errors;
  size_t listed = 0;
  for (const auto& [pid, e] : entries_) {
    files += e.files.size();
    bytes += e.bytes;
    records += e.records;
    dropped += e.dropped;
    for (const std::string& why : e.errors)
      if (std::find(errors.begin(), errors.end(), why) == errors.end()) errors.push_back(why);
    if (listed++ >= kMaxListed) continue;
    std::string line = fmt::format("{} [{}]: {}", e.exe.empty() ? "?" : e.exe, pid, plural(e.events, "event"));
    for (const std::string& f : e.files) line += fmt::format(", {}", f);
    std::string why = joined(e.errors);
    if (!e.files.empty()) {
      // The records the file holds, not those produced: a cut trace says so.
      line += fmt::format(" ({}, {}", plural(e.records, "record"), human_size(e.bytes));
      if (!e.errors.empty())
        line += e.dropped ? fmt::format("; cut short: {}, {} not written", why, plural(e.dropped, "record"))
                          : fmt::format("; its end could not be written: {}", why);
      line += ")";
    }
    for (const std::string& f : e.removed)
      line += fmt::format(", no trace file ({}: {}; nothing could be written, removed)", f, why);
    out.push_back(std::move(line));
  }
  if (listed > kMaxListed) out.push_back(fmt::format("... and {} more", plural(listed - kMaxListed, "process")));
  std::string total = fmt::format("{} traced, {}", plural(entries_.size(), "process"), plural(stats.events(), "event"));
  if (!output_dir.empty()) {
    if (files == 0 && !errors.empty())
      total += fmt::format("; no trace file in {}", output_dir);
    else
      total += fmt::format("; {} trace file{} ({}, {}) in {}", files, files == 1 ? "" : "s",
                           plural(records, "record"), human_size(bytes), output_dir);
    if (!errors.empty())
      total += fmt::format("; incomplete: {} not written ({})", plural(dropped, "record"), joined(errors));
  }
  out.push_back(std::move(total));
  if (!untraced.empty() || lost_ > 0) {
    std::string missed = "not traced:";
    if (!untraced.empty()) {
      missed += fmt::format(" {} (", plural(untraced.size(), "function"));
      for (size_t i = 0; i < untraced.size() && i < kMaxNamed; ++i) missed += (i ? ", " : "") + untraced[i];
      if (untraced.size() > kMaxNamed) missed += ", ...";
      missed += "; their calls are missing, see the lines above)";
    }
    if (!untraced.empty() && lost_ > 0) missed += ";";
    if (lost_ > 0) missed += fmt::format(" {} lost (see the trace's lost records)", plural(lost_, "event"));
    out.push_back(std::move(missed));
  }
  if (!output_dir.empty() && files > 0)
    out.push_back(fmt::format("to read the traces: functracer-postproc {} {}", report_for(first_plugin),
                              shell_word(output_dir)));
  return out;
}

}  // namespace ft
