// Hostile input, deterministically: every prefix of the golden traces (a trace file cut
// at every byte, as a killed tracer or a full disk leaves it) through every report of
// functracer-postproc, in-process, so ASan/UBSan in CI see every path.
//
// For each prefix (doc/trace-format.md §1, §4; design.md §5):
//  - a prefix shorter than the magic line fails with one error, on one line, naming the
//    file;
//  - every other prefix succeeds; it gets a warning naming the file that says the trace
//    was cut short, unless it ends exactly after the end record's line or later. Only
//    gprof and flamegraph may refuse a prefix that lacks what they need (a module
//    record, a header naming the plugins), with one line naming the file;
//  - no warning is repeated;
//  - JSON output is one JSON document (dump: one per line);
//  - oracles that are not our code: for the memtrace traces, the leaked bytes and blocks
//    of `leaks --json` equal a replay done here of the complete alloc/free lines of the
//    prefix; for the calltrace trace, the call counts of `calls --json` equal the number
//    of complete call lines per function.
//
// Run time (under ASan it matters): the oracle reports run at every byte (memtrace-v2:
// at the cuts below), without resolving frames (the totals do not depend on them). All reports (text and JSON, with
// the golden sysroot) run at the cuts where the reader changes state: at every line
// boundary and one byte before it (the line complete but for its LF), and at every
// byte of the magic line and of the end record. A cut anywhere else inside a line is,
// for the reader, the same case: an incomplete last line, ignored. All reports at
// every byte take minutes under ASan.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "binutils_oracle.h"
#include "json_reader.h"
#include "postproc/report.h"
#include "postproc/trace_reader.h"
#include "test_support.h"

namespace ft::post {
namespace {

using namespace ft::test;  // binutils_oracle.h, test_support.h

const std::string kMagic = "functracer-trace 1";

std::string golden_dir() {
  if (const char* root = std::getenv("FT_SOURCE_ROOT")) {
    return std::string(root) + "/tests/unit/data/golden";
  }
  std::string file = __FILE__;
  return file.substr(0, file.rfind("/tests/unit/")) + "/tests/unit/data/golden";
}

struct ReportRun {
  bool ok = false;
  std::string error;
  std::string out;
  std::vector<std::string> warnings;
};

// `resolve`: look the modules up in the golden sysroot (else under one that does not
// exist: frames stay unresolved, which the totals of the oracles do not depend on).
ReportRun run_report(const ReportSpec& spec, bool json, const std::string& trace,
                     bool resolve = true) {
  ReportOptions options;
  options.json = json;
  if (spec.accepts & kAcceptsResolve) {
    options.resolve.sysroot = resolve ? golden_dir() + "/sysroot" : "/nonexistent-sysroot";
  }
  size_t inputs = spec.inputs == 0 ? 1 : spec.inputs;
  for (size_t i = 0; i < inputs; ++i) {
    options.traces.push_back(trace);
    options.inputs.push_back({trace});
  }
  Output out;
  CollectingDiagnostics diag;
  Status st = spec.run(options, out, diag);
  ReportRun r;
  r.ok = static_cast<bool>(st);
  if (!st) r.error = st.error().message;
  r.out = out.text();
  r.warnings = std::move(diag.warnings);
  return r;
}

const ReportSpec& report(std::string_view name) {
  const ReportSpec* spec = find_report(name);
  EXPECT_NE(spec, nullptr) << name;
  return *spec;
}

// The complete lines of a prefix (those ending in LF), the magic line excluded.
std::vector<std::string> complete_records(const std::string& prefix) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t nl; (nl = prefix.find('\n', start)) != std::string::npos; start = nl + 1) {
    if (start > 0) lines.push_back(prefix.substr(start, nl - start));
  }
  return lines;
}

// "key=VALUE" of a record line, VALUE up to the next space (numbers only).
std::string field(const std::string& line, const std::string& key) {
  size_t p = line.find(" " + key + "=");
  if (p == std::string::npos) return {};
  p += key.size() + 2;
  return line.substr(p, line.find(' ', p) - p);
}

std::string type_of(const std::string& line) {
  std::vector<std::string> w = words(line);
  return w.size() >= 4 ? w[3] : std::string();
}

// The oracle of the leaks report: replays the alloc and free records (doc/trace-format.md
// §3.5: a block is live from its alloc to its free; a free of an address that is not
// live is ignored).
struct Heap {
  int64_t bytes = 0;
  int64_t blocks = 0;
};

