// Tests of the leaks report and the symbolizer behind it, on traces in tests/unit/data/
// written by hand (tests/unit/data/leaks-README.md has the totals worked out by hand):
//  - leaks-basic.trace, leaks-second.trace, leaks-truncated.trace have no modules:
//    they test the replay, grouping, sorting and totals, and have golden outputs;
//  - leaks-*.trace.in are templates whose module records and frames point into the
//    fixture program tests/unit/fixtures/leak_fixture.cc. The test fills them in from
//    the built fixture, read with binutils (nm, readelf, objdump) as the oracle: symbol
//    addresses, build-id, segments, call instructions. Expected lines come from markers
//    in the fixture's source.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures/leak_fixture_path.h"
#include "binutils_oracle.h"
#include "json_reader.h"
#include "test_support.h"
#include "postproc/report_leaks.h"
#include "postproc/symbolizer.h"
#include "postproc/trace_reader.h"

namespace ft::post {
namespace {

using test::read_file;
using test::TempDir;
using test::RunResult;
using namespace ft::test;  // binutils_oracle.h

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// Helpers

std::string fixture_source() { return source_root() + "/tests/unit/fixtures/leak_fixture.cc"; }

// 1-based number of the first line of `file` containing `marker`, 0 if none.
int64_t source_line(const std::string& file, const std::string& marker) {
  std::vector<std::string> lines = split_lines(read_file(file));
  for (size_t i = 0; i < lines.size(); ++i) {
    if (contains(lines[i], marker)) return static_cast<int64_t>(i + 1);
  }
  return 0;
}

// ---------------------------------------------------------------------------
// The fixture program, as binutils see it

constexpr uint64_t kExeBias = 0x555555554000;   // where leaks-*.trace.in map it ("exe")
constexpr uint64_t kExe2Bias = 0x7f1234560000;  // the second mapping ("exe2")
constexpr uint64_t kPage = 0x1000;

class Fixture {
 public:
  static const Fixture& get() {
    static const Fixture f;
    return f;
  }

  std::string path = FT_LEAK_FIXTURE;
  std::string build_id;
  std::map<std::string, NmSymbol> symbols;  // defined symbols, mangled names
  uint64_t text_offset = 0;                      // executable PT_LOAD, page-aligned
  uint64_t text_vaddr = 0;
  std::string problem;  // why the fixture cannot be used, empty if it can

  const NmSymbol* symbol(const std::string& name) const {
    auto it = symbols.find(name);
    return it == symbols.end() ? nullptr : &it->second;
  }

  // Address of the instruction after the first call in `function`.
  std::optional<uint64_t> return_after_first_call(const std::string& function) const {
    std::string dis =
        run_command("objdump -d --no-show-raw-insn --disassemble=" + shell_quote(function) + " " +
                    shell_quote(path));
    // "    1225:\tcall   1070 <malloc@plt>"
    bool after_call = false;
    for (const std::string& line : split_lines(dis)) {
      std::vector<std::string> w = words(line);
      if (w.size() < 2 || w[0].size() < 2 || w[0].back() != ':') continue;
      std::optional<uint64_t> address = parse_hex(w[0].substr(0, w[0].size() - 1));
      if (!address) continue;
      if (after_call) return address;
      if (w[1].rfind("call", 0) == 0) after_call = true;
    }
    return std::nullopt;
  }

