// Tests of where the symbolizer finds module files and their debug info
// (ResolveOptions: sysroot, debug directories; postproc/symbolizer.h), on copies of
// the fixture program tests/unit/fixtures/sym_fixture.c that the build lays out in
// sym_tree (see tests/unit/fixtures/meson.build): stripped copies with a
// .gnu_debuglink, their debug file next to them, in .debug/, under a sysroot's
// /usr/lib/debug, in a .build-id tree, and another build with a different build-id.
//
// The oracle is binutils on the files themselves: nm for the functions' addresses,
// readelf for the build-id, and addr2line -f -i -C for what is at each address, run on
// the unstripped program (what full debug info gives) or on a stripped copy (what the
// symbol table alone gives).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures/sym_fixture_path.h"
#include "binutils_oracle.h"
#include "test_support.h"
#include "postproc/symbolizer.h"
#include "postproc/trace_reader.h"

namespace ft::post {
namespace {

using test::TempDir;
using namespace ft::test;  // binutils_oracle.h

namespace fs = std::filesystem;

constexpr uint64_t kBase = 0x555555554000;  // where the tests map the program

// ---------------------------------------------------------------------------
// The oracle (binutils_oracle.h)

struct Fixture {
  static const Fixture& get() {
    static const Fixture f;
    return f;
  }

  std::string program = FT_SYM_FIXTURE;  // with DWARF
  std::string tree = FT_SYM_TREE;
  std::string build_id;
  std::vector<uint64_t> probes;  // link-time addresses: every byte of sf_outer, sf_helper
  std::map<uint64_t, std::vector<OracleFrame>> full;     // addr2line on `program`
  std::map<uint64_t, std::vector<OracleFrame>> symbols;  // addr2line on a stripped copy
  std::string problem;  // why the fixture cannot be used, empty if it can

  std::string at(const std::string& rel) const { return tree + "/" + rel; }

 private:
  Fixture() {
    if (tree.empty()) {
      problem = "objcopy or readelf was not found when the build was configured";
      return;
    }
    for (const std::string& line :
         split_lines(run_command("readelf -n " + shell_quote(program)))) {
      std::vector<std::string> w = words(line);
      if (w.size() == 3 && w[0] == "Build" && w[1] == "ID:" && is_hex(w[2])) build_id = w[2];
    }
    for (const std::string& line :
         split_lines(run_command("nm -S --defined-only " + shell_quote(program)))) {
      std::vector<std::string> w = words(line);
      if (w.size() != 4 || !is_hex(w[0]) || !is_hex(w[1])) continue;
      if (w[3] != "sf_outer" && w[3] != "sf_helper") continue;
      uint64_t value = std::stoull(w[0], nullptr, 16), size = std::stoull(w[1], nullptr, 16);
      for (uint64_t a = value; a < value + size; ++a) probes.push_back(a);
    }
    full = addr2line(program, probes);
    symbols = addr2line(at("bare/sym_prog"), probes);
    if (build_id.empty() || probes.empty() || full.size() != probes.size() ||
        symbols.size() != probes.size()) {
      problem = "cannot read " + program + " with readelf, nm and addr2line";
      return;
    }
    bool inlined = false;
    for (const auto& [a, frames] : full) inlined = inlined || frames.size() > 1;
    if (!inlined) problem = "addr2line shows no inlined code in " + program;
  }
};

TraceRecord module_record(const std::string& path, const std::string& build_id) {
  TraceRecord m;
  m.type = "module";
  m.add("base", Hex{kBase}).add("end", Hex{kBase + 0x10000}).add("offset", Hex{0});
  m.add("path", path).add("build_id", build_id);
  return m;
}

std::string describe(const std::optional<std::string>& s) { return s ? *s : "(null)"; }
std::string describe(const std::optional<int64_t>& n) {
  return n ? std::to_string(*n) : "(null)";
}

class SymbolizerFiles : public testing::Test {
 protected:
  void SetUp() override {
    // Keep libdwfl from asking debuginfod servers: the files under test are all local.
    ::unsetenv("DEBUGINFOD_URLS");
    if (!fx.problem.empty()) GTEST_SKIP() << fx.problem;
  }

  // Resolves every probe address of the module recorded as (path, build-id) and
  // compares with the oracle's frames; every frame but the last is inlined.
  static void expect_resolves_as(Symbolizer& s, const std::string& path,
                                 const std::map<uint64_t, std::vector<OracleFrame>>& oracle) {
    s.begin_process();
    s.observe(module_record(path, fx.build_id));
    for (uint64_t a : fx.probes) {
      SCOPED_TRACE("address " + hex(a));
      const ResolvedAddress& r = s.resolve(s.locate(kBase + a), false);
      ASSERT_NE(r.module, nullptr);
      EXPECT_EQ(*r.module, path);
      const std::vector<OracleFrame>& want = oracle.at(a);
      ASSERT_EQ(r.frames.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        SCOPED_TRACE("frame " + std::to_string(i));
        EXPECT_EQ(describe(r.frames[i].function), describe(want[i].function));
        EXPECT_EQ(describe(r.frames[i].file), describe(want[i].file));
        EXPECT_EQ(describe(r.frames[i].line), describe(want[i].line));
        EXPECT_EQ(r.frames[i].inlined, i + 1 < want.size());
      }
    }
  }

