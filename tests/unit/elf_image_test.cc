// Tests for ElfImage and DwarfParams on fixture binaries built by
// tests/unit/fixtures/meson.build. binutils (readelf, objdump, nm) run on the same files
// serve as the independent oracle.
#include <elf.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "binutils_oracle.h"
#include "common/demangle.h"
#include "core/dwarf_params.h"
#include "core/elf_cache.h"
#include "core/elf_image.h"

namespace ft {
namespace {

namespace fs = std::filesystem;
using namespace ft::test;  // binutils_oracle.h

// ---------------------------------------------------------------------------------------
// Helpers

std::string fixture_dir() {
  if (const char* root = std::getenv("FT_BUILD_ROOT"); root != nullptr && *root != '\0')
    return std::string(root) + "/tests/unit/fixtures";
  // Run directly: the fixtures are next to this test binary.
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "fixtures";
  return (self.parent_path() / "fixtures").string();
}

std::string fixture(const std::string& name) { return fixture_dir() + "/" + name; }

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool have_tool(const std::string& name) {
  return !run_command("command -v " + shell_quote(name)).empty();
}

std::string plain_name(std::string name) {
  size_t at = name.find('@');
  if (at != std::string::npos && at > 0) name.resize(at);
  return name;
}

using NameAddr = std::set<std::pair<std::string, uint64_t>>;

// Defined function symbols with a non-zero address from `readelf -Ws`, versions removed.
NameAddr readelf_functions(const std::string& path) {
  NameAddr out;
  for (const std::string& line : split_lines(run_command("readelf -Ws --wide " + shell_quote(path)))) {
    std::istringstream in(line);
    std::vector<std::string> t;
    for (std::string tok; in >> tok;) t.push_back(tok);
    // readelf prints STT_GNU_IFUNC as "<OS specific>: 10" when EI_OSABI is not GNU.
    if (t.size() >= 6 && t[3] == "<OS" && t[4] == "specific>:") {
      t[3] = t[5] == "10" ? "IFUNC" : "OS" + t[5];
      t.erase(t.begin() + 4, t.begin() + 6);
    }
    if (t.size() < 8 || t[0].back() != ':') continue;
    const std::string &value = t[1], &type = t[3], &ndx = t[6], &name = t[7];
    if (type != "FUNC" && type != "IFUNC") continue;
    if (ndx == "UND") continue;
    uint64_t v = std::stoull(value, nullptr, 16);
    if (v == 0) continue;
    out.emplace(plain_name(name), v);
  }
  return out;
}

NameAddr our_functions(const ElfImage& img) {
  NameAddr out;
  for (const ElfSymbol& s : img.functions())
    if (!s.plt) out.emplace(s.name, s.value);
  return out;
}

std::map<uint64_t, std::string> our_plt(const ElfImage& img) {
  std::map<uint64_t, std::string> out;
  for (const ElfSymbol& s : img.functions())
    if (s.plt) out.emplace(s.value, s.name);
  return out;
}

// `<name@plt>` labels printed by objdump (or llvm-objdump) for the PLT sections.
std::map<uint64_t, std::string> objdump_plt(const std::string& tool, const std::string& path) {
  std::map<uint64_t, std::string> out;
  static const std::regex label(R"(^([0-9a-f]+) <(.+)@plt>:\s*$)");
  std::string sections = tool == "objdump" ? " -j .plt -j .plt.sec -j .plt.got -j .plt.bnd" : "";
  for (const std::string& line : split_lines(run_command(tool + " -d" + sections + " " + shell_quote(path)))) {
    std::smatch m;
    if (std::regex_match(line, m, label)) out.emplace(std::stoull(m[1], nullptr, 16), m[2]);
  }
  return out;
}

bool has_function(const ElfImage& img, const std::string& name, uint64_t value) {
  for (const ElfSymbol& s : img.functions())
    if (s.name == name && s.value == value) return true;
  return false;
}

// Each objdump PLT label is one of our stubs at the same address with the same name; an
// objdump `*ABS*+0xADDR` label (IRELATIVE slot) is our stub named after the IFUNC whose
// resolver is at ADDR.
void expect_plt_matches(const ElfImage& img, const std::map<uint64_t, std::string>& oracle) {
  auto ours = our_plt(img);
  EXPECT_EQ(ours.size(), oracle.size()) << img.path();
  for (const auto& [addr, label] : oracle) {
    auto it = ours.find(addr);
    if (it == ours.end()) {
      ADD_FAILURE() << img.path() << ": no PLT stub for " << label << "@plt at 0x" << std::hex
                    << addr;
      continue;
    }
    ASSERT_GE(it->second.size(), 4u);
    std::string base = it->second.substr(0, it->second.size() - 4);
    EXPECT_EQ(it->second.substr(base.size()), "@plt");
    if (label.rfind("*ABS*+0x", 0) == 0 && base != label) {
      // We know the IFUNC that owns this resolver: the stub carries its name.
      uint64_t resolver = std::stoull(label.substr(8), nullptr, 16);
      const ElfSymbol* f = img.find(base);
      ASSERT_NE(f, nullptr) << base;
      EXPECT_TRUE(f->ifunc) << base;
      EXPECT_TRUE(has_function(img, base, resolver)) << base << " resolver 0x" << std::hex
                                                     << resolver;
    } else {
      EXPECT_EQ(base, plain_name(label)) << "at 0x" << std::hex << addr;
    }
  }
}

std::string readelf_build_id(const std::string& path) {
  static const std::regex re(R"(Build ID:\s*([0-9a-f]+))");
  std::string out = run_command("readelf -n " + shell_quote(path));
  std::smatch m;
  return std::regex_search(out, m, re) ? m[1].str() : "";
}

// Whether readelf shows the x86 SHSTK feature among the file's GNU properties.
bool readelf_marks_shadow_stack(const std::string& path) {
  static const std::regex re(R"(x86 feature:[^\n]*\bSHSTK\b)");
  return std::regex_search(run_command("readelf -nW " + shell_quote(path)), re);
}

uint64_t readelf_entry(const std::string& path) {
  static const std::regex re(R"(Entry point address:\s*0x([0-9a-f]+))");
  std::string out = run_command("readelf -h " + shell_quote(path));
  std::smatch m;
  return std::regex_search(out, m, re) ? std::stoull(m[1], nullptr, 16) : ~uint64_t{0};
}

// Address of the .init section per readelf -S, 0 if none.
uint64_t readelf_init(const std::string& path) {
  static const std::regex re(R"(\]\s+\.init\s+PROGBITS\s+([0-9a-f]+))");
  std::string out = run_command("readelf -SW " + shell_quote(path));
  std::smatch m;
  return std::regex_search(out, m, re) ? std::stoull(m[1], nullptr, 16) : 0;
}

std::string readelf_interp(const std::string& path) {
  static const std::regex re(R"(Requesting program interpreter:\s*([^\]]+)\])");
  std::string out = run_command("readelf -lW " + shell_quote(path));
  std::smatch m;
  return std::regex_search(out, m, re) ? m[1].str() : "";
}

std::vector<uint64_t> readelf_load_vaddrs(const std::string& path) {
  std::vector<uint64_t> out;
  for (const std::string& line : split_lines(run_command("readelf -lW " + shell_quote(path)))) {
    std::istringstream in(line);
    std::string type, offset, vaddr;
    if (in >> type >> offset >> vaddr && type == "LOAD") out.push_back(std::stoull(vaddr, nullptr, 16));
  }
  return out;
}

std::unique_ptr<ElfImage> open_ok(const std::string& path) {
  auto r = ElfImage::open(path);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return nullptr;
  return std::move(r).value();
}

#define REQUIRE_FIXTURE(var, name)                                                   \
  const std::string var = fixture(name);                                             \
  ASSERT_TRUE(exists(var)) << var << " missing: build the fixtures first (ninja -C " \
                           << "<builddir>, or meson test)"

#define REQUIRE_BINUTILS()                                              \
  do {                                                                  \
    if (!have_tool("readelf") || !have_tool("objdump") || !have_tool("nm")) \
      GTEST_SKIP() << "binutils not installed";                         \
  } while (0)

// Checks shared by all x86-64 fixtures: header facts and symbol/PLT/build-id oracles.
void check_against_binutils(const ElfImage& img, bool check_plt = true) {
  const std::string& path = img.path();
  EXPECT_EQ(our_functions(img), readelf_functions(path)) << path;
  if (check_plt) expect_plt_matches(img, objdump_plt("objdump", path));
  EXPECT_EQ(img.build_id(), readelf_build_id(path)) << path;
  EXPECT_EQ(img.shadow_stack(), readelf_marks_shadow_stack(path)) << path;
  EXPECT_EQ(img.entry(), readelf_entry(path)) << path;
  EXPECT_EQ(img.init(), readelf_init(path)) << path;
  EXPECT_EQ(img.interp(), readelf_interp(path)) << path;
  std::vector<uint64_t> vaddrs;
  for (const ElfSegment& s : img.segments()) vaddrs.push_back(s.vaddr);
  EXPECT_EQ(vaddrs, readelf_load_vaddrs(path)) << path;
  EXPECT_TRUE(std::is_sorted(img.functions().begin(), img.functions().end(),
                             [](const ElfSymbol& a, const ElfSymbol& b) { return a.value < b.value; }));
  for (const ElfSymbol& s : img.functions()) {
    EXPECT_NE(s.value, 0u) << s.name;
    EXPECT_EQ(img.find(s.name) != nullptr, true) << s.name;
  }
}

// ---------------------------------------------------------------------------------------
// ElfImage on well-formed files

TEST(ElfImageTest, PieExecutable) {
  REQUIRE_BINUTILS();
  REQUIRE_FIXTURE(path, "elf_fixture_pie");
  auto img = open_ok(path);
  ASSERT_NE(img, nullptr);
  EXPECT_TRUE(img->is_dyn());
  EXPECT_FALSE(img->is_static());
  EXPECT_EQ(img->machine(), EM_X86_64);
  EXPECT_TRUE(img->has_symtab());
  EXPECT_EQ(load_bias(img->is_dyn(), img->segments(), 0x555555554000, 0), 0x555555554000u);
  EXPECT_EQ(img->build_id().size(), 40u);
  EXPECT_TRUE(img->debuglink().empty());
  check_against_binutils(*img);

  const ElfSymbol* count = img->find("fx_count_chars");
  ASSERT_NE(count, nullptr);
  EXPECT_TRUE(count->global);
  EXPECT_FALSE(count->dynamic);  // a PIE exports nothing without --export-dynamic
  EXPECT_FALSE(count->plt);
  EXPECT_FALSE(count->ifunc);
  ASSERT_GT(count->size, 1u);
  EXPECT_EQ(img->function_at(count->value), count);
  EXPECT_EQ(img->function_at(count->value + count->size - 1), count);
  EXPECT_NE(img->function_at(count->value + count->size), count);

  const ElfSymbol* helper = img->find("fx_static_helper");
  ASSERT_NE(helper, nullptr);
  EXPECT_FALSE(helper->global);

  const ElfSymbol* twice = img->find("fx_twice");
  ASSERT_NE(twice, nullptr);
  EXPECT_TRUE(twice->ifunc);
  EXPECT_TRUE(twice->global);

  const ElfSymbol* puts_plt = img->find("puts@plt");
  ASSERT_NE(puts_plt, nullptr);
  EXPECT_TRUE(puts_plt->plt);
  EXPECT_EQ(puts_plt->size, 16u);
  EXPECT_EQ(img->function_at(puts_plt->value + 5), puts_plt);
  // The IRELATIVE slot of the local IFUNC gets a stub too.
  EXPECT_NE(img->find("fx_twice@plt"), nullptr);
  // .plt.got stub (GLOB_DAT slot).
  EXPECT_NE(img->find("__cxa_finalize@plt"), nullptr);

  EXPECT_EQ(img->find("no_such_function"), nullptr);
  EXPECT_EQ(img->function_at(0), nullptr);
  EXPECT_EQ(img->function_at(~uint64_t{0}), nullptr);
}

TEST(ElfImageTest, NonPieExecutable) {
  REQUIRE_BINUTILS();
  REQUIRE_FIXTURE(path, "elf_fixture_nopie");
  auto img = open_ok(path);
  ASSERT_NE(img, nullptr);
  EXPECT_FALSE(img->is_dyn());
  EXPECT_FALSE(img->is_static());
  EXPECT_EQ(load_bias(img->is_dyn(), img->segments(), 0x400000, 0), 0u);
  check_against_binutils(*img);
  const ElfSymbol* count = img->find("fx_count_chars");
  ASSERT_NE(count, nullptr);
  EXPECT_GE(count->value, 0x400000u);
  EXPECT_NE(img->find("printf@plt"), nullptr);
}

TEST(ElfImageTest, StaticExecutable) {
  REQUIRE_BINUTILS();
  REQUIRE_FIXTURE(path, "elf_fixture_static");
  auto img = open_ok(path);
  ASSERT_NE(img, nullptr);
  EXPECT_FALSE(img->is_dyn());
  EXPECT_TRUE(img->is_static());
  EXPECT_TRUE(img->interp().empty());
  check_against_binutils(*img, /*check_plt=*/false);  // objdump has no labels for these stubs
  EXPECT_NE(img->find("fx_count_chars"), nullptr);
  EXPECT_NE(img->find("malloc"), nullptr);

  // The PLT of a static executable only has IRELATIVE slots (no PLT0, no symbols); objdump
  // prints no labels for them, so check each stub's `jmp *GOT` against readelf -r.
  std::map<uint64_t, uint64_t> irelative;  // GOT slot -> resolver
  for (const std::string& line : split_lines(run_command("readelf -rW " + shell_quote(path)))) {
    std::istringstream in(line);
    std::string offset, info, type, addend;
    if (in >> offset >> info >> type >> addend && type == "R_X86_64_IRELATIVE")
      irelative[std::stoull(offset, nullptr, 16)] = std::stoull(addend, nullptr, 16);
  }
  ASSERT_FALSE(irelative.empty());
  static const std::regex jmp(R"(^\s*([0-9a-f]+):\s+(f2 )?ff 25 .*#\s*([0-9a-f]+))");
  size_t stubs = 0;
  auto ours = our_plt(*img);
  for (const std::string& line : split_lines(run_command("objdump -d -j .plt " + shell_quote(path)))) {
    std::smatch m;
    if (!std::regex_search(line, m, jmp)) continue;
    uint64_t at = std::stoull(m[1], nullptr, 16), slot = std::stoull(m[3], nullptr, 16);
    auto rel = irelative.find(slot);
    if (rel == irelative.end()) continue;
    ++stubs;
    auto it = ours.find(at);
    ASSERT_NE(it, ours.end()) << "no stub at 0x" << std::hex << at;
    std::string base = it->second.substr(0, it->second.size() - 4);
    EXPECT_TRUE(has_function(*img, base, rel->second)) << it->second;
    const ElfSymbol* f = img->find(base);
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->ifunc) << base;
  }
  EXPECT_EQ(stubs, irelative.size());
  EXPECT_EQ(ours.size(), irelative.size());
}

TEST(ElfImageTest, StrippedExecutableKeepsDynamicExports) {
  REQUIRE_BINUTILS();
  REQUIRE_FIXTURE(path, "elf_fixture_stripped");
  auto img = open_ok(path);
  ASSERT_NE(img, nullptr);
  EXPECT_FALSE(img->has_symtab());
  EXPECT_TRUE(img->is_dyn());
  check_against_binutils(*img);
  const ElfSymbol* count = img->find("fx_count_chars");
  ASSERT_NE(count, nullptr);
  EXPECT_TRUE(count->dynamic);
  EXPECT_TRUE(count->global);
  EXPECT_EQ(img->find("fx_static_helper"), nullptr);  // local: only in the removed .symtab
  EXPECT_NE(img->find("puts@plt"), nullptr);
  for (const ElfSymbol& s : img->functions()) {
    EXPECT_TRUE(s.dynamic || s.plt) << s.name;
  }
}

TEST(ElfImageTest, IbtPltSecStubs) {
  REQUIRE_BINUTILS();
  REQUIRE_FIXTURE(path, "elf_fixture_ibt");
  auto img = open_ok(path);
  ASSERT_NE(img, nullptr);
  check_against_binutils(*img);
  EXPECT_TRUE(img->shadow_stack()) << "linked with -z shstk";
  // The stubs are the .plt.sec entries, not the lazy .plt ones.
  static const std::regex sec(R"(\.plt\.sec\s+PROGBITS\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+))");
  std::smatch m;
  std::string sections = run_command("readelf -SW " + shell_quote(path));
  ASSERT_TRUE(std::regex_search(sections, m, sec));
  uint64_t lo = std::stoull(m[1], nullptr, 16), hi = lo + std::stoull(m[2], nullptr, 16);
  const ElfSymbol* puts_plt = img->find("puts@plt");
  ASSERT_NE(puts_plt, nullptr);
  EXPECT_GE(puts_plt->value, lo);
  EXPECT_LT(puts_plt->value, hi);
}

TEST(ElfImageTest, CxxMangledNames) {
  REQUIRE_BINUTILS();
  REQUIRE_FIXTURE(path, "elf_fixture_cxx");
  auto img = open_ok(path);
  ASSERT_NE(img, nullptr);
  check_against_binutils(*img);
  for (const char* name : {"_ZNK7fixture6Widget4pokeEi", "_ZN7fixture6Widget4makeEPKc",
                           "_ZN7fixture5twiceIiEET_S1_", "_ZN7fixture5twiceIdEET_S1_",
                           "_ZN7fixture10overloadedEi", "_ZN7fixture10overloadedEd"})
    EXPECT_NE(img->find(name), nullptr) << name;
  // Constructor aliases (C1/C2) share one address.
  const ElfSymbol* c1 = img->find("_ZN7fixture6WidgetC1Ei");
  const ElfSymbol* c2 = img->find("_ZN7fixture6WidgetC2Ei");
  ASSERT_NE(c1, nullptr);
  ASSERT_NE(c2, nullptr);
  EXPECT_EQ(c1->value, c2->value);
  EXPECT_NE(img->function_at(c1->value), nullptr);

  // nm as a second oracle: every function we list is a text symbol at that address.
  std::set<std::pair<std::string, uint64_t>> nm_text;
  for (const std::string& line : split_lines(run_command("nm --defined-only " + shell_quote(path)))) {
    std::istringstream in(line);
    std::string addr, type, name;
    if (in >> addr >> type >> name && std::string("TtWwi").find(type) != std::string::npos)
      nm_text.emplace(name, std::stoull(addr, nullptr, 16));
  }
  for (const auto& f : our_functions(*img)) {
    EXPECT_TRUE(nm_text.count(f)) << f.first;
  }
}

TEST(ElfImageTest, SharedLibrary) {
  REQUIRE_BINUTILS();
  REQUIRE_FIXTURE(path, "libelf_fixture_lib.so");
  auto img = open_ok(path);
  ASSERT_NE(img, nullptr);
  EXPECT_TRUE(img->is_dyn());
  EXPECT_TRUE(img->interp().empty());
  EXPECT_TRUE(img->has_symtab());
  EXPECT_EQ(load_bias(img->is_dyn(), img->segments(), 0x7f0000000000, 0), 0x7f0000000000u);
  check_against_binutils(*img);

  const ElfSymbol* exported = img->find("ftlib_exported");
  ASSERT_NE(exported, nullptr);
  EXPECT_TRUE(exported->dynamic);
  EXPECT_TRUE(exported->global);
  const ElfSymbol* hidden = img->find("ftlib_hidden");
  ASSERT_NE(hidden, nullptr);
  EXPECT_FALSE(hidden->dynamic);
  const ElfSymbol* local = img->find("ftlib_local");
  ASSERT_NE(local, nullptr);
  EXPECT_FALSE(local->global);
  EXPECT_NE(img->find("printf@plt"), nullptr);

  // Two versions of ftlib_versioned, under the plain name; find() prefers the default.
  int versions = 0;
  for (const ElfSymbol& s : img->functions()) {
    if (!s.plt) {
      EXPECT_EQ(s.name.find('@'), std::string::npos) << s.name;
    }
    if (s.name == "ftlib_versioned") {
      ++versions;
      EXPECT_TRUE(s.dynamic);
    }
  }
  EXPECT_EQ(versions, 2);
  const ElfSymbol* v2 = img->find("ftlib_versioned_v2");
  const ElfSymbol* versioned = img->find("ftlib_versioned");
  ASSERT_NE(v2, nullptr);
  ASSERT_NE(versioned, nullptr);
  EXPECT_EQ(versioned->value, v2->value);
  // At that address the exported name is preferred over the local alias.
  EXPECT_EQ(img->function_at(v2->value)->name, "ftlib_versioned");
}

TEST(ElfImageTest, StrippedSharedLibrary) {
  REQUIRE_BINUTILS();
  REQUIRE_FIXTURE(path, "libelf_fixture_lib_stripped.so");
  auto img = open_ok(path);
  ASSERT_NE(img, nullptr);
  EXPECT_FALSE(img->has_symtab());
  check_against_binutils(*img);
  EXPECT_NE(img->find("ftlib_exported"), nullptr);
  EXPECT_NE(img->find("ftlib_greet"), nullptr);
  EXPECT_EQ(img->find("ftlib_local"), nullptr);
  EXPECT_EQ(img->find("ftlib_hidden"), nullptr);
  // Without .symtab the default version is known from .gnu.version.
  const ElfSymbol* versioned = img->find("ftlib_versioned");
  ASSERT_NE(versioned, nullptr);
  uint64_t default_addr = 0;
  for (const std::string& line : split_lines(run_command("readelf -Ws " + shell_quote(path)))) {
    if (line.find("ftlib_versioned@@FTLIB_2") == std::string::npos) continue;
    std::istringstream in(line);
    std::string num, value;
    in >> num >> value;
    default_addr = std::stoull(value, nullptr, 16);
  }
  EXPECT_EQ(versioned->value, default_addr);
}

TEST(ElfImageTest, Aarch64Plt) {
  for (const char* name : {"libelf_fixture_a64.so", "libelf_fixture_a64_bti.so"}) {
    SCOPED_TRACE(name);
    const std::string path = fixture(name);
    if (!exists(path)) GTEST_SKIP() << path << " not built (needs clang and ld.lld)";
    auto img = open_ok(path);
    ASSERT_NE(img, nullptr);
    EXPECT_EQ(img->machine(), EM_AARCH64);
    EXPECT_TRUE(img->is_dyn());
    for (const char* stub : {"fx_ext_first@plt", "fx_ext_second@plt", "fx_ext_third@plt"})
      EXPECT_NE(img->find(stub), nullptr) << stub;
    EXPECT_EQ(our_plt(*img).size(), 3u);
    EXPECT_NE(img->find("fx_a64_entry"), nullptr);
    if (have_tool("llvm-objdump")) {
      expect_plt_matches(*img, objdump_plt("llvm-objdump", path));
    }
    if (have_tool("readelf")) {
      EXPECT_EQ(our_functions(*img), readelf_functions(path));
    }
  }
}

// Distribution libraries: large symbol tables, IFUNCs, versioned symbols, IRELATIVE PLT
// slots. Skipped when not present.
TEST(ElfImageTest, SystemLibraries) {
  REQUIRE_BINUTILS();
  std::vector<std::string> libs;
  for (const char* dir : {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"}) {
    for (const char* name : {"libc.so.6", "libstdc++.so.6", "libm.so.6", "libelf.so.1"}) {
      std::string p = std::string(dir) + "/" + name;
      if (exists(p)) libs.push_back(p);
    }
    if (!libs.empty()) break;
  }
  if (libs.empty()) GTEST_SKIP() << "no system libraries found";
  for (const std::string& path : libs) {
    SCOPED_TRACE(path);
    auto start = std::chrono::steady_clock::now();
    auto img = open_ok(path);
    auto elapsed = std::chrono::steady_clock::now() - start;
    ASSERT_NE(img, nullptr);
    EXPECT_LT(elapsed, std::chrono::seconds(5));
    EXPECT_EQ(our_functions(*img), readelf_functions(path));
    expect_plt_matches(*img, objdump_plt("objdump", path));
    EXPECT_EQ(img->build_id(), readelf_build_id(path));
  }
}

// ---------------------------------------------------------------------------------------
// ElfImage on broken input

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "ft_elf_test.XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) != nullptr) path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void expect_error(const std::string& path, const std::string& fragment) {
  auto r = ElfImage::open(path);
  ASSERT_FALSE(r.ok()) << path << " opened without error";
  const std::string& msg = r.error().message;
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
}

TEST(ElfImageErrorTest, MissingAndNonRegularFiles) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  expect_error(tmp.file("does-not-exist"), "No such file");
  expect_error(tmp.path(), "not a regular file");
}