 private:
  Fixture() {
    if (access(path.c_str(), R_OK) != 0) {
      problem = path + " is not built";
      return;
    }
    symbols = nm_symbols(path);
    build_id = readelf_build_id(path);
    // "  LOAD 0x001000 0x0000000000001000 0x0000000000001000 0x000261 0x000261 R E 0x1000"
    for (const std::string& line : split_lines(run_command("readelf -lW " + shell_quote(path)))) {
      std::vector<std::string> w = words(line);
      if (w.size() < 8 || w[0] != "LOAD") continue;
      bool exec = false;
      for (size_t i = 6; i + 1 < w.size(); ++i) exec = exec || contains(w[i], "E");
      if (!exec) continue;
      text_offset = parse_hex(w[1]).value_or(0) & ~(kPage - 1);
      text_vaddr = parse_hex(w[2]).value_or(0) & ~(kPage - 1);
      break;
    }
    if (symbols.empty() || build_id.empty() || text_offset == 0) {
      problem = "cannot read the symbols, build-id or segments of " + path + " with nm and readelf";
    }
  }
};

#define REQUIRE_FIXTURE()             \
  const Fixture& fx = Fixture::get(); \
  ASSERT_TRUE(fx.problem.empty()) << fx.problem

// Fills in a trace template: {{exe}}, {{exe_build_id}}, {{exe_text_offset}},
// {{exe2_text_base}}, and addresses {{exe:SYMBOL+0xN}}, {{exe:SYMBOL@end}} (just past
// the function), {{exe:SYMBOL@ret}} (return address of its first call); "exe2:" for
// the mapping at kExe2Bias.
std::string expand(const std::string& templ) {
  const Fixture& fx = Fixture::get();
  std::string out;
  size_t last = 0;
  while (true) {
    size_t open = templ.find("{{", last);
    size_t close = open == std::string::npos ? open : templ.find("}}", open);
    if (close == std::string::npos) break;
    out.append(templ, last, open - last);
    last = close + 2;
    std::string name = templ.substr(open + 2, close - open - 2);
    if (name == "exe") {
      out += fx.path;
      continue;
    }
    if (name == "exe_build_id") {
      out += fx.build_id;
      continue;
    }
    if (name == "exe_text_offset") {
      out += hex(fx.text_offset);
      continue;
    }
    if (name == "exe2_text_base") {
      out += hex(kExe2Bias + fx.text_vaddr);
      continue;
    }
    // exe:SYMBOL+0xN, exe:SYMBOL@end, exe:SYMBOL@ret, or exe2:...
    size_t colon = name.find(':');
    size_t mark = name.find_first_of("+@", colon);
    std::string where = name.substr(0, colon);
    if (colon == std::string::npos || mark == std::string::npos ||
        (where != "exe" && where != "exe2")) {
      ADD_FAILURE() << "unknown placeholder {{" << name << "}}";
      continue;
    }
    std::string symbol = name.substr(colon + 1, mark - colon - 1);
    std::string suffix = name.substr(mark);
    uint64_t bias = where == "exe" ? kExeBias : kExe2Bias;
    const NmSymbol* s = fx.symbol(symbol);
    if (s == nullptr) {
      ADD_FAILURE() << "no symbol " << symbol << " in " << fx.path;
      continue;
    }
    uint64_t address = bias + s->value;
    if (suffix == "@end") {
      address += s->size;
    } else if (suffix == "@ret") {
      std::optional<uint64_t> ret = fx.return_after_first_call(symbol);
      EXPECT_TRUE(ret.has_value()) << "no call in " << symbol;
      address = bias + ret.value_or(0);
    } else if (std::optional<uint64_t> n = parse_hex(suffix.substr(1)); suffix[0] == '+' && n) {
      address += *n;
    } else {
      ADD_FAILURE() << "unknown placeholder {{" << name << "}}";
    }
    out += hex(address);
  }
  out.append(templ, last, std::string::npos);
  return out;
}

LeakReport leaks(const std::vector<std::string>& traces, CollectingDiagnostics& diag,
                 LeakOptions options = {}) {
  auto r = compute_leaks(traces, options, diag);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? std::move(r).value() : LeakReport{};
}

const LeakGroup* find_group(const LeakReport& r, const std::string& mangled, uint64_t bytes) {
  for (const LeakGroup& g : r.groups) {
    if (g.mangled == mangled && g.bytes == bytes) return &g;
  }
  return nullptr;
}

// (bytes, blocks, allocator, first frame address or 0) per group, in report order.
std::vector<std::string> summary(const LeakReport& r) {
  std::vector<std::string> out;
  for (const LeakGroup& g : r.groups) {
    out.push_back(std::to_string(g.bytes) + "/" + std::to_string(g.blocks) + " " + g.mangled + " " +
                  (g.frames.empty() ? std::string("-") : hex(g.frames[0].address)));
  }
  return out;
}

// ---------------------------------------------------------------------------
// Replay, grouping, sorting, totals (traces without modules)

// leaks-basic.trace, worked out by hand (README): live at exit are
//   0x1000 malloc 100 [0x401234,0x401500]   0x4000 realloc 300 [0x401400,0x401500]
//   0x5000 _Znwm 24 []   0x6000 _Znwm 8 (no frames)   0x7000 malloc 32 (no frames)
//   0x8000 malloc 16 [0x401600]   0x8100 malloc 16 [0x401200]
//   0x8200, 0x8300 malloc 8 [0x401700]   0x8400 calloc 100 [0x401234,0x401500]
// = 612 bytes in 10 blocks, 8 groups.
TEST(Leaks, TotalsGroupingAndOrderByBytes) {
  CollectingDiagnostics diag;
  LeakReport r = leaks({data("leaks-basic.trace")}, diag);
  EXPECT_TRUE(diag.warnings.empty()) << diag.warnings[0];
  EXPECT_EQ(r.leaked_bytes, 612u);
  EXPECT_EQ(r.leaked_blocks, 10u);
  EXPECT_EQ(r.processes, 1u);
  EXPECT_EQ(r.groups_total, 8u);
  // Ties: 100/1 calloc and malloc have the same frames, so the function decides; 32
  // bytes: more blocks first; 16/1: lower first frame address first.
  EXPECT_EQ(summary(r), (std::vector<std::string>{"300/1 realloc 0x401400", "100/1 calloc 0x401234",
                                                  "100/1 malloc 0x401234", "32/2 _Znwm -",
                                                  "32/1 malloc -", "16/2 malloc 0x401700",
                                                  "16/1 malloc 0x401200", "16/1 malloc 0x401600"}));
  const LeakGroup* news = find_group(r, "_Znwm", 32);
  ASSERT_NE(news, nullptr);
  EXPECT_EQ(news->function, "operator new(unsigned long)");
  ASSERT_EQ(r.groups[0].frames.size(), 2u);
  EXPECT_EQ(r.groups[0].frames[1].address, 0x401500u);
  EXPECT_FALSE(r.groups[0].frames[0].function.has_value());
  EXPECT_FALSE(r.groups[0].frames[0].module.has_value());
}

TEST(Leaks, OrderByBlocks) {
  CollectingDiagnostics diag;
  LeakOptions options;
  options.sort = LeakSort::kBlocks;
  LeakReport r = leaks({data("leaks-basic.trace")}, diag, options);
  EXPECT_EQ(summary(r), (std::vector<std::string>{"32/2 _Znwm -", "16/2 malloc 0x401700",
                                                  "300/1 realloc 0x401400", "100/1 calloc 0x401234",
                                                  "100/1 malloc 0x401234", "32/1 malloc -",
                                                  "16/1 malloc 0x401200", "16/1 malloc 0x401600"}));
}

TEST(Leaks, TopKeepsTheTotals) {
  CollectingDiagnostics diag;
  LeakOptions options;
  options.top = 3;
  LeakReport r = leaks({data("leaks-basic.trace")}, diag, options);
  EXPECT_EQ(r.leaked_bytes, 612u);
  EXPECT_EQ(r.leaked_blocks, 10u);
  EXPECT_EQ(r.groups_total, 8u);
  EXPECT_EQ(summary(r), (std::vector<std::string>{"300/1 realloc 0x401400", "100/1 calloc 0x401234",
                                                  "100/1 malloc 0x401234"}));
  EXPECT_EQ(split_lines(format_leaks_text(r))[0],
            "612 bytes in 10 blocks leaked (8 groups, 1 process; the first 3 shown)");
}

// realloc(0x2000 -> 0x4000) is a free and an alloc: the 0x2000 block of group
// [0x401234,0x401500] is gone, the new one is in the realloc group.
TEST(Leaks, ReallocMovesTheBlock) {
  CollectingDiagnostics diag;
  LeakReport r = leaks({data("leaks-basic.trace")}, diag);
  const LeakGroup* m = find_group(r, "malloc", 100);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->blocks, 1u);
  const LeakGroup* re = find_group(r, "realloc", 300);
  ASSERT_NE(re, nullptr);
  EXPECT_EQ(re->blocks, 1u);
}

std::string trace_text(int pid, const std::vector<std::string>& records, bool end = true) {
  std::string t =
      "functracer-trace 1\n1 " + std::to_string(pid) +
      " 1 header format=1 arch=\"x86_64\" pid=" + std::to_string(pid) +
      " exe=\"/bin/t\" cmdline=\"t\" start_realtime_ns=1 plugins=\"memtrace\" backtrace_depth=4\n";
  uint64_t seq = 2;
  for (const std::string& r : records) {
    t += std::to_string(seq) + " " + std::to_string(pid) + " " + std::to_string(seq) + " " + r +
         "\n";
    ++seq;
  }
  if (end)
    t += std::to_string(seq) + " " + std::to_string(pid) + " " + std::to_string(seq) +
         " exit status=0\n";
  return t;
}

TEST(Leaks, ReleasesOfAddressesNotLiveAreIgnored) {
  TempDir tmp;
  const std::vector<std::string> records = {
      R"(alloc function="malloc" size=10 address=0x1000 frames=[0x1])",
      R"(free function="free" address=0x2000)",                      // never allocated
      R"(bad_free function="free" address=0x1000 reason="double")",  // not a release
      R"(free function="free" address=0x1001)",
      R"(alloc function="malloc" size=20 address=0x3000 frames=[0x1])",
      R"(free function="free" address=0x3000)",
      R"(free function="free" address=0x3000)",  // twice
      R"(alloc_failed function="malloc" size=99)",
  };
  std::string path = tmp.write("t.trace", trace_text(10, records));
  CollectingDiagnostics diag;
  LeakReport r = leaks({path}, diag);
  EXPECT_EQ(r.leaked_bytes, 10u);
  EXPECT_EQ(r.leaked_blocks, 1u);
  EXPECT_TRUE(diag.warnings.empty());
}

TEST(Leaks, AllocAtALiveAddressReplacesTheBlock) {
  TempDir tmp;
  const std::vector<std::string> records = {
      R"(alloc function="malloc" size=10 address=0x1000 frames=[0x1])",
      R"(alloc function="malloc" size=30 address=0x1000 frames=[0x2])",
  };
  std::string path = tmp.write("t.trace", trace_text(10, records));
  CollectingDiagnostics diag;
  LeakReport r = leaks({path}, diag);
  EXPECT_EQ(summary(r), (std::vector<std::string>{"30/1 malloc 0x2"}));
}

// The heap of the image before an exec is gone: its live blocks are discarded, not
// leaked (as valgrind has it), and a later free at the same address belongs to the
// new image.
TEST(Leaks, ExecEndsTheHeap) {
  TempDir tmp;
  const std::vector<std::string> records = {
      R"(alloc function="malloc" size=10 address=0x1000 frames=[0x1])",
      R"(exec exe="/bin/other")",
      R"(free function="free" address=0x1000)",
      R"(alloc function="malloc" size=5 address=0x1000 frames=[0x2])",
  };
  std::string path = tmp.write("t.trace", trace_text(10, records));
  CollectingDiagnostics diag;
  LeakReport r = leaks({path}, diag);
  EXPECT_EQ(summary(r), (std::vector<std::string>{"5/1 malloc 0x2"}));
}

TEST(Leaks, LostEventsWarn) {
  TempDir tmp;
  const std::vector<std::string> records = {
      R"(alloc function="malloc" size=10 address=0x1000)",
      R"(lost count=7 reason="buffer full")",
  };
  std::string path = tmp.write("t.trace", trace_text(10, records));
  CollectingDiagnostics diag;
  LeakReport r = leaks({path}, diag);
  EXPECT_EQ(r.leaked_bytes, 10u);
  ASSERT_EQ(diag.warnings.size(), 1u);
  EXPECT_TRUE(contains(diag.warnings[0], "t.trace: 7 events were lost")) << diag.warnings[0];
}

// leaks-second.trace (pid 301): another 100 bytes from [0x401234,0x401500], a free of
// 0x4000 (live in pid 300, not here: ignored), malloc 40 then realloc to 60 bytes.
// Sum: 612 + 100 + 60 = 772 bytes in 12 blocks, 9 groups.
TEST(Leaks, SeveralFilesAreReplayedApartAndSummed) {
  CollectingDiagnostics diag;
  LeakReport r = leaks({data("leaks-basic.trace"), data("leaks-second.trace")}, diag);
  EXPECT_TRUE(diag.warnings.empty());
  EXPECT_EQ(r.leaked_bytes, 772u);
  EXPECT_EQ(r.leaked_blocks, 12u);
  EXPECT_EQ(r.processes, 2u);
  EXPECT_EQ(summary(r),
            (std::vector<std::string>{"300/1 realloc 0x401400", "200/2 malloc 0x401234",
                                      "100/1 calloc 0x401234", "60/1 realloc 0x401950",
                                      "32/2 _Znwm -", "32/1 malloc -", "16/2 malloc 0x401700",
                                      "16/1 malloc 0x401200", "16/1 malloc 0x401600"}));
}

// leaks-truncated.trace: 77 bytes live at the cut, the cut line ignored.
TEST(Leaks, TruncatedTraceWarnsAndReports) {
  CollectingDiagnostics diag;
  LeakReport r = leaks({data("leaks-truncated.trace")}, diag);
  EXPECT_EQ(r.leaked_bytes, 77u);
  EXPECT_EQ(r.leaked_blocks, 1u);
  EXPECT_EQ(r.cut_short, 1u);
  ASSERT_EQ(diag.warnings.size(), 1u);  // one line says it all
  EXPECT_TRUE(contains(diag.warnings[0], "leaks-truncated.trace:7: the last line is incomplete"))
      << diag.warnings[0];
  EXPECT_TRUE(contains(diag.warnings[0], "without an exit, detach or killed record"))
      << diag.warnings[0];
}

TEST(Leaks, NotATraceIsAnError) {
  CollectingDiagnostics diag;
  auto r = compute_leaks({data("leaks-basic.trace"), data("not_a_trace.txt")}, {}, diag);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error().message, "not_a_trace.txt: not a functracer trace"))
      << r.error().message;
}