  // Every probe address resolves to nothing but the module.
  static void expect_unresolved(Symbolizer& s, const std::string& path) {
    s.begin_process();
    s.observe(module_record(path, fx.build_id));
    for (uint64_t a : fx.probes) {
      const ResolvedAddress& r = s.resolve(s.locate(kBase + a), false);
      ASSERT_NE(r.module, nullptr);
      EXPECT_EQ(*r.module, path);
      ASSERT_EQ(r.frames.size(), 1u);
      EXPECT_FALSE(r.frames[0].function || r.frames[0].file || r.frames[0].line) << hex(a);
    }
  }

  static const Fixture& fx;
};

const Fixture& SymbolizerFiles::fx = Fixture::get();

std::string build_id_file(const std::string& dir, const std::string& id) {
  return dir + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2);
}

// ---------------------------------------------------------------------------
// Tests

// The oracle itself: the stripped copies must be what the tests say they are.
TEST_F(SymbolizerFiles, FixtureCopiesAreStrippedWithTheSameBuildId) {
  for (const char* rel : {"sysroot/usr/bin/sym_prog", "bare/sym_prog", "adjacent/sym_prog",
                          "dotdebug/sym_prog"}) {
    std::string sections = run_command("readelf -S " + shell_quote(fx.at(rel)));
    EXPECT_TRUE(contains(sections, ".gnu_debuglink") && contains(sections, ".symtab")) << rel;
    EXPECT_FALSE(contains(sections, ".debug_info")) << rel;
    EXPECT_TRUE(contains(run_command("readelf -n " + shell_quote(fx.at(rel))), fx.build_id))
        << rel;
  }
  std::string other = fx.at("wrongroot/usr/bin/sym_prog");
  EXPECT_FALSE(contains(run_command("readelf -n " + shell_quote(other)), fx.build_id));
}

// SYSROOT/usr/bin/sym_prog for /usr/bin/sym_prog; its .gnu_debuglink file is in
// SYSROOT/usr/lib/debug/usr/bin/ (the default debug directory under a sysroot). Each
// address is looked up once.
TEST_F(SymbolizerFiles, SysrootModuleWithDebugLinkUnderSysrootUsrLibDebug) {
  CollectingDiagnostics diag;
  Symbolizer s(diag, ResolveOptions{fx.at("sysroot"), {}});
  expect_resolves_as(s, "/usr/bin/sym_prog", fx.full);
  EXPECT_EQ(s.lookups(), fx.probes.size());
  expect_resolves_as(s, "/usr/bin/sym_prog", fx.full);
  EXPECT_EQ(s.lookups(), fx.probes.size());
  EXPECT_TRUE(diag.warnings.empty()) << testing::PrintToString(diag.warnings);
}

// A copy whose debug file is found nowhere but in --debug-dir, by build-id
// (DIR/.build-id/xx/rest.debug).
TEST_F(SymbolizerFiles, DebugDirFindsDebugFileByBuildId) {
  CollectingDiagnostics diag;
  Symbolizer s(diag, ResolveOptions{"", {fx.at("bare"), fx.at("buildid")}});
  expect_resolves_as(s, fx.at("bare/sym_prog"), fx.full);
  EXPECT_TRUE(diag.warnings.empty()) << testing::PrintToString(diag.warnings);
}

TEST_F(SymbolizerFiles, DebugLinkNextToTheModule) {
  CollectingDiagnostics diag;
  Symbolizer s(diag);
  expect_resolves_as(s, fx.at("adjacent/sym_prog"), fx.full);
  EXPECT_TRUE(diag.warnings.empty()) << testing::PrintToString(diag.warnings);
}

TEST_F(SymbolizerFiles, DebugLinkInDotDebugSubdirectory) {
  CollectingDiagnostics diag;
  Symbolizer s(diag);
  expect_resolves_as(s, fx.at("dotdebug/sym_prog"), fx.full);
  EXPECT_TRUE(diag.warnings.empty()) << testing::PrintToString(diag.warnings);
}

// Relative directories are from the current directory (libdwfl would take a relative
// path entry as a subdirectory of the module's directory).
TEST_F(SymbolizerFiles, RelativeSysrootAndDebugDirAreFromTheCurrentDirectory) {
  std::string sysroot = fs::relative(fx.at("wrongroot"), fs::current_path()).string();
  std::string debug = fs::relative(fx.at("buildid"), fs::current_path()).string();
  ASSERT_FALSE(sysroot.empty() || sysroot[0] == '/' || debug.empty() || debug[0] == '/');
  CollectingDiagnostics diag;
  Symbolizer s(diag, ResolveOptions{sysroot, {debug}});
  expect_resolves_as(s, "/usr/bin/sym_prog", fx.full);
  EXPECT_TRUE(diag.warnings.empty()) << testing::PrintToString(diag.warnings);
}

// SYSROOT/usr/bin/sym_prog is another build: the module is taken from the debug
// directory by build-id (DIR/.build-id/xx/rest, a full binary), and its debug file
// too. Without that directory: one warning that says what was tried.
TEST_F(SymbolizerFiles, WrongBuildIdInSysrootFallsBackToBuildIdDirectory) {
  {
    CollectingDiagnostics diag;
    Symbolizer s(diag, ResolveOptions{fx.at("wrongroot"), {fx.at("bare"), fx.at("buildid")}});
    expect_resolves_as(s, "/usr/bin/sym_prog", fx.full);
    EXPECT_TRUE(diag.warnings.empty()) << testing::PrintToString(diag.warnings);
  }
  CollectingDiagnostics diag;
  Symbolizer s(diag, ResolveOptions{fx.at("wrongroot"), {fx.at("bare")}});
  expect_unresolved(s, "/usr/bin/sym_prog");
  ASSERT_EQ(diag.warnings.size(), 1u) << testing::PrintToString(diag.warnings);
  const std::string& w = diag.warnings[0];
  EXPECT_EQ(w.rfind("/usr/bin/sym_prog: ", 0), 0u) << w;
  EXPECT_TRUE(contains(w, fx.at("wrongroot/usr/bin/sym_prog"))) << w;
  EXPECT_TRUE(contains(w, "build-id")) << w;
  EXPECT_TRUE(contains(w, build_id_file(fx.at("bare"), fx.build_id))) << w;
  EXPECT_TRUE(contains(w, build_id_file(fx.at("wrongroot/usr/lib/debug"), fx.build_id))) << w;
  EXPECT_TRUE(contains(w, "not resolved")) << w;
  EXPECT_FALSE(contains(w, "\n")) << w;
}

// The symbol table alone: function names, innermost only, no file or line.
TEST_F(SymbolizerFiles, NoDebugInfoAnywhereGivesSymbolNamesOnly) {
  for (const auto& [a, frames] : fx.symbols) {
    ASSERT_EQ(frames.size(), 1u) << hex(a);
    ASSERT_TRUE(frames[0].function && !frames[0].file && !frames[0].line) << hex(a);
  }
  CollectingDiagnostics diag;
  Symbolizer s(diag);
  expect_resolves_as(s, fx.at("bare/sym_prog"), fx.symbols);
  EXPECT_TRUE(diag.warnings.empty()) << testing::PrintToString(diag.warnings);
}

// A module file found nowhere: null fields, and one warning for all its addresses that
// names the module and every file tried.
TEST_F(SymbolizerFiles, MissingFileGivesNullsAndOneWarning) {
  CollectingDiagnostics diag;
  Symbolizer s(diag, ResolveOptions{fx.at("sysroot"), {fx.at("bare")}});
  expect_unresolved(s, "/usr/bin/sym_missing");
  expect_unresolved(s, "/usr/bin/sym_missing");
  ASSERT_EQ(diag.warnings.size(), 1u) << testing::PrintToString(diag.warnings);
  const std::string& w = diag.warnings[0];
  EXPECT_EQ(w.rfind("/usr/bin/sym_missing: ", 0), 0u) << w;
  EXPECT_TRUE(contains(w, fx.at("sysroot/usr/bin/sym_missing"))) << w;
  EXPECT_TRUE(contains(w, build_id_file(fx.at("bare"), fx.build_id))) << w;
  EXPECT_TRUE(contains(w, build_id_file(fx.at("sysroot/usr/lib/debug"), fx.build_id))) << w;
  EXPECT_FALSE(contains(w, "\n")) << w;
}

// With a sysroot, a module's path on this machine is not read, nor a debug file next
// to it: adjacent/sym_prog resolves fully from its own path, but under a sysroot that
// does not have it, not at all, and from a copy under the sysroot with names only.
TEST_F(SymbolizerFiles, SysrootGivenHostFilesAreNotUsed) {
  std::string host = fx.at("adjacent/sym_prog");
  {
    CollectingDiagnostics diag;
    Symbolizer s(diag);
    expect_resolves_as(s, host, fx.full);
  }
  TempDir root;
  ASSERT_FALSE(root.path().empty());
  {
    CollectingDiagnostics diag;
    Symbolizer s(diag, ResolveOptions{root.path(), {}});
    expect_unresolved(s, host);
    ASSERT_EQ(diag.warnings.size(), 1u) << testing::PrintToString(diag.warnings);
    EXPECT_TRUE(contains(diag.warnings[0], root.path() + host)) << diag.warnings[0];
  }
  std::string copy = root.path() + host;
  fs::create_directories(fs::path(copy).parent_path());
  fs::copy_file(fx.at("bare/sym_prog"), copy);
  CollectingDiagnostics diag;
  Symbolizer s(diag, ResolveOptions{root.path(), {}});
  expect_resolves_as(s, host, fx.symbols);
  EXPECT_TRUE(diag.warnings.empty()) << testing::PrintToString(diag.warnings);
}

}  // namespace
}  // namespace ft::post