TEST(ElfImageErrorTest, NotElf) {
  TempDir tmp;
  write_file(tmp.file("empty"), "");
  expect_error(tmp.file("empty"), "not an ELF file");
  write_file(tmp.file("text"), "#!/bin/sh\necho hello\n");
  expect_error(tmp.file("text"), "not an ELF file");
  write_file(tmp.file("magic-only"), "\x7f" "EL");
  expect_error(tmp.file("magic-only"), "not an ELF file");
  std::mt19937 rng(12345);
  for (int i = 0; i < 20; ++i) {
    std::string bytes(4096, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    if (bytes.compare(0, 4, "\x7f" "ELF") == 0) bytes[0] = 'x';
    write_file(tmp.file("random"), bytes);
    expect_error(tmp.file("random"), "not an ELF file");
  }
}

TEST(ElfImageErrorTest, TruncatedFiles) {
  REQUIRE_FIXTURE(path, "elf_fixture_pie");
  TempDir tmp;
  std::string bytes = read_file(path);
  ASSERT_GT(bytes.size(), 4096u);
  for (size_t cut : {size_t{5}, size_t{10}, size_t{16}, size_t{63}, size_t{64}, size_t{200},
                     size_t{4096}, bytes.size() / 2, bytes.size() - 1}) {
    SCOPED_TRACE(cut);
    write_file(tmp.file("cut"), bytes.substr(0, cut));
    expect_error(tmp.file("cut"), "truncated ELF");
  }
  // A shared library cut in the middle too.
  REQUIRE_FIXTURE(lib, "libelf_fixture_lib.so");
  std::string lib_bytes = read_file(lib);
  write_file(tmp.file("lib-cut"), lib_bytes.substr(0, lib_bytes.size() / 2));
  expect_error(tmp.file("lib-cut"), "truncated ELF");
}

TEST(ElfImageErrorTest, CorruptHeaders) {
  REQUIRE_FIXTURE(path, "elf_fixture_pie");
  TempDir tmp;
  const std::string orig = read_file(path);
  ASSERT_GE(orig.size(), sizeof(Elf64_Ehdr));
  auto patched = [&](auto&& edit) {
    std::string b = orig;
    Elf64_Ehdr eh;
    std::memcpy(&eh, b.data(), sizeof eh);
    edit(eh, b);
    std::memcpy(b.data(), &eh, sizeof eh);
    write_file(tmp.file("bad"), b);
    return tmp.file("bad");
  };
  expect_error(patched([](Elf64_Ehdr& eh, std::string&) { eh.e_ident[EI_CLASS] = 7; }), "corrupt ELF");
  expect_error(patched([](Elf64_Ehdr& eh, std::string&) { eh.e_ident[EI_DATA] = 9; }), "corrupt ELF");
  expect_error(patched([](Elf64_Ehdr& eh, std::string&) { eh.e_shoff = ~uint64_t{0} - 100; }), "truncated");
  expect_error(patched([](Elf64_Ehdr& eh, std::string&) { eh.e_phoff = uint64_t{1} << 40; }), "truncated");
  expect_error(patched([](Elf64_Ehdr& eh, std::string&) { eh.e_phentsize = 7; }), "corrupt ELF");
  expect_error(patched([](Elf64_Ehdr& eh, std::string&) { eh.e_type = ET_REL; }), "not an executable");
  expect_error(patched([](Elf64_Ehdr& eh, std::string&) { eh.e_type = ET_CORE; }), "not an executable");

  // A section pointing past the end of the file.
  expect_error(patched([](Elf64_Ehdr& eh, std::string& b) {
    Elf64_Shdr sh;
    size_t at = eh.e_shoff + 3 * sizeof sh;
    std::memcpy(&sh, b.data() + at, sizeof sh);
    sh.sh_type = SHT_PROGBITS;
    sh.sh_offset = b.size() - 8;
    sh.sh_size = 4096;
    std::memcpy(b.data() + at, &sh, sizeof sh);
  }), "truncated");

  // A symbol table whose string table link is nonsense.
  expect_error(patched([](Elf64_Ehdr& eh, std::string& b) {
    for (size_t i = 1; i < eh.e_shnum; ++i) {
      Elf64_Shdr sh;
      size_t at = eh.e_shoff + i * sizeof sh;
      std::memcpy(&sh, b.data() + at, sizeof sh);
      if (sh.sh_type != SHT_SYMTAB) continue;
      sh.sh_link = 0xfff0;
      std::memcpy(b.data() + at, &sh, sizeof sh);
    }
  }), "corrupt ELF");

  // Section names unreadable: still opens (symbols are found by section type).
  auto r = ElfImage::open(patched([](Elf64_Ehdr& eh, std::string&) { eh.e_shstrndx = 0xfff0; }));
  if (r.ok()) {
    EXPECT_NE((*r)->find("fx_count_chars"), nullptr);
  }
}

// Random damage must give either an image or an error naming the file, never a crash.
TEST(ElfImageErrorTest, FuzzedFilesDoNotCrash) {
  TempDir tmp;
  std::mt19937_64 rng(20240601);
  for (const char* name : {"elf_fixture_pie", "libelf_fixture_lib_stripped.so"}) {
    REQUIRE_FIXTURE(path, name);
    const std::string orig = read_file(path);
    Elf64_Ehdr eh;
    std::memcpy(&eh, orig.data(), sizeof eh);
    const std::string file = tmp.file("fuzz");
    int opened = 0, failed = 0;
    for (int iter = 0; iter < 400; ++iter) {
      std::string b = orig;
      int edits = 1 + static_cast<int>(rng() % 8);
      for (int e = 0; e < edits; ++e) {
        size_t at = 0;
        switch (rng() % 4) {
          case 0:  // anywhere
            at = rng() % b.size();
            break;
          case 1:  // ELF and program headers
            at = rng() % std::min<size_t>(b.size(), 1024);
            break;
          default:  // section headers
            at = eh.e_shoff + rng() % (size_t{eh.e_shnum} * sizeof(Elf64_Shdr));
            break;
        }
        if (at < b.size()) b[at] = static_cast<char>(rng() % 4 == 0 ? 0xff : rng());
      }
      if (rng() % 8 == 0) b.resize(rng() % b.size());
      write_file(file, b);
      auto r = ElfImage::open(file);
      if (r.ok()) {
        ++opened;
        const ElfImage& img = **r;
        for (const ElfSymbol& s : img.functions()) {
          (void)img.function_at(s.value);
          (void)img.find(s.name);
        }
        (void)load_bias(img.is_dyn(), img.segments(), 0x7f0000000000, 0);
      } else {
        ++failed;
        EXPECT_NE(r.error().message.find(file), std::string::npos) << r.error().message;
        EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << r.error().message;
      }
      // DWARF reader on the same damage: must not crash either.
      if (auto dw = DwarfParams::open(file, "", "")) (void)dw->params(0x1000);
    }
    EXPECT_GT(opened, 0);
    EXPECT_GT(failed, 0);
  }
}

// When the stubs cannot be decoded, .rela.plt entries are mapped to 16-byte stubs after
// PLT0 in relocation order (right for files without IRELATIVE slots, like this library).
TEST(ElfImageTest, PltFallbackInRelocationOrder) {
  REQUIRE_BINUTILS();
  REQUIRE_FIXTURE(path, "libelf_fixture_lib.so");
  static const std::regex plt(R"(\]\s+\.plt\s+PROGBITS\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+))");
  std::smatch m;
  std::string sections = run_command("readelf -SW " + shell_quote(path));
  ASSERT_TRUE(std::regex_search(sections, m, plt));
  size_t off = std::stoull(m[1], nullptr, 16), size = std::stoull(m[2], nullptr, 16);
  std::string bytes = read_file(path);
  ASSERT_LE(off + size, bytes.size());
  bytes.replace(off, size, std::string(size, '\xcc'));  // int3: nothing to decode
  TempDir tmp;
  write_file(tmp.file("lib.so"), bytes);
  auto img = open_ok(tmp.file("lib.so"));
  ASSERT_NE(img, nullptr);
  auto oracle = objdump_plt("objdump", path);  // labels of the intact file
  EXPECT_EQ(our_plt(*img).size(), oracle.size());
  for (const char* name : {"printf", "strlen"}) {
    const ElfSymbol* stub = img->find(std::string(name) + "@plt");
    ASSERT_NE(stub, nullptr) << name;
    auto it = oracle.find(stub->value);
    ASSERT_NE(it, oracle.end()) << name;
    EXPECT_EQ(plain_name(it->second), name);
  }
}

// A separate debug file (objcopy --only-keep-debug) is itself readable.
TEST(ElfImageTest, SeparateDebugFile) {
  REQUIRE_FIXTURE(path, "elf_fixture_pie");
  if (!have_tool("objcopy")) GTEST_SKIP() << "objcopy not installed";
  TempDir tmp;
  std::string dbg = tmp.file("pie.debug");
  ASSERT_EQ(run_command("objcopy --only-keep-debug " + shell_quote(path) + " " + shell_quote(dbg) +
                " && echo ok"),
            "ok\n");
  auto img = open_ok(dbg);
  ASSERT_NE(img, nullptr);
  auto orig = open_ok(path);
  ASSERT_NE(orig, nullptr);
  EXPECT_EQ(img->build_id(), orig->build_id());
  const ElfSymbol* count = img->find("fx_count_chars");
  ASSERT_NE(count, nullptr);
  EXPECT_EQ(count->value, orig->find("fx_count_chars")->value);
}

// ---------------------------------------------------------------------------------------
// DwarfParams

using Kind = ParamInfo::Kind;

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Integer: return "Integer";
    case Kind::Pointer: return "Pointer";
    case Kind::String: return "String";
    case Kind::Float: return "Float";
    case Kind::Other: return "Other";
  }
  return "?";
}