TEST(Leaks, TextGolden) {
  CollectingDiagnostics diag;
  LeakReport r = leaks({data("leaks-basic.trace"), data("leaks-second.trace")}, diag);
  EXPECT_EQ(format_leaks_text(r), read_file(data("leaks-two.txt")));
}

TEST(Leaks, JsonGolden) {
  CollectingDiagnostics diag;
  LeakReport r = leaks({data("leaks-basic.trace"), data("leaks-second.trace")}, diag);
  EXPECT_EQ(format_leaks_json(r), read_file(data("leaks-two.json")));
}

// The same traces in format 2 (each call stack written once, as a `stack` record, and
// referred to), made here from the format 1 files by a rewrite independent of the
// engine's writer: the same report, byte for byte.
std::string as_format_2(const std::string& v1_path, const TempDir& tmp) {
  std::vector<std::string> lines = split_lines(read_file(v1_path));
  EXPECT_EQ(lines.at(0), "functracer-trace 1");
  std::string out = "functracer-trace 2\n";
  std::map<HexList, int64_t> ids;
  uint64_t seq = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    auto r = parse_record(lines[i]);
    EXPECT_TRUE(r.ok()) << lines[i];
    if (!r.ok()) continue;
    for (TraceField& f : r->fields) {
      const HexList* frames = std::get_if<HexList>(&f.value);
      if (f.key != "frames" || !frames || frames->empty()) continue;
      auto [it, added] = ids.emplace(*frames, static_cast<int64_t>(ids.size() + 1));
      if (added) {
        TraceRecord stack{++seq, r->tid, r->ts_ns, "stack", {}};
        stack.add("id", it->second).add("frames", *frames);
        out += format_record(stack) + "\n";
      }
      f = TraceField{"stack", it->second};
    }
    r->seq = ++seq;
    out += format_record(*r) + "\n";
  }
  EXPECT_FALSE(ids.empty()) << v1_path << " has no backtraces to write once";
  return tmp.write(fs::path(v1_path).filename().string() + ".v2", out);
}