Heap replay_heap(const std::string& prefix) {
  std::map<std::string, int64_t> live;  // address -> size
  for (const std::string& line : complete_records(prefix)) {
    std::string type = type_of(line);
    if (type == "alloc") {
      live[field(line, "address")] = std::stoll(field(line, "size"));
    } else if (type == "free") {
      live.erase(field(line, "address"));
    }
  }
  Heap h;
  for (const auto& [address, size] : live) {
    h.bytes += size;
    ++h.blocks;
  }
  return h;
}

// The oracle of the calls report: complete call lines per (mangled) function.
std::map<std::string, int64_t> count_calls(const std::string& prefix) {
  std::map<std::string, int64_t> calls;
  for (const std::string& line : complete_records(prefix)) {
    if (type_of(line) != "call") continue;
    size_t p = line.find(" function=\"");
    EXPECT_NE(p, std::string::npos) << line;
    p += 11;
    ++calls[line.substr(p, line.find('"', p) - p)];
  }
  return calls;
}

std::optional<Json> parse_json(const std::string& text) { return JsonParser(text).parse(); }

// Where the trace stops being cut short: the end of the end record's line.
size_t end_of_end_record(const std::string& text) {
  size_t start = 0, end = std::string::npos;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string type = type_of(text.substr(start, nl - start));
    if (type == "exit" || type == "killed" || type == "detach") end = nl + 1;
  }
  return end;
}

// The cuts at which every report runs (see the header comment).
std::set<size_t> all_report_cuts(const std::string& text) {
  std::vector<size_t> starts = {0};  // where each line starts
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') starts.push_back(i + 1);
  }
  std::set<size_t> cuts;
  for (size_t s : starts) {
    for (size_t c : {s - 1, s}) {
      if (c <= text.size()) cuts.insert(c);
    }
  }
  auto whole_line = [&](size_t index) {
    if (index + 1 >= starts.size()) return;
    for (size_t c = starts[index]; c <= starts[index + 1]; ++c) cuts.insert(c);
  };
  whole_line(0);                  // the magic line
  whole_line(starts.size() - 2);  // the end record (the file ends with a LF)
  return cuts;
}

bool is_cut_short_warning(const std::string& w, const std::string& path) {
  return w.find(path) != std::string::npos && w.find("cut short") != std::string::npos;
}

// The checks every run of every report gets; `what` names the run in failures.
void check_run(const ReportRun& r, const std::string& path, size_t cut, size_t complete_from,
               bool json, const std::string& what) {
  if (cut < kMagic.size()) {
    EXPECT_FALSE(r.ok) << what << ": a file shorter than the magic line is not a trace";
    EXPECT_NE(r.error.find(path), std::string::npos) << what << ": error does not name the file: "
                                                     << r.error;
    EXPECT_EQ(r.error.find('\n'), std::string::npos) << what << ": error is not one line: "
                                                     << r.error;
    EXPECT_TRUE(r.out.empty()) << what << ": output from a file that is not a trace";
    return;
  }
  if (!r.ok) {
    // Two reports need a record the prefix may not have reached yet: gprof the module
    // record of the executable, flamegraph without --metric the header naming the plugins
    // (and it has nothing to draw from a fileops trace, cut or not). They may refuse, with
    // one line naming the file.
    EXPECT_TRUE(what == "gprof" || what == "flamegraph") << what << ": " << r.error;
    EXPECT_NE(r.error.find(path), std::string::npos) << what << ": error does not name the file: "
                                                     << r.error;
    EXPECT_EQ(r.error.find('\n'), std::string::npos) << what << ": error is not one line: "
                                                     << r.error;
    return;
  }
  bool warned = false;
  for (const std::string& w : r.warnings) warned = warned || is_cut_short_warning(w, path);
  // Each warning once, however often the report reads the file (diff reads it twice
  // here: both of its inputs are the prefix).
  if (what.rfind("diff", 0) != 0) {
    std::set<std::string> seen;
    for (const std::string& w : r.warnings) {
      EXPECT_TRUE(seen.insert(w).second) << what << ": warning repeated: " << w;
    }
  }
  if (cut < complete_from) {
    EXPECT_TRUE(warned) << what << ": no warning that the trace was cut short";
  } else {
    EXPECT_FALSE(warned) << what << ": complete trace warned as cut short";
  }
  if (!json) return;
  if (what.rfind("dump", 0) == 0) {
    for (const std::string& line : split_lines(r.out)) {
      EXPECT_TRUE(parse_json(line).has_value()) << what << ": not JSON: " << line;
    }
  } else {
    EXPECT_TRUE(parse_json(r.out).has_value()) << what << ": not JSON:\n" << r.out;
  }
}