std::string describe(const std::vector<ParamInfo>& params) {
  std::string s;
  for (const ParamInfo& p : params) s += p.name + ":" + kind_name(p.kind) + " ";
  return s;
}

std::string describe(std::vector<std::pair<std::string, Kind>> params) {
  std::string s;
  for (const auto& [name, kind] : params) s += name + ":" + kind_name(kind) + " ";
  return s;
}

std::unique_ptr<DwarfParams> open_dwarf(const ElfImage& img) {
  return DwarfParams::open(img.path(), img.build_id(), img.debuglink());
}

void expect_params(DwarfParams& dw, const ElfImage& img, const std::string& function,
                   const std::vector<std::pair<std::string, Kind>>& want) {
  const ElfSymbol* f = img.find(function);
  ASSERT_NE(f, nullptr) << function;
  auto got = dw.params(f->value);
  ASSERT_TRUE(got.has_value()) << function;
  EXPECT_EQ(describe(*got), describe(want)) << function;
}

TEST(DwarfParamsTest, ParameterKinds) {
  REQUIRE_FIXTURE(path, "elf_fixture_pie");
  auto img = open_ok(path);
  ASSERT_NE(img, nullptr);
  auto dw = open_dwarf(*img);
  ASSERT_NE(dw, nullptr);
  expect_params(*dw, *img, "fx_count_chars", {{"text", Kind::String}, {"needle", Kind::Integer}});
  expect_params(*dw, *img, "fx_static_helper", {{"x", Kind::Integer}});
  expect_params(*dw, *img, "fx_scale", {{"value", Kind::Float}, {"factor", Kind::Float}});
  expect_params(*dw, *img, "fx_no_params", {});
  expect_params(*dw, *img, "fx_mixed",
                {{"label", Kind::String},     // typedef const fx_char *
                 {"bytes", Kind::String},     // typedef unsigned char *
                 {"argv", Kind::Pointer},     // char **
                 {"opaque", Kind::Pointer},   // void *
                 {"triple", Kind::Other},     // struct by value
                 {"color", Kind::Integer},    // enum
                 {"flag", Kind::Integer},     // bool
                 {"sc", Kind::String},        // const volatile signed char *
                 {"counter", Kind::Pointer},  // int *
                 {"wide", Kind::Other}});     // long double: passed in memory
  expect_params(*dw, *img, "main", {{"argc", Kind::Integer}, {"argv", Kind::Pointer}});

  // Addresses DWARF does not describe.
  const ElfSymbol* puts_plt = img->find("puts@plt");
  ASSERT_NE(puts_plt, nullptr);
  EXPECT_FALSE(dw->params(puts_plt->value).has_value());
  const ElfSymbol* count = img->find("fx_count_chars");
  EXPECT_FALSE(dw->params(count->value + 1).has_value());
  EXPECT_FALSE(dw->params(0).has_value());
}