TEST(Leaks, Format2ReadsAsFormat1) {
  TempDir tmp;
  CollectingDiagnostics diag;
  LeakReport r = leaks({as_format_2(data("leaks-basic.trace"), tmp), as_format_2(data("leaks-second.trace"), tmp)}, diag);
  EXPECT_TRUE(diag.warnings.empty()) << diag.warnings.front();
  EXPECT_EQ(format_leaks_text(r), read_file(data("leaks-two.txt")));
  EXPECT_EQ(format_leaks_json(r), read_file(data("leaks-two.json")));
}

TEST(Leaks, NoLeaks) {
  TempDir tmp;
  const std::vector<std::string> records = {
      R"(alloc function="malloc" size=10 address=0x1000 frames=[0x1])",
      R"(free function="free" address=0x1000)",
  };
  std::string path = tmp.write("t.trace", trace_text(10, records));
  CollectingDiagnostics diag;
  LeakReport r = leaks({path}, diag);
  EXPECT_EQ(format_leaks_text(r), "0 bytes in 0 blocks leaked (0 groups, 1 process)\n");
  std::optional<Json> j = JsonParser(format_leaks_json(r)).parse();
  ASSERT_TRUE(j.has_value());
  ASSERT_NE(j->get("groups"), nullptr);
  EXPECT_EQ(j->get("groups")->type, Json::Type::kArray);
  EXPECT_TRUE(j->get("groups")->items.empty());
  EXPECT_EQ(j->get("leaked_bytes")->number, 0);
}

// ---------------------------------------------------------------------------
// Leak kinds (leaks-kinds.trace: a leak scan at the exit; README has the sums)

size_t kind(LeakKind k) { return static_cast<size_t>(k); }

// (bytes/blocks kind first-frame) per group, in report order.
std::vector<std::string> kind_summary(const LeakReport& r) {
  std::vector<std::string> out;
  for (const LeakGroup& g : r.groups)
    out.push_back(std::to_string(g.bytes) + "/" + std::to_string(g.blocks) + " " +
                  (g.kind == kNoKind ? std::string("none") : std::string(heap::leak_kind_name(static_cast<LeakKind>(g.kind)))) +
                  " " + hex(g.frames.empty() ? 0 : g.frames[0].address));
  return out;
}

TEST(LeakKinds, EveryBlockLiveAtTheScanGetsItsKind) {
  CollectingDiagnostics diag;
  LeakReport r = leaks({data("leaks-kinds.trace")}, diag);
  EXPECT_TRUE(diag.warnings.empty()) << diag.warnings[0];
  ASSERT_TRUE(r.scanned);
  EXPECT_EQ(r.leaked_bytes, 944u);
  EXPECT_EQ(r.leaked_blocks, 6u);
  EXPECT_EQ(r.kinds[kind(LeakKind::kDefinite)].bytes, 548u);
  EXPECT_EQ(r.kinds[kind(LeakKind::kDefinite)].blocks, 2u);
  EXPECT_EQ(r.kinds[kind(LeakKind::kDefinite)].groups, 2u);
  EXPECT_EQ(r.kinds[kind(LeakKind::kIndirect)].bytes, 96u);
  EXPECT_EQ(r.kinds[kind(LeakKind::kIndirect)].blocks, 2u);
  EXPECT_EQ(r.kinds[kind(LeakKind::kPossible)].bytes, 100u);
  EXPECT_EQ(r.kinds[kind(LeakKind::kPossible)].blocks, 1u);
  EXPECT_EQ(r.kinds[kind(LeakKind::kReachable)].bytes, 200u);
  EXPECT_EQ(r.kinds[kind(LeakKind::kReachable)].blocks, 1u);
  EXPECT_EQ(r.kinds[kNoKind].blocks, 0u);
  EXPECT_EQ(r.lost_blocks(), 5u);
  // One call path with blocks of two kinds is two groups; largest first.
  EXPECT_EQ(kind_summary(r), (std::vector<std::string>{"500/1 definite 0x401100", "200/1 reachable 0x401400",
                                                       "100/1 possible 0x401300", "96/2 indirect 0x401200",
                                                       "48/1 definite 0x401200"}));
}

TEST(LeakKinds, TextListsTheLostKindsFirstAndSumsTheReachableOnes) {
  CollectingDiagnostics diag;
  std::string text = format_leaks_text(leaks({data("leaks-kinds.trace")}, diag));
  std::vector<std::string> heads;
  for (const std::string& line : split_lines(text))
    if (contains(line, " allocated by ")) heads.push_back(line);
  EXPECT_EQ(heads, (std::vector<std::string>{"500 bytes in 1 block definitely lost, allocated by malloc",
                                             "48 bytes in 1 block definitely lost, allocated by malloc",
                                             "96 bytes in 2 blocks indirectly lost, allocated by malloc",
                                             "100 bytes in 1 block possibly lost, allocated by calloc"}))
      << text;
  EXPECT_TRUE(contains(text, "\nstill reachable: 200 bytes in 1 block (1 group; --kinds=reachable lists them)\n"))
      << text;
  EXPECT_TRUE(contains(text, "  definitely lost: 548 bytes in 2 blocks\n")) << text;
}

TEST(LeakKinds, JsonHasTheKindsObjectAndAKindOnEveryGroup) {
  CollectingDiagnostics diag;
  std::optional<Json> j = JsonParser(format_leaks_json(leaks({data("leaks-kinds.trace")}, diag))).parse();
  ASSERT_TRUE(j.has_value());
  const Json* kinds = j->get("kinds");
  ASSERT_NE(kinds, nullptr);
  EXPECT_EQ(kinds->keys(), (std::vector<std::string>{"definitely_lost", "indirectly_lost", "possibly_lost",
                                                     "still_reachable"}));
  EXPECT_EQ(kinds->get("definitely_lost")->get("bytes")->number, 548);
  EXPECT_EQ(kinds->get("indirectly_lost")->get("blocks")->number, 2);
  EXPECT_EQ(kinds->get("possibly_lost")->get("bytes")->number, 100);
  EXPECT_EQ(kinds->get("still_reachable")->get("blocks")->number, 1);
  EXPECT_EQ(j->get("leaked_bytes")->number, 944);
  EXPECT_EQ(j->get("leaked_blocks")->number, 6);
  std::vector<std::string> each;
  for (const Json& g : j->get("groups")->items) each.push_back(g.get("kind") ? g.get("kind")->string : "?");
  EXPECT_EQ(each, (std::vector<std::string>{"definite", "reachable", "possible", "indirect", "definite"}));
}