class HostileInput : public ::testing::TestWithParam<std::string> {};

TEST_P(HostileInput, EveryPrefixThroughEveryReport) {
  const std::string name = GetParam();
  const std::string text = read_file(golden_dir() + "/" + name);
  ASSERT_FALSE(text.empty()) << name;
  const size_t complete_from = end_of_end_record(text);
  ASSERT_NE(complete_from, std::string::npos) << name << " has no end record";
  const bool memtrace = name.rfind("memtrace", 0) == 0;
  const bool calltrace = name.rfind("calltrace", 0) == 0;
  const std::set<size_t> cuts = all_report_cuts(text);

  TempDir tmp;
  const std::string path = tmp.file(name);
  size_t oracle_runs = 0, report_runs = 0, failed_cuts = 0;
  int failures_seen = 0;
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    // A bug shows at many cuts; a few are enough to see it.
    const int parts = ::testing::UnitTest::GetInstance()->current_test_info()->result()
                          ->total_part_count();
    if (parts > failures_seen) {
      failures_seen = parts;
      if (++failed_cuts >= 5) FAIL() << "stopped after failures at " << failed_cuts << " cuts";
    }
    const std::string prefix = text.substr(0, cut);
    tmp.write(name, prefix);
    const std::string at = name + " cut at byte " + std::to_string(cut);
    SCOPED_TRACE(at);

    // memtrace-v2 has the records of memtrace-v1 with other sizes: its oracle runs at
    // the cuts of the other reports only.
    if (memtrace && (name != "memtrace-v2.trace" || cuts.contains(cut))) {
      ReportRun r = run_report(report("leaks"), true, path, false);
      ++oracle_runs;
      check_run(r, path, cut, complete_from, true, "leaks --json");
      if (r.ok) {
        auto j = parse_json(r.out);
        ASSERT_TRUE(j.has_value()) << r.out;
        Heap want = replay_heap(prefix);
        const Json* bytes = j->get("leaked_bytes");
        const Json* blocks = j->get("leaked_blocks");
        ASSERT_TRUE(bytes != nullptr && blocks != nullptr) << r.out;
        EXPECT_EQ(bytes->number, want.bytes) << "leaked bytes";
        EXPECT_EQ(blocks->number, want.blocks) << "leaked blocks";
      }
    }
    if (calltrace) {
      ReportRun r = run_report(report("calls"), true, path);
      ++oracle_runs;
      check_run(r, path, cut, complete_from, true, "calls --json");
      if (r.ok) {
        auto j = parse_json(r.out);
        ASSERT_TRUE(j.has_value()) << r.out;
        std::map<std::string, int64_t> got;
        const Json* functions = j->get("functions");
        ASSERT_NE(functions, nullptr) << r.out;
        for (const Json& f : functions->items) {
          const Json* mangled = f.get("mangled");
          const Json* calls = f.get("calls");
          ASSERT_TRUE(mangled != nullptr && calls != nullptr) << r.out;
          got[mangled->string] += calls->number;
        }
        EXPECT_EQ(got, count_calls(prefix));
      }
    }

    if (!cuts.contains(cut)) continue;
    for (const ReportSpec& spec : all_reports()) {
      for (bool json : {false, true}) {
        if (json && (spec.accepts & kAcceptsJson) == 0) continue;
        std::string what = std::string(spec.name) + (json ? " --json" : "");
        ReportRun r = run_report(spec, json, path);
        ++report_runs;
        check_run(r, path, cut, complete_from, json, what);
      }
    }
  }
  std::printf("%s: %zu bytes, %zu oracle runs, %zu report runs at %zu cuts\n", name.c_str(),
              text.size(), oracle_runs, report_runs, cuts.size());
}

INSTANTIATE_TEST_SUITE_P(Golden, HostileInput,
                         ::testing::Values("memtrace-v1.trace", "memtrace-v2.trace",
                                           "calltrace.trace", "fileops.trace"),
                         [](const auto& info) {
                           std::string n = info.param.substr(0, info.param.find('.'));
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace ft::post