TEST(DwarfParamsTest, NonPieAndSharedLibrary) {
  REQUIRE_FIXTURE(nopie, "elf_fixture_nopie");
  auto img = open_ok(nopie);
  ASSERT_NE(img, nullptr);
  auto dw = open_dwarf(*img);
  ASSERT_NE(dw, nullptr);
  expect_params(*dw, *img, "fx_count_chars", {{"text", Kind::String}, {"needle", Kind::Integer}});

  REQUIRE_FIXTURE(lib, "libelf_fixture_lib.so");
  auto lib_img = open_ok(lib);
  ASSERT_NE(lib_img, nullptr);
  auto lib_dw = open_dwarf(*lib_img);
  ASSERT_NE(lib_dw, nullptr);
  expect_params(*lib_dw, *lib_img, "ftlib_greet", {{"name", Kind::String}});
  expect_params(*lib_dw, *lib_img, "ftlib_versioned_v2", {{"x", Kind::Integer}, {"y", Kind::Integer}});
}

TEST(DwarfParamsTest, CxxMethods) {
  REQUIRE_FIXTURE(path, "elf_fixture_cxx");
  auto img = open_ok(path);
  ASSERT_NE(img, nullptr);
  auto dw = open_dwarf(*img);
  ASSERT_NE(dw, nullptr);
  // Definitions refer to their in-class declarations (DW_AT_specification) and, for
  // constructors, to an abstract instance (DW_AT_abstract_origin).
  expect_params(*dw, *img, "_ZNK7fixture6Widget4pokeEi", {{"this", Kind::Pointer}, {"delta", Kind::Integer}});
  expect_params(*dw, *img, "_ZN7fixture6Widget4makeEPKc", {{"label", Kind::String}});
  expect_params(*dw, *img, "_ZN7fixture6WidgetC2Ei", {{"this", Kind::Pointer}, {"v", Kind::Integer}});
  expect_params(*dw, *img, "_ZN7fixture5twiceIdEET_S1_", {{"v", Kind::Float}});
}