TEST(LeakKinds, ParsingOfKindsLists) {
  auto bit = [](LeakKind k) { return 1u << static_cast<unsigned>(k); };
  EXPECT_EQ(parse_leak_kinds("definite").value(), bit(LeakKind::kDefinite));
  EXPECT_EQ(parse_leak_kinds("definite,possible").value(), bit(LeakKind::kDefinite) | bit(LeakKind::kPossible));
  EXPECT_EQ(parse_leak_kinds("reachable,indirect,reachable").value(),
            bit(LeakKind::kReachable) | bit(LeakKind::kIndirect));
  EXPECT_EQ(parse_leak_kinds("all").value(), 0xfu);
  EXPECT_EQ(parse_leak_kinds("none").value(), 0u);
  for (const char* bad : {"lost", "", "definite,", "Definite", "definite possible"}) {
    auto r = parse_leak_kinds(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(contains(r.error().message, "unknown leak kind")) << r.error().message;
  }
  EXPECT_TRUE(contains(parse_leak_kinds("definite,lost").error().message, "'lost'"));
}

TEST(LeakKinds, KindsChooseTheGroupsNotTheTotals) {
  CollectingDiagnostics diag;
  LeakOptions options;
  options.kinds = 1u << static_cast<unsigned>(LeakKind::kIndirect);
  LeakReport r = leaks({data("leaks-kinds.trace")}, diag, options);
  EXPECT_EQ(kind_summary(r), (std::vector<std::string>{"96/2 indirect 0x401200"}));
  EXPECT_EQ(r.kinds[kind(LeakKind::kDefinite)].bytes, 548u);
  EXPECT_EQ(r.leaked_blocks, 6u);
  EXPECT_EQ(r.lost_blocks(), 5u);
  options.kinds = 0;
  r = leaks({data("leaks-kinds.trace")}, diag, options);
  EXPECT_TRUE(r.groups.empty());
  EXPECT_FALSE(contains(format_leaks_text(r), "still reachable: 200 bytes in 1 block (")) << format_leaks_text(r);
}

// --error-exitcode counts lost blocks that are not suppressed.
TEST(LeakKinds, SuppressedBlocksAreNotLost) {
  CollectingDiagnostics diag;
  LeakOptions options;
  options.filter.add_suppression("calloc");
  LeakReport r = leaks({data("leaks-kinds.trace")}, diag, options);
  EXPECT_EQ(r.lost_blocks(), 4u);
  EXPECT_EQ(r.suppressed_blocks, 1u);
  EXPECT_EQ(r.kinds[kind(LeakKind::kPossible)].blocks, 0u);
  options.filter.add_suppression("^malloc$");
  r = leaks({data("leaks-kinds.trace")}, diag, options);
  EXPECT_EQ(r.lost_blocks(), 0u);
  EXPECT_EQ(r.suppressed_blocks, 6u);
  EXPECT_EQ(r.suppressed_bytes, 944u);
}

// A trace without a scan next to one with: its blocks have no kind and count as lost.
TEST(LeakKinds, BlocksOfATraceWithoutAScanHaveNoKind) {
  CollectingDiagnostics diag;
  LeakReport r = leaks({data("leaks-kinds.trace"), data("leaks-basic.trace")}, diag);
  ASSERT_TRUE(r.scanned);
  EXPECT_EQ(r.kinds[kNoKind].bytes, 612u);
  EXPECT_EQ(r.kinds[kNoKind].blocks, 10u);
  EXPECT_EQ(r.leaked_bytes, 944u + 612u);
  EXPECT_EQ(r.lost_blocks(), 15u);
  std::optional<Json> j = JsonParser(format_leaks_json(r)).parse();
  ASSERT_TRUE(j.has_value());
  size_t nulls = 0;
  for (const Json& g : j->get("groups")->items) nulls += g.get("kind")->type == Json::Type::kNull;
  EXPECT_EQ(nulls, 8u);
  EXPECT_TRUE(contains(format_leaks_text(r), "  not scanned: 612 bytes in 10 blocks\n"));
  // Alone, that trace reports as it did before kinds existed.
  LeakReport old = leaks({data("leaks-basic.trace")}, diag);
  EXPECT_FALSE(old.scanned);
  EXPECT_EQ(old.lost_blocks(), 10u);
  EXPECT_FALSE(contains(format_leaks_json(old), "kind"));
}

// ---------------------------------------------------------------------------
// Symbolization against the fixture program

struct Expected {
  std::string function;
  std::string marker;  // source line marker; "" for no line
  bool inlined = false;
};

void expect_frame(const LeakFrame& f, const Expected& e, uint64_t address) {
  const Fixture& fx = Fixture::get();
  EXPECT_EQ(f.address, address);
  ASSERT_TRUE(f.function.has_value()) << e.function;
  EXPECT_EQ(*f.function, e.function);
  ASSERT_TRUE(f.file.has_value()) << *f.function;
  std::error_code ec;
  EXPECT_TRUE(fs::equivalent(*f.file, fixture_source(), ec)) << *f.file;
  EXPECT_EQ(*f.file, fs::path(*f.file).lexically_normal().string());
  EXPECT_TRUE(fs::path(*f.file).is_absolute()) << *f.file;
  int64_t line = source_line(fixture_source(), e.marker);
  ASSERT_GT(line, 0) << "no marker " << e.marker;
  EXPECT_EQ(f.line, std::optional<int64_t>(line)) << *f.function;
  EXPECT_EQ(f.module, std::optional<std::string>(fx.path));
  EXPECT_EQ(f.inlined, e.inlined) << *f.function;
}

// leaks-symbols.trace.in: operator new called from the code of dup_inline (inlined into
// lk_copy_name), Pool::grow, lk_first, and an address in no module.
TEST(Symbols, FunctionsAndLinesOfFrames) {
  REQUIRE_FIXTURE();
  TempDir tmp;
  std::string path = tmp.write("symbols.trace", expand(read_file(data("leaks-symbols.trace.in"))));
  CollectingDiagnostics diag;
  LeakReport r = leaks({path}, diag);
  EXPECT_TRUE(diag.warnings.empty()) << diag.warnings[0];
  const LeakGroup* g = find_group(r, "_Znwm", 48);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->function, "operator new(unsigned long)");
  ASSERT_EQ(g->frames.size(), 5u);
  uint64_t ret = kExeBias + fx.return_after_first_call("lk_copy_name").value_or(0);
  expect_frame(g->frames[0], {"lk::dup_inline", "// LK_INLINE_CALL", true}, ret);
  expect_frame(g->frames[1], {"lk_copy_name", "// LK_INLINE_SITE", false}, ret);
  expect_frame(g->frames[2], {"lk::Pool::grow(unsigned long)", "// LK_GROW", false},
               kExeBias + fx.symbol("_ZN2lk4Pool4growEm")->value + 1);
  expect_frame(g->frames[3], {"lk_first", "// LK_FIRST", false},
               kExeBias + fx.symbol("lk_first")->value + fx.symbol("lk_first")->size);
  const LeakFrame& nowhere = g->frames[4];
  EXPECT_EQ(nowhere.address, 0x1234u);
  EXPECT_FALSE(nowhere.function || nowhere.file || nowhere.line || nowhere.module);

  const LeakGroup* second = find_group(r, "malloc", 16);
  ASSERT_NE(second, nullptr);
  ASSERT_EQ(second->frames.size(), 1u);
  expect_frame(second->frames[0], {"lk_second", "// LK_SECOND", false},
               kExeBias + fx.symbol("lk_second")->value + 1);
}

