// Golden tests of functracer-postproc on traces of a real program taken on another
// machine. tests/unit/data/golden (README.md there) holds the program's sysroot (the
// executable with its symbols, its debug info under /usr/lib/debug/.build-id), traces
// functracer took of it, and the reports expected from them in expected/.
//
// Every report is run on the checked-in traces with --sysroot and compared byte for
// byte with its expected file. The expected files are not trusted because they were
// once produced: they are checked here against oracles that are not our code:
//  - addr2line on the debug file for every frame in the program (function, file, line,
//    inlined frames);
//  - the program's own account of its heap and descriptors (src/golden.cc: its header
//    comment and the GOLDEN markers on the lines that allocate and open).
// FT_GOLDEN_REGENERATE=1 rewrites expected/ from the current output instead of
// comparing; the oracle tests then say whether the new files may be committed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "binutils_oracle.h"
#include "json_reader.h"
#include "test_support.h"

namespace ft::post {
namespace {

using namespace ft::test;  // binutils_oracle.h, test_support.h

namespace fs = std::filesystem;

const std::string kExe = "/usr/local/bin/ft-golden";  // where the traces ran it

std::string golden_dir() {
  if (const char* root = std::getenv("FT_SOURCE_ROOT")) {
    return std::string(root) + "/tests/unit/data/golden";
  }
  std::string file = __FILE__;
  return file.substr(0, file.rfind("/tests/unit/")) + "/tests/unit/data/golden";
}

std::string at(const std::string& rel) { return golden_dir() + "/" + rel; }
std::string sysroot() { return at("sysroot"); }
std::string expected(const std::string& name) { return at("expected/" + name); }

// The reports under test: the expected file and the arguments after the report name.
struct GoldenCase {
  std::string file;
  std::vector<std::string> args;
};

std::vector<GoldenCase> cases() {
  const std::string v1 = at("memtrace-v1.trace"), v2 = at("memtrace-v2.trace");
  const std::string sys = "--sysroot=" + sysroot();
  return {
      {"leaks.txt", {"leaks", sys, v1}},
      {"leaks.json", {"leaks", "--json", sys, v1}},
      {"leaks-v2.json", {"leaks", "--json", sys, v2}},
      {"leaks-function.txt", {"leaks", "--function=shapes::*", sys, v1}},
      {"peak.txt", {"peak", sys, v1}},
      {"peak.json", {"peak", "--json", sys, v1}},
      {"temporary.json", {"temporary", "--json", sys, v1}},
      {"allocators.txt", {"allocators", "--sort=bytes", sys, v1}},
      {"histogram.json", {"histogram", "--json", v1}},
      {"diff.txt", {"diff", sys, v1, v2}},
      {"diff.json", {"diff", "--json", sys, v1, v2}},
      {"fds.txt", {"fds", sys, at("fileops.trace")}},
      {"fds.json", {"fds", "--json", sys, at("fileops.trace")}},
      {"calls.json", {"calls", "--json", at("calltrace.trace")}},
      {"tree.txt", {"tree", at("calltrace.trace")}},
  };
}

bool regenerating() {
  const char* v = std::getenv("FT_GOLDEN_REGENERATE");
  return v != nullptr && std::string(v) == "1";
}

class GoldenReports : public PostprocBinary {};

TEST_F(GoldenReports, MatchExpectedOutput) {
  for (const GoldenCase& c : cases()) {
    SCOPED_TRACE(c.file);
    RunResult r = run(c.args);
    ASSERT_EQ(r.status, 0) << r.err;
    // Reports that name their trace files name them relative to the golden directory.
    const std::string dir = golden_dir() + "/";
    for (size_t p = 0; (p = r.out.find(dir, p)) != std::string::npos;) r.out.erase(p, dir.size());
    // The sysroot has the program but not the system's libraries: their frames stay
    // unresolved, with one warning line per library and nothing else on stderr.
    for (const std::string& line : split_lines(r.err)) {
      EXPECT_EQ(line.rfind("functracer-postproc: warning: /usr/lib/", 0), 0u) << line;
    }
    if (regenerating()) {
      fs::create_directories(at("expected"));
      std::ofstream(expected(c.file), std::ios::binary) << r.out;
      continue;
    }
    std::string want = read_file(expected(c.file));
    ASSERT_FALSE(want.empty()) << expected(c.file) << " is missing";
    EXPECT_EQ(r.out, want) << "functracer-postproc " << c.args[0] << " differs from "
                           << expected(c.file);
  }
}

// ---------------------------------------------------------------------------
// The oracles

Json parse_expected(const std::string& name) {
  auto j = JsonParser(read_file(expected(name))).parse();
  EXPECT_TRUE(j.has_value()) << expected(name) << " is not JSON";
  return j.value_or(Json{});
}

int64_t number(const Json& j, const std::string& key) {
  const Json* v = j.get(key);
  EXPECT_TRUE(v != nullptr && v->type == Json::Type::kNumber) << "no number " << key;
  return v != nullptr ? v->number : -1;
}

std::optional<std::string> string_or_null(const Json& j, const std::string& key) {
  const Json* v = j.get(key);
  if (v == nullptr || v->type != Json::Type::kString) return std::nullopt;
  return v->string;
}

// 1-based line of src/golden.cc holding "GOLDEN: marker".
int64_t marker_line(const std::string& marker) {
  std::vector<std::string> lines = split_lines(read_file(at("src/golden.cc")));
  for (size_t i = 0; i < lines.size(); ++i) {
    if (contains(lines[i], "// GOLDEN: " + marker)) return static_cast<int64_t>(i + 1);
  }
  ADD_FAILURE() << "no marker " << marker;
  return 0;
}

// The executable's load address in a trace: its module record at file offset 0 (the
// program is PIE and its first PT_LOAD is at vaddr 0, see Addr2lineOracle below).
uint64_t exe_base(const std::string& trace) {
  for (const std::string& line : split_lines(read_file(trace))) {
    if (!contains(line, " module ") || !contains(line, "path=\"" + kExe + "\"") ||
        !contains(line, " offset=0x0 ")) {
      continue;
    }
    size_t b = line.find(" base=");
    if (b != std::string::npos) return parse_hex(words(line.substr(b + 6))[0]).value_or(0);
  }
  ADD_FAILURE() << "no module record for " << kExe << " in " << trace;
  return 0;
}

// The debug file of the program in the sysroot, named by its build-id.
std::string debug_file() {
  std::string id = readelf_build_id(sysroot() + kExe);
  EXPECT_GT(id.size(), 2u) << "no build-id in " << sysroot() + kExe;
  if (id.size() <= 2) return {};
  return sysroot() + "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
}

// The frames of a group of leaks/diff JSON that lie in the program, as chains: each
// address with the frames resolved at it (an inlined chain, innermost first).
struct Chain {
  uint64_t address = 0;
  std::vector<OracleFrame> frames;
};

std::vector<Chain> program_chains(const Json& frames) {
  std::vector<Chain> chains;
  for (const Json& f : frames.items) {
    if (string_or_null(f, "module") != kExe) continue;
    uint64_t address = parse_hex(string_or_null(f, "address").value_or("")).value_or(0);
    if (chains.empty() || chains.back().address != address) chains.push_back({address, {}});
    OracleFrame o;
    o.function = string_or_null(f, "function");
    o.file = string_or_null(f, "file");
    if (const Json* l = f.get("line"); l != nullptr && l->type == Json::Type::kNumber) {
      o.line = l->number;
    }
    chains.back().frames.push_back(o);
  }
  return chains;
}

TEST(GoldenOracle, FramesInTheProgramAreWhatAddr2lineSays) {
  if (regenerating()) GTEST_SKIP() << "regenerating";
  std::string debug = debug_file();
  ASSERT_TRUE(fs::exists(debug)) << debug;
  // The program is PIE with its first PT_LOAD at file offset 0, vaddr 0: a runtime
  // address minus the base of that mapping is the link-time address.
  std::string phdrs = run_command("readelf -lW " + shell_quote(sysroot() + kExe));
  bool first_load_at_zero = false;
  for (const std::string& line : split_lines(phdrs)) {
    std::vector<std::string> w = words(line);
    if (w.size() >= 3 && w[0] == "LOAD") {
      first_load_at_zero = parse_hex(w[1]) == 0u && parse_hex(w[2]) == 0u;
      break;
    }
  }
  ASSERT_TRUE(first_load_at_zero) << phdrs;

  struct Source {
    std::string expected_json;
    std::string trace;
  };
  size_t checked = 0;
  std::vector<std::pair<uint64_t, std::string>> inlined;  // link-time address, our name
  for (const Source& s : {Source{"leaks.json", "memtrace-v1.trace"},
                          Source{"leaks-v2.json", "memtrace-v2.trace"},
                          Source{"fds.json", "fileops.trace"}}) {
    SCOPED_TRACE(s.expected_json);
    uint64_t base = exe_base(at(s.trace));
    Json report = parse_expected(s.expected_json);
    const Json* groups = report.get("groups");
    ASSERT_NE(groups, nullptr);
    for (const Json& g : groups->items) {
      const Json* frames = g.get("frames");
      ASSERT_NE(frames, nullptr);
      for (const Chain& c : program_chains(*frames)) {
        // Every frame is a return address: the call is the instruction before it.
        uint64_t link = c.address - base - 1;
        auto oracle = addr2line(debug, {link});
        ASSERT_EQ(oracle.count(link), 1u) << "addr2line said nothing about " << hex(link);
        const std::vector<OracleFrame>& want = oracle[link];
        ASSERT_EQ(c.frames.size(), want.size()) << "inlined frames at " << hex(c.address);
        for (size_t i = 0; i < want.size(); ++i) {
          // addr2line names an inlined frame after the function it was inlined into
          // when that is a C++ function; the name of the outermost frame is reliable.
          // Inlined names are checked against llvm-symbolizer below.
          if (i + 1 == want.size()) {
            std::string got_fn = c.frames[i].function.value_or("??");
            std::string want_fn = want[i].function.value_or("??");
            EXPECT_EQ(got_fn.substr(0, got_fn.find('(')), want_fn.substr(0, want_fn.find('(')))
                << "at " << hex(c.address);
          } else {
            inlined.push_back({link, c.frames[i].function.value_or("??")});
          }
          EXPECT_EQ(c.frames[i].file, want[i].file) << "at " << hex(c.address);
          EXPECT_EQ(c.frames[i].line, want[i].line) << "at " << hex(c.address);
          ++checked;
        }
      }
    }
  }
  EXPECT_GE(checked, 12u) << "too few frames in the program to mean anything";
  EXPECT_FALSE(inlined.empty()) << "no inlined frame: the program is built to have one";

  // llvm-symbolizer prints an inlined function's own (unqualified) name.
  if (run_command("command -v llvm-symbolizer").empty()) return;
  for (const auto& [link, name] : inlined) {
    std::vector<std::string> lines = split_lines(
        run_command("llvm-symbolizer --inlining --obj=" + shell_quote(debug) + " " + hex(link)));
    ASSERT_FALSE(lines.empty()) << "llvm-symbolizer said nothing about " << hex(link);
    const std::string& own = lines[0];
    EXPECT_TRUE(name == own || (name.size() > own.size() + 2 &&
                                name.compare(name.size() - own.size() - 2, std::string::npos,
                                             "::" + own) == 0))
        << name << " is not " << own << " at " << hex(link);
  }
}

// The group of a leaks/diff report whose innermost frame in the program is at `line`.
const Json* group_at_line(const Json& report, int64_t line) {
  const Json* groups = report.get("groups");
  if (groups == nullptr) return nullptr;
  for (const Json& g : groups->items) {
    std::vector<Chain> chains = program_chains(*g.get("frames"));
    if (!chains.empty() && chains.front().frames.front().line == line) return &g;
  }
  return nullptr;
}

TEST(GoldenOracle, LeaksAreWhatTheProgramLeaks) {
  if (regenerating()) GTEST_SKIP() << "regenerating";
  struct Leak {
    std::string marker;
    int64_t bytes_v1, bytes_v2, blocks;
  };
  // src/golden.cc's header: 3 x new Node (48 bytes), malloc(7) through the inlined
  // copy_name, new double[16 * VERSION].
  const Leak leaks[] = {{"make_list", 144, 144, 3},
                        {"copy_name", 7, 7, 1},
                        {"make_array", 128, 256, 1}};
  Json v1 = parse_expected("leaks.json"), v2 = parse_expected("leaks-v2.json");
  for (const Leak& l : leaks) {
    SCOPED_TRACE(l.marker);
    for (auto [report, bytes] : {std::pair{&v1, l.bytes_v1}, std::pair{&v2, l.bytes_v2}}) {
      const Json* g = group_at_line(*report, marker_line(l.marker));
      ASSERT_NE(g, nullptr);
      EXPECT_EQ(number(*g, "bytes"), bytes);
      EXPECT_EQ(number(*g, "blocks"), l.blocks);
    }
  }
  // The FILE of the fopen in main: allocated in libc, called from the marked line.
  const Json* groups = v1.get("groups");
  ASSERT_NE(groups, nullptr);
  bool fopen_found = false;
  for (const Json& g : groups->items) {
    std::vector<Chain> chains = program_chains(*g.get("frames"));
    if (!chains.empty() && chains.front().frames.front().line == marker_line("main fopen")) {
      fopen_found = true;
      EXPECT_EQ(number(g, "blocks"), 1);
    }
  }
  EXPECT_TRUE(fopen_found) << "no leak group for the FILE of main's fopen";
  // The temporaries and the spike were freed: no group of theirs.
  EXPECT_EQ(group_at_line(v1, marker_line("churn")), nullptr);
  EXPECT_EQ(group_at_line(v1, marker_line("spike")), nullptr);
}

TEST(GoldenOracle, DiffIsTheOneChangedAllocation) {
  if (regenerating()) GTEST_SKIP() << "regenerating";
  Json diff = parse_expected("diff.json");
  // Only make_array<double> changed between the runs: 16 -> 32 doubles.
  const Json* groups = diff.get("groups");
  ASSERT_NE(groups, nullptr);
  EXPECT_EQ(groups->items.size(), 1u);
  const Json* g = group_at_line(diff, marker_line("make_array"));
  ASSERT_NE(g, nullptr);
  const Json* delta = g->get("delta");
  ASSERT_NE(delta, nullptr);
  EXPECT_EQ(number(*delta, "leaked_bytes"), 128);
  EXPECT_EQ(number(*delta, "allocated_bytes"), 128);
  EXPECT_EQ(number(*delta, "leaked_blocks"), 0);
}

// The size of every alloc record of a trace, read here from the raw records.
std::vector<uint64_t> alloc_sizes(const std::string& trace) {
  std::vector<uint64_t> sizes;
  for (const std::string& line : split_lines(read_file(trace))) {
    std::vector<std::string> w = words(line);
    if (w.size() < 4 || w[3] != "alloc") continue;
    for (const std::string& field : w) {
      if (field.rfind("size=", 0) == 0) sizes.push_back(std::stoull(field.substr(5)));
    }
  }
  return sizes;
}

TEST(GoldenOracle, PeakIsTheSpike) {
  if (regenerating()) GTEST_SKIP() << "regenerating";
  // At the peak, the spike's 100000 bytes are live with everything allocated before
  // them and not yet freed: the leaks of make_list, label and make_array (279 bytes in
  // 5 blocks) and what libstdc++ allocated at start-up (the trace's first alloc).
  std::vector<uint64_t> sizes = alloc_sizes(at("memtrace-v1.trace"));
  ASSERT_FALSE(sizes.empty());
  Json peak = parse_expected("peak.json");
  EXPECT_EQ(number(peak, "peak_bytes"), static_cast<int64_t>(sizes[0] + 279 + 100000));
  const Json* processes = peak.get("processes");
  ASSERT_TRUE(processes != nullptr && processes->items.size() == 1);
  EXPECT_EQ(number(processes->items[0], "peak_blocks"), 1 + 5 + 1);
  EXPECT_NE(group_at_line(processes->items[0], marker_line("spike")), nullptr);
}

TEST(GoldenOracle, TemporariesAreChurnAndSpike) {
  if (regenerating()) GTEST_SKIP() << "regenerating";
  // churn: 4 x malloc(256) each freed before the next allocation; spike: malloc(100000)
  // freed at once.
  Json temporary = parse_expected("temporary.json");
  EXPECT_EQ(number(temporary, "temporary"), 5);
  EXPECT_EQ(number(temporary, "temporary_bytes"), 4 * 256 + 100000);
  const Json* churn = group_at_line(temporary, marker_line("churn"));
  ASSERT_NE(churn, nullptr);
  EXPECT_EQ(number(*churn, "temporary_bytes"), 1024);
  EXPECT_NE(group_at_line(temporary, marker_line("spike")), nullptr);
}

TEST(GoldenOracle, HistogramBucketsTheRecordedSizes) {
  if (regenerating()) GTEST_SKIP() << "regenerating";
  std::map<int64_t, int64_t> want;  // power-of-two bucket minimum -> allocations
  for (uint64_t size : alloc_sizes(at("memtrace-v1.trace"))) {
    int64_t min = 1;
    while (static_cast<uint64_t>(min) * 2 <= size) min *= 2;
    ++want[min];
  }
  std::map<int64_t, int64_t> got;
  Json histogram = parse_expected("histogram.json");
  const Json* buckets = histogram.get("buckets");
  ASSERT_NE(buckets, nullptr);
  for (const Json& b : buckets->items) {
    if (int64_t n = number(b, "allocations"); n > 0) got[number(b, "min")] = n;
  }
  EXPECT_EQ(got, want);
}

TEST(GoldenOracle, OpenDescriptorsAreMainsTwo) {
  if (regenerating()) GTEST_SKIP() << "regenerating";
  Json fds = parse_expected("fds.json");
  EXPECT_EQ(number(fds, "open_fds"), 1);
  EXPECT_EQ(number(fds, "open_streams"), 1);
  struct Open {
    std::string marker, kind, path;
  };
  for (const Open& o : {Open{"main fopen", "stream", "/proc/self/status"},
                        Open{"main open", "fd", "/dev/null"}}) {
    SCOPED_TRACE(o.marker);
    const Json* g = group_at_line(fds, marker_line(o.marker));
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(string_or_null(*g, "kind"), o.kind);
    const Json* open = g->get("open");
    ASSERT_TRUE(open != nullptr && open->items.size() == 1);
    EXPECT_EQ(string_or_null(open->items[0], "path"), o.path);
  }
}

TEST(GoldenOracle, CallsAreTheProgramsFive) {
  if (regenerating()) GTEST_SKIP() << "regenerating";
  Json calls = parse_expected("calls.json");
  const Json* functions = calls.get("functions");
  ASSERT_NE(functions, nullptr);
  std::map<std::string, int64_t> got;
  for (const Json& f : functions->items) got[string_or_null(f, "name").value_or("")] = number(f, "calls");
  std::map<std::string, int64_t> want = {{"shapes::make_list(int)", 1},
                                         {"shapes::label(char const*)", 1},
                                         {"double* shapes::make_array<double>(unsigned long)", 1},
                                         {"shapes::churn(int)", 1},
                                         {"shapes::spike()", 1}};
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace ft::post