TEST(DwarfParamsTest, NoDebugInfo) {
  for (const char* name : {"elf_fixture_nodebug", "elf_fixture_stripped",
                           "libelf_fixture_lib_stripped.so"}) {
    SCOPED_TRACE(name);
    REQUIRE_FIXTURE(path, name);
    auto img = open_ok(path);
    ASSERT_NE(img, nullptr);
    auto dw = open_dwarf(*img);
    if (dw == nullptr) continue;  // the expected outcome
    // A debug file was found after all (e.g. installed system-wide): it must not
    // describe our functions wrongly.
    if (const ElfSymbol* f = img->find("fx_count_chars")) {
      auto p = dw->params(f->value);
      if (p) {
        EXPECT_EQ(p->size(), 2u);
      }
    }
  }
  EXPECT_EQ(DwarfParams::open("/nonexistent/file", "", ""), nullptr);
  TempDir tmp;
  write_file(tmp.file("junk"), "junk");
  EXPECT_EQ(DwarfParams::open(tmp.file("junk"), "", ""), nullptr);
}

// A distribution library whose DWARF is installed separately under
// /usr/lib/debug/.build-id (Debian: libc6-dbg). Skipped when not installed.
TEST(DwarfParamsTest, BuildIdDebugFile) {
  const std::string libc = "/lib/x86_64-linux-gnu/libc.so.6";
  if (!exists(libc)) GTEST_SKIP() << libc << " not present";
  auto img = open_ok(libc);
  ASSERT_NE(img, nullptr);
  ASSERT_GT(img->build_id().size(), 2u);
  const std::string debug_file = "/usr/lib/debug/.build-id/" + img->build_id().substr(0, 2) + "/" +
                                 img->build_id().substr(2) + ".debug";
  if (!exists(debug_file)) GTEST_SKIP() << "no separate debug info for " << libc;
  auto dw = DwarfParams::open(libc, img->build_id(), "");  // found by build-id alone
  ASSERT_NE(dw, nullptr);
  // Kinds only: parameter names may change between glibc versions.
  for (const auto& [function, kinds] : std::vector<std::pair<std::string, std::vector<Kind>>>{
           {"puts", {Kind::String}},
           {"fopen", {Kind::String, Kind::String}},
           {"qsort", {Kind::Pointer, Kind::Integer, Kind::Integer, Kind::Pointer}}}) {
    const ElfSymbol* f = img->find(function);
    ASSERT_NE(f, nullptr) << function;
    auto got = dw->params(f->value);
    ASSERT_TRUE(got.has_value()) << function;
    std::vector<Kind> got_kinds;
    for (const ParamInfo& p : *got) got_kinds.push_back(p.kind);
    EXPECT_EQ(got_kinds, kinds) << function << ": " << describe(*got);
  }
  // An unknown build-id and no debuglink: nothing to find.
  EXPECT_EQ(DwarfParams::open(libc, std::string(40, '0'), ""), nullptr);
}