// The fixture packs lk_second right after lk_first: the return address just past
// lk_first's last byte is lk_first's call, resolved at address - 1; as a plain
// address it is lk_second.
TEST(Symbols, ReturnAddressesResolveAtAddressMinusOne) {
  REQUIRE_FIXTURE();
  const NmSymbol* first = fx.symbol("lk_first");
  const NmSymbol* second = fx.symbol("lk_second");
  ASSERT_TRUE(first && second);
  ASSERT_EQ(first->value + first->size, second->value) << "the fixture's functions are not packed";
  CollectingDiagnostics diag;
  Symbolizer s(diag);
  TraceRecord m;
  m.type = "module";
  m.add("base", Hex{kExeBias}).add("end", Hex{kExeBias + 0x10000}).add("offset", Hex{0});
  m.add("path", fx.path).add("build_id", fx.build_id);
  s.observe(m);
  Symbolizer::Location loc = s.locate(kExeBias + second->value);
  EXPECT_EQ(s.resolve(loc, true).frames.back().function, std::optional<std::string>("lk_first"));
  EXPECT_EQ(s.resolve(loc, false).frames.back().function, std::optional<std::string>("lk_second"));
  EXPECT_TRUE(diag.warnings.empty());
}

// leaks-aslr.trace.in: the same code in a process that mapped the fixture elsewhere,
// described by its executable segment (offset != 0). Its leak merges with the one in
// leaks-symbols.trace.in, and resolves the same.
TEST(Symbols, ModuleMappedElsewhereResolvesAndMerges) {
  REQUIRE_FIXTURE();
  TempDir tmp;
  std::string a = tmp.write("symbols.trace", expand(read_file(data("leaks-symbols.trace.in"))));
  std::string b = tmp.write("aslr.trace", expand(read_file(data("leaks-aslr.trace.in"))));
  ASSERT_TRUE(contains(read_file(b), "offset=" + hex(fx.text_offset)));

  CollectingDiagnostics diag;
  LeakReport alone = leaks({b}, diag);
  ASSERT_EQ(alone.groups.size(), 1u);
  const LeakGroup& g = alone.groups[0];
  ASSERT_EQ(g.frames.size(), 5u);
  uint64_t ret = kExe2Bias + fx.return_after_first_call("lk_copy_name").value_or(0);
  expect_frame(g.frames[0], {"lk::dup_inline", "// LK_INLINE_CALL", true}, ret);
  expect_frame(g.frames[1], {"lk_copy_name", "// LK_INLINE_SITE", false}, ret);
  expect_frame(g.frames[2], {"lk::Pool::grow(unsigned long)", "// LK_GROW", false},
               kExe2Bias + fx.symbol("_ZN2lk4Pool4growEm")->value + 1);

  LeakReport both = leaks({a, b}, diag);
  EXPECT_TRUE(diag.warnings.empty()) << diag.warnings[0];
  EXPECT_EQ(both.leaked_bytes, 48u + 16u + 48u);
  const LeakGroup* merged = find_group(both, "_Znwm", 96);
  ASSERT_NE(merged, nullptr);
  EXPECT_EQ(merged->blocks, 2u);
  EXPECT_EQ(both.groups_total, 2u);
}

TEST(Symbols, EachCodeAddressIsLookedUpOnce) {
  REQUIRE_FIXTURE();
  CollectingDiagnostics diag;
  Symbolizer s(diag);
  auto module = [&](uint64_t base) {
    TraceRecord m;
    m.type = "module";
    m.add("base", Hex{base}).add("end", Hex{base + 0x10000}).add("offset", Hex{0});
    m.add("path", fx.path).add("build_id", fx.build_id);
    return m;
  };
  uint64_t grow = fx.symbol("_ZN2lk4Pool4growEm")->value + 1;
  s.observe(module(kExeBias));
  Symbolizer::Location a = s.locate(kExeBias + grow);
  s.begin_process();
  s.observe(module(kExe2Bias));
  Symbolizer::Location b = s.locate(kExe2Bias + grow);
  EXPECT_EQ(s.lookups(), 0u);  // locating reads nothing
  const ResolvedAddress& ra = s.resolve(a, true);
  EXPECT_EQ(s.lookups(), 1u);
  const ResolvedAddress& rb = s.resolve(b, true);
  EXPECT_EQ(&ra, &rb);
  EXPECT_EQ(s.resolve(a, true).frames.back().function,
            std::optional<std::string>("lk::Pool::grow(unsigned long)"));
  EXPECT_EQ(s.lookups(), 1u);
  EXPECT_EQ(s.key(a), s.key(b));
  s.resolve(a, false);  // another code address
  EXPECT_EQ(s.lookups(), 2u);
}

// A shared library (elf_fixture_lib) whose symbol table has versioned names
// ("ftlib_versioned@@FTLIB_2", from .symver): frames show the function's name.
TEST(Symbols, SharedLibraryAndVersionedSymbols) {
  std::string lib = FT_LEAK_FIXTURE_LIB;
  std::map<std::string, NmSymbol> symbols = nm_symbols(lib);
  std::string build_id = readelf_build_id(lib);
  ASSERT_TRUE(symbols.count("ftlib_versioned@@FTLIB_2") && symbols.count("ftlib_exported") &&
              !build_id.empty())
      << "cannot read " << lib << " with nm and readelf";
  constexpr uint64_t kBase = 0x7f0012340000;
  CollectingDiagnostics diag;
  Symbolizer s(diag);
  TraceRecord m;
  m.type = "module";
  m.add("base", Hex{kBase}).add("end", Hex{kBase + 0x10000}).add("offset", Hex{0});
  m.add("path", lib).add("build_id", build_id);
  s.observe(m);
  const ResolvedAddress& v =
      s.resolve(s.locate(kBase + symbols["ftlib_versioned@@FTLIB_2"].value + 1), true);
  EXPECT_EQ(v.frames.back().function, std::optional<std::string>("ftlib_versioned"));
  ASSERT_NE(v.module, nullptr);
  EXPECT_EQ(*v.module, lib);
  const ResolvedAddress& e = s.resolve(s.locate(kBase + symbols["ftlib_exported"].value + 1), true);
  EXPECT_EQ(e.frames.back().function, std::optional<std::string>("ftlib_exported"));
  EXPECT_EQ(e.frames.back().line,
            std::optional<int64_t>(source_line(source_root() + "/tests/unit/fixtures/fixture_lib.c",
                                               "int ftlib_exported(int x)")));
  EXPECT_TRUE(diag.warnings.empty());
}

// leaks-modules.trace.in: the fixture with the wrong build-id, a file that does not
// exist, the vDSO, a module that replaces part of the fixture, and an exec. The
// blocks of the image before the exec are looked at where they are live: at #11,
// the record before the exec (which discards them).
TEST(Symbols, UnusableModulesGiveNullsAndOneWarningEach) {
  REQUIRE_FIXTURE();
  TempDir tmp;
  std::string path = tmp.write("modules.trace", expand(read_file(data("leaks-modules.trace.in"))));
  CollectingDiagnostics diag;
  LeakOptions before_exec;
  before_exec.replay.stop = *parse_when("#11");
  LeakReport r = leaks({path}, diag, before_exec);
  EXPECT_EQ(r.leaked_bytes, 95u);

  // The 10-byte block: the fixture resolves, the copy with the wrong build-id does not.
  const LeakGroup* g10 = find_group(r, "malloc", 10);
  ASSERT_NE(g10, nullptr);
  ASSERT_EQ(g10->frames.size(), 3u);
  EXPECT_EQ(g10->frames[0].function, std::optional<std::string>("lk_first"));
  for (int i : {1, 2}) {
    const LeakFrame& f = g10->frames[static_cast<size_t>(i)];
    EXPECT_FALSE(f.function || f.file || f.line) << i;
    EXPECT_EQ(f.module, std::optional<std::string>(fx.path));
  }
  const LeakGroup* g20 = find_group(r, "malloc", 20);
  ASSERT_NE(g20, nullptr);
  ASSERT_EQ(g20->frames.size(), 3u);
  EXPECT_EQ(g20->frames[0].module, std::optional<std::string>("/nonexistent/libgone.so"));
  EXPECT_EQ(g20->frames[2].module, std::optional<std::string>("[vdso]"));
  for (const LeakFrame& f : g20->frames) EXPECT_FALSE(f.function || f.file || f.line);

  // After libnew.so was mapped over part of the fixture, the fixture is gone: lk_first's
  // address is in libnew.so, and one below libnew.so's start in no module.
  const LeakGroup* g30 = find_group(r, "malloc", 30);
  ASSERT_NE(g30, nullptr);
  ASSERT_EQ(g30->frames.size(), 1u);
  EXPECT_EQ(g30->frames[0].module, std::optional<std::string>("/nonexistent/libnew.so"));
  EXPECT_FALSE(g30->frames[0].function.has_value());
  const LeakGroup* g35 = find_group(r, "malloc", 35);
  ASSERT_NE(g35, nullptr);
  ASSERT_EQ(g35->frames.size(), 1u);
  EXPECT_EQ(g35->frames[0].address, 0x555555554100u);
  EXPECT_FALSE(g35->frames[0].module.has_value());
  // After the exec, no module is mapped, and only the new image's block is left.
  CollectingDiagnostics whole_diag;
  LeakReport whole = leaks({path}, whole_diag);
  EXPECT_EQ(whole.leaked_bytes, 40u);
  const LeakGroup* g40 = find_group(whole, "malloc", 40);
  ASSERT_NE(g40, nullptr);
  ASSERT_EQ(g40->frames.size(), 1u);
  EXPECT_EQ(g40->frames[0].address, g30->frames[0].address);
  EXPECT_FALSE(g40->frames[0].module.has_value());

  std::vector<std::string> expected = {"build-id", "/nonexistent/libgone.so", "[vdso]",
                                       "/nonexistent/libnew.so"};
  ASSERT_EQ(diag.warnings.size(), expected.size()) << testing::PrintToString(diag.warnings);
  for (const std::string& e : expected) {
    int n = 0;
    for (const std::string& w : diag.warnings) n += contains(w, e) ? 1 : 0;
    EXPECT_EQ(n, 1) << e << " in " << testing::PrintToString(diag.warnings);
  }
  for (const std::string& w : diag.warnings) EXPECT_TRUE(contains(w, "not resolved")) << w;
}