// Separate debug info found through .gnu_debuglink: next to the file and in .debug/.
TEST(DwarfParamsTest, DebuglinkSearch) {
  REQUIRE_FIXTURE(pie, "elf_fixture_pie");
  REQUIRE_FIXTURE(nopie, "elf_fixture_nopie");
  if (!have_tool("objcopy")) GTEST_SKIP() << "objcopy not installed";
  TempDir tmp;
  const std::string prog = tmp.file("prog");
  fs::create_directories(tmp.file(".debug"));
  const std::string dbg = tmp.file(".debug/prog.debug");
  ASSERT_EQ(run_command("objcopy --only-keep-debug " + shell_quote(pie) + " " + shell_quote(dbg) +
                " && objcopy --strip-debug --add-gnu-debuglink=" + shell_quote(dbg) + " " +
                shell_quote(pie) + " " + shell_quote(prog) + " && echo ok"),
            "ok\n");
  auto img = open_ok(prog);
  ASSERT_NE(img, nullptr);
  EXPECT_EQ(img->debuglink(), "prog.debug");

  {
    auto dw = open_dwarf(*img);  // found in .debug/
    ASSERT_NE(dw, nullptr);
    expect_params(*dw, *img, "fx_count_chars", {{"text", Kind::String}, {"needle", Kind::Integer}});
  }
  fs::rename(dbg, tmp.file("prog.debug"));
  {
    auto dw = open_dwarf(*img);  // found next to the file
    ASSERT_NE(dw, nullptr);
    expect_params(*dw, *img, "fx_count_chars", {{"text", Kind::String}, {"needle", Kind::Integer}});
  }
  // A debug file of another build (different build-id) is not used.
  ASSERT_EQ(run_command("objcopy --only-keep-debug " + shell_quote(nopie) + " " +
                shell_quote(tmp.file("prog.debug")) + " && echo ok"),
            "ok\n");
  EXPECT_EQ(open_dwarf(*img), nullptr);
  // No debuglink given: nothing to look for.
  EXPECT_EQ(DwarfParams::open(prog, img->build_id(), ""), nullptr);
}