TEST(Symbols, TextAndJsonOfResolvedFrames) {
  REQUIRE_FIXTURE();
  TempDir tmp;
  std::string path = tmp.write("symbols.trace", expand(read_file(data("leaks-symbols.trace.in"))));
  CollectingDiagnostics diag;
  LeakReport r = leaks({path}, diag);
  std::string text = format_leaks_text(r);
  std::vector<std::string> lines = split_lines(text);
  ASSERT_GE(lines.size(), 8u) << text;
  EXPECT_EQ(lines[0], "64 bytes in 2 blocks leaked (2 groups, 1 process)");
  EXPECT_EQ(lines[1], "");
  EXPECT_EQ(lines[2], "48 bytes in 1 block allocated by operator new(unsigned long)");
  // The text shows the frames of the report (checked against the fixture above).
  ASSERT_EQ(r.groups[0].frames.size(), 5u);
  auto frame_line = [&](size_t i, const std::string& function, const std::string& marker) {
    const LeakFrame& f = r.groups[0].frames[i];
    return "  #" + std::to_string(i) + " " + hex(f.address) + " " + function + " (" +
           f.file.value_or("?") + ":" + std::to_string(source_line(fixture_source(), marker)) +
           ") [" + fx.path + "]";
  };
  EXPECT_TRUE(r.groups[0].frames[0].file.has_value());
  EXPECT_EQ(lines[3], frame_line(0, "lk::dup_inline", "// LK_INLINE_CALL") + " (inlined)");
  EXPECT_EQ(lines[4], frame_line(1, "lk_copy_name", "// LK_INLINE_SITE"));
  EXPECT_EQ(lines[5], frame_line(2, "lk::Pool::grow(unsigned long)", "// LK_GROW"));
  EXPECT_EQ(lines[6], frame_line(3, "lk_first", "// LK_FIRST"));
  EXPECT_EQ(lines[7], "  #4 0x1234 ??");

  std::optional<Json> j = JsonParser(format_leaks_json(r)).parse();
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->keys(), (std::vector<std::string>{"leaked_bytes", "leaked_blocks", "processes",
                                                 "groups_total", "suppressed_bytes",
                                                 "suppressed_blocks", "groups"}));
  EXPECT_EQ(j->get("leaked_bytes")->number, 64);
  EXPECT_EQ(j->get("leaked_blocks")->number, 2);
  const Json& groups = *j->get("groups");
  ASSERT_EQ(groups.items.size(), 2u);
  const Json& g = groups.items[0];
  EXPECT_EQ(g.keys(),
            (std::vector<std::string>{"bytes", "blocks", "function", "mangled", "frames"}));
  EXPECT_EQ(g.get("bytes")->number, 48);
  EXPECT_EQ(g.get("blocks")->number, 1);
  EXPECT_EQ(g.get("function")->string, "operator new(unsigned long)");
  const Json& frames = *g.get("frames");
  ASSERT_EQ(frames.items.size(), 5u);
  for (const Json& f : frames.items) {
    EXPECT_EQ(f.keys(), (std::vector<std::string>{"address", "function", "file", "line", "module",
                                                  "inlined"}));
    const std::string& a = f.get("address")->string;
    EXPECT_TRUE(a.rfind("0x", 0) == 0 && is_hex(a.substr(2))) << a;
  }
  const Json& f1 = frames.items[1];
  EXPECT_EQ(f1.get("function")->string, "lk_copy_name");
  EXPECT_EQ(f1.get("file")->type, Json::Type::kString);
  EXPECT_EQ(f1.get("line")->number, source_line(fixture_source(), "// LK_INLINE_SITE"));
  EXPECT_EQ(f1.get("module")->string, fx.path);
  EXPECT_FALSE(f1.get("inlined")->boolean);
  EXPECT_TRUE(frames.items[0].get("inlined")->boolean);
  const Json& f4 = frames.items[4];
  EXPECT_EQ(f4.get("address")->string, "0x1234");
  for (const char* k : {"function", "file", "line", "module"})
    EXPECT_EQ(f4.get(k)->type, Json::Type::kNull) << k;
}

// ---------------------------------------------------------------------------
// Through the functracer-postproc binary

class Binary : public test::PostprocBinary {};

TEST_F(Binary, LeaksTextAndJson) {
  RunResult r = run({"leaks", data("leaks-basic.trace"), data("leaks-second.trace")});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, read_file(data("leaks-two.txt")));
  EXPECT_EQ(r.err, "");
  r = run({"leaks", "--json", data("leaks-basic.trace"), data("leaks-second.trace")});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, read_file(data("leaks-two.json")));
}

TEST_F(Binary, LeaksSortAndTop) {
  RunResult r = run({"leaks", "--sort=blocks", "--top", "2", data("leaks-basic.trace")});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.err, "");
  std::vector<std::string> lines = split_lines(r.out);
  ASSERT_EQ(lines.size(), 7u) << r.out;
  EXPECT_EQ(lines[0], "612 bytes in 10 blocks leaked (8 groups, 1 process; the first 2 shown)");
  EXPECT_EQ(lines[2], "32 bytes in 2 blocks allocated by operator new(unsigned long)");
  EXPECT_EQ(lines[5], "16 bytes in 2 blocks allocated by malloc");
  EXPECT_EQ(lines[6], "  #0 0x401700 ??");
  r = run({"leaks", "--sort", "bytes", "--top=1", data("leaks-basic.trace")});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(contains(r.out, "\n300 bytes in 1 block allocated by realloc\n")) << r.out;
  EXPECT_FALSE(contains(r.out, "calloc")) << r.out;

  for (const auto& args : std::vector<std::vector<std::string>>{{"leaks", "--sort=size", "t"},
                                                                {"leaks", "--top=0", "t"},
                                                                {"leaks", "--top=x", "t"},
                                                                {"calls", "--sort=bytes", "t"},
                                                                {"calls", "--top=3", "t"}}) {
    r = run(args);
    EXPECT_EQ(r.status, 2) << args[1];
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(split_lines(r.err).size(), 1u) << r.err;
  }
  r = run({"leaks", "--sort=size", "t"});
  EXPECT_TRUE(contains(r.err, "the leaks report sorts by bytes, blocks, not 'size'")) << r.err;
}

TEST_F(Binary, LeaksOfATruncatedTrace) {
  RunResult r = run({"leaks", data("leaks-truncated.trace")});
  EXPECT_EQ(r.status, 0);
  // Blocks live at a cut are not known to be leaks: the report says it is incomplete.
  EXPECT_TRUE(contains(r.out, "77 bytes in 1 block live at the end (1 group, 1 process)\n"
                              "incomplete: 1 trace cut short (no exit, detach or killed record); blocks freed "
                              "after the cut count as live here, not all of them are leaks\n")) << r.out;
  RunResult j = run({"leaks", "--json", data("leaks-truncated.trace")});
  EXPECT_TRUE(contains(j.out, "\"cut_short\": 1")) << j.out;
  std::vector<std::string> err = split_lines(r.err);
  ASSERT_EQ(err.size(), 1u) << r.err;
  EXPECT_TRUE(contains(err[0], "functracer-postproc: warning: ")) << err[0];
  EXPECT_TRUE(contains(err[0], "leaks-truncated.trace:7: the last line is incomplete")) << err[0];
  EXPECT_TRUE(contains(err[0], "the trace ends without")) << err[0];
}

TEST_F(Binary, LeaksWarnsAboutAMismatchedModule) {
  REQUIRE_FIXTURE();
  std::string path = tmp_.write("modules.trace", expand(read_file(data("leaks-modules.trace.in"))));
  // Before the exec (#12), which discards these blocks.
  RunResult r = run({"leaks", "--at", "#11", path});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(contains(r.out, "95 bytes in 4 blocks live at #11")) << r.out;
  EXPECT_EQ(split_lines(r.err).size(), 4u) << r.err;
  EXPECT_TRUE(contains(r.err, "warning: " + fx.path + ": build-id ")) << r.err;
}

}  // namespace
}  // namespace ft::post