// Runtimes that walk their threads' stacks themselves are known by what they define.
TEST(ElfImageTest, StackWalkingRuntimes) {
  REQUIRE_FIXTURE(jvm, "libelf_fixture_rt_jvm.so");
  REQUIRE_FIXTURE(v8, "libelf_fixture_rt_v8.so");
  REQUIRE_FIXTURE(plain, "libelf_fixture_rt_plain.so");
  auto img = open_ok(jvm);
  ASSERT_NE(img, nullptr);
  EXPECT_EQ(img->stack_walker(), ElfImage::StackWalker::Jvm);
  EXPECT_FALSE(img->is_go());
  img = open_ok(v8);
  ASSERT_NE(img, nullptr);
  EXPECT_EQ(img->stack_walker(), ElfImage::StackWalker::V8);
  img = open_ok(plain);
  ASSERT_NE(img, nullptr);
  EXPECT_EQ(img->stack_walker(), ElfImage::StackWalker::None);
  EXPECT_NE(img->find("ftrt_helper"), nullptr);
  // Ordinary programs and libraries are none of them.
  REQUIRE_FIXTURE(lib, "libelf_fixture_lib.so");
  img = open_ok(lib);
  ASSERT_NE(img, nullptr);
  EXPECT_EQ(img->stack_walker(), ElfImage::StackWalker::None);
}

// Code read from the disk is the code of the mapping (where no uprobe is).
TEST(ElfImageTest, ReadFromDiskMatchesTheMapping) {
  REQUIRE_FIXTURE(path, "libelf_fixture_rt_plain.so");
  auto img = open_ok(path);
  ASSERT_NE(img, nullptr);
  const ElfSymbol* f = img->find("ftrt_helper");
  ASSERT_NE(f, nullptr);
  ASSERT_GT(f->size, 0u);
  std::span<const uint8_t> mapped = img->read_only_bytes(f->value, f->size);
  ASSERT_EQ(mapped.size(), f->size);
  EXPECT_EQ(img->read_from_disk(f->value, f->size), std::vector<uint8_t>(mapped.begin(), mapped.end()));
  // Outside the file's read-only code: nothing.
  EXPECT_TRUE(img->read_from_disk(0, 1).empty() || img->read_only_bytes(0, 1).size() == 1);
  EXPECT_TRUE(img->read_from_disk(~uint64_t{0} - 16, 8).empty());
}

// One image per file while it is held; a changed file is read again.
TEST(ElfImageTest, CacheSharesAnImageWhileHeld) {
  REQUIRE_FIXTURE(lib, "libelf_fixture_rt_plain.so");
  TempDir tmp;
  const std::string copy = tmp.file("lib.so");
  fs::copy_file(lib, copy);
  ElfCache cache;
  auto a = cache.open(copy);
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto b = cache.open(copy);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ(cache.live(), 1u);
  // The names demangled once, in the order of functions().
  const auto& names = (*a)->demangled_names();
  ASSERT_EQ(names.size(), (*a)->functions().size());
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(names[i], demangle((*a)->functions()[i].name));
  // A file replaced (another inode) is another image, the old one still good.
  fs::remove(copy);
  fs::copy_file(lib, copy);
  auto c = cache.open(copy);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->get(), a->get());
  EXPECT_NE((*a)->find("ftrt_helper"), nullptr);
  // Held by nobody: read again.
  a->reset();
  b->reset();
  c->reset();
  EXPECT_EQ(cache.live(), 0u);
  auto d = cache.open(copy);
  ASSERT_TRUE(d.ok());
  EXPECT_NE((*d)->find("ftrt_helper"), nullptr);
  // Errors are not kept.
  EXPECT_FALSE(cache.open(tmp.file("missing.so")).ok());
}

}  // namespace
}  // namespace ft
