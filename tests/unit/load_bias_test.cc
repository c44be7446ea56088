// Tests for load_bias() (common/load_bias.h) against where the kernel and the dynamic
// linker really placed files: every mapping (offset 0 or not) of
//  - the objects loaded into this test process, whose bias dl_iterate_phdr reports;
//  - PIE and non-PIE executables (the fixtures of tests/unit/fixtures and /bin/true)
//    stopped right after their exec, whose bias is AT_ENTRY - e_entry and whose
//    interpreter's is AT_BASE (getauxval(3), /proc/PID/auxv).
// The program headers are read from the files themselves, so an error in how a segment
// is matched to a mapping shows up as a wrong bias.
#include "common/load_bias.h"

#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <link.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ft {
namespace {

struct Mapping {
  uint64_t start = 0, offset = 0;
  uint64_t inode = 0;
  std::string path;
};

std::vector<Mapping> read_maps(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  std::vector<Mapping> out;
  std::string line;
  while (std::getline(in, line)) {
    Mapping m;
    uint64_t end = 0;
    char perms[8];
    unsigned dev_major = 0, dev_minor = 0;
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n", &m.start,
                    &end, perms, &m.offset, &dev_major, &dev_minor, &m.inode, &path_at) < 7)
      continue;
    m.path = line.substr(static_cast<size_t>(path_at));
    if (m.inode != 0) out.push_back(m);
  }
  return out;
}

// The ELF type, entry point and PT_LOAD segments of a 64-bit ELF file, read directly.
struct ElfFile {
  bool ok = false;
  bool dyn = false;
  uint64_t entry = 0;
  uint64_t inode = 0;
  std::vector<LoadSegment> loads;
};

ElfFile read_elf(const std::string& path) {
  ElfFile f;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return f;
  Elf64_Ehdr eh;
  struct stat st;
  if (::fstat(fd, &st) == 0 && ::pread(fd, &eh, sizeof eh, 0) == static_cast<ssize_t>(sizeof eh) &&
      std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
      eh.e_phentsize == sizeof(Elf64_Phdr)) {
    f.ok = true;
    f.dyn = eh.e_type == ET_DYN;
    f.entry = eh.e_entry;
    f.inode = st.st_ino;
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
      Elf64_Phdr ph;
      if (::pread(fd, &ph, sizeof ph, static_cast<off_t>(eh.e_phoff + i * sizeof ph)) != sizeof ph) {
        f.ok = false;
        break;
      }
      if (ph.p_type == PT_LOAD) f.loads.push_back({ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz, ph.p_flags});
    }
  }
  ::close(fd);
  return f;
}

// Checks every mapping of `file` in `maps` against `bias`; returns how many there were
// and how many of them had a file offset other than 0. Where two segments begin in the
// same file page (a small file's read-only data and its RELRO data, say), a mapping of
// that page is ambiguous: only the lowest one is checked, which load_bias() promises.
std::pair<int, int> check_mappings(const std::vector<Mapping>& maps, const ElfFile& file, uint64_t bias,
                                   const std::string& what) {
  int all = 0, nonzero = 0;
  std::vector<uint64_t> seen_offsets;
  for (const Mapping& m : maps) {  // in address order
    if (m.inode != file.inode) continue;
    int sharing = 0;
    for (const LoadSegment& s : file.loads) sharing += (s.offset & ~uint64_t{4095}) == m.offset;
    bool lowest = std::find(seen_offsets.begin(), seen_offsets.end(), m.offset) == seen_offsets.end();
    seen_offsets.push_back(m.offset);
    if (sharing > 1 && !lowest) continue;
    ++all;
    if (m.offset != 0) ++nonzero;
    std::optional<uint64_t> got = load_bias(file.dyn, file.loads, m.start, m.offset);
    EXPECT_EQ(got, std::optional<uint64_t>(bias))
        << what << ": mapping at 0x" << std::hex << m.start << " offset 0x" << m.offset;
  }
  return {all, nonzero};
}

std::string fixture(const std::string& name) {
  if (const char* root = std::getenv("FT_BUILD_ROOT"); root != nullptr && *root != '\0')
    return std::string(root) + "/tests/unit/fixtures/" + name;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / "fixtures" / name).string();
}

TEST(LoadBias, ObjectsOfThisProcess) {
  struct Object {
    std::string path;
    uint64_t bias;
  };
  std::vector<Object> objects;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* out = static_cast<std::vector<Object>*>(data);
        std::string name = info->dlpi_name ? info->dlpi_name : "";
        if (name.empty() && out->empty()) name = "/proc/self/exe";  // the program itself
        if (!name.empty() && name[0] == '/') out->push_back({name, info->dlpi_addr});
        return 0;
      },
      &objects);
  std::vector<Mapping> maps = read_maps(getpid());
  int checked = 0, nonzero = 0;
  for (const Object& o : objects) {
    ElfFile f = read_elf(o.path);
    if (!f.ok) continue;
    if (!f.dyn) {
      EXPECT_EQ(o.bias, 0u) << o.path;
    }
    auto [all, moved] = check_mappings(maps, f, o.bias, o.path);
    checked += all;
    nonzero += moved;
  }
  // libc, libstdc++, libgtest, the program: each has mappings past offset 0.
  EXPECT_GE(checked, 8);
  EXPECT_GE(nonzero, 4);
}

// Runs `path` up to its exec (PTRACE_TRACEME: the exec stops it with SIGTRAP), then
// checks the mappings of the executable and its interpreter.
void check_launched(const std::string& path, bool expect_dyn) {
  ElfFile exe = read_elf(path);
  ASSERT_TRUE(exe.ok) << path;
  ASSERT_EQ(exe.dyn, expect_dyn) << path;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    execl(path.c_str(), path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP) << path << ": status " << status;

  uint64_t at_entry = 0, at_base = 0;
  {
    std::ifstream in("/proc/" + std::to_string(pid) + "/auxv", std::ios::binary);
    uint64_t pair[2];
    while (in.read(reinterpret_cast<char*>(pair), sizeof pair) && pair[0] != AT_NULL) {
      if (pair[0] == AT_ENTRY) at_entry = pair[1];
      if (pair[0] == AT_BASE) at_base = pair[1];
    }
  }
  std::vector<Mapping> maps = read_maps(pid);
  std::string interp_path;
  for (const Mapping& m : maps)
    if (m.inode != exe.inode && m.path.find("ld-linux") != std::string::npos) interp_path = m.path;
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);

  ASSERT_NE(at_entry, 0u);
  uint64_t bias = at_entry - exe.entry;
  if (!expect_dyn) {
    EXPECT_EQ(bias, 0u);
  }
  auto [all, nonzero] = check_mappings(maps, exe, bias, path);
  EXPECT_GE(all, 2) << path;
  EXPECT_GE(nonzero, 1) << path;

  if (!interp_path.empty()) {
    ElfFile interp = read_elf(interp_path);
    ASSERT_TRUE(interp.ok) << interp_path;
    auto [iall, inonzero] = check_mappings(maps, interp, at_base, interp_path);
    EXPECT_GE(iall, 2) << interp_path;
    EXPECT_GE(inonzero, 1) << interp_path;
  }
}

TEST(LoadBias, PieExecutable) { check_launched(fixture("elf_fixture_pie"), true); }
TEST(LoadBias, NonPieExecutable) { check_launched(fixture("elf_fixture_nopie"), false); }
TEST(LoadBias, StaticExecutable) { check_launched(fixture("elf_fixture_static"), false); }

TEST(LoadBias, SystemProgram) {
  ElfFile f = read_elf("/bin/true");
  if (!f.ok) GTEST_SKIP() << "/bin/true is not a 64-bit ELF file";
  check_launched("/bin/true", f.dyn);
}

// The segments of a typical x86-64 PIE (ld -z separate-code).
const LoadSegment kPie[] = {
    {0x0000, 0x0628, 0x0000, 0x0628, 4},
    {0x1000, 0x01f5, 0x1000, 0x01f5, 5},
    {0x2000, 0x0144, 0x2000, 0x0144, 4},
    {0x4db8, 0x0260, 0x3db8, 0x0258, 6},
};

TEST(LoadBias, EachSegmentsMapping) {
  const uint64_t bias = 0x55d4c0a00000;
  EXPECT_EQ(load_bias(true, kPie, bias + 0x0000, 0x0000), bias);
  EXPECT_EQ(load_bias(true, kPie, bias + 0x1000, 0x1000), bias);
  EXPECT_EQ(load_bias(true, kPie, bias + 0x2000, 0x2000), bias);
  // The data segment starts in the middle of a page: mapped from offset 0x3000 at
  // vaddr 0x4000.
  EXPECT_EQ(load_bias(true, kPie, bias + 0x4000, 0x3000), bias);
}

TEST(LoadBias, SharedPageGoesToTheFirstSegment) {
  // Read-only data and RELRO data both begin in file page 0x2000: the mapping of that
  // page at the lower address is the read-only data's.
  const LoadSegment segs[] = {{0x0, 0x1000, 0x0, 0x1000, 5}, {0x2000, 0x100, 0x2000, 0x100, 4},
                              {0x3db8, 0x260, 0x2db8, 0x258, 6}};
  const uint64_t bias = 0x7f0000000000;
  EXPECT_EQ(load_bias(true, segs, bias + 0x2000, 0x2000), bias);
}

TEST(LoadBias, MappingInsideASegment) {
  // mprotect split the mappings: their second parts start inside a segment.
  const LoadSegment segs[] = {{0x0, 0x5000, 0x0, 0x5000, 5}, {0x6e10, 0x2000, 0x5e10, 0x1800, 6}};
  const uint64_t bias = 0x7f0000000000;
  EXPECT_EQ(load_bias(true, segs, bias + 0x1000, 0x1000), bias);
  EXPECT_EQ(load_bias(true, segs, bias + 0x4000, 0x4000), bias);
  EXPECT_EQ(load_bias(true, segs, bias + 0x6000, 0x5000), bias);  // RELRO part
  EXPECT_EQ(load_bias(true, segs, bias + 0x7000, 0x6000), bias);  // writable part
}

TEST(LoadBias, LargerPages) {
  // Linked for 64 KiB pages and mapped with them: the data segment is mapped from
  // offset 0x10000, which no segment's offset rounds to at 4 KiB.
  const LoadSegment segs[] = {{0x0, 0x8000, 0x0, 0x8000, 5}, {0x2fd00, 0x400, 0x1fd00, 0x300, 6}};
  const uint64_t bias = 0xffff80000000;
  EXPECT_EQ(load_bias(true, segs, bias, 0), bias);
  EXPECT_EQ(load_bias(true, segs, bias + 0x20000, 0x10000), bias);
  EXPECT_EQ(load_bias(true, segs, bias + 0x20000, 0x10000, 0x10000), bias);
}

TEST(LoadBias, ExecutablesAreNotMoved) {
  const LoadSegment segs[] = {{0x400000, 0x1000, 0, 0x1000, 5}, {0x401000, 0x1000, 0x1000, 0x1000, 5}};
  EXPECT_EQ(load_bias(false, segs, 0x400000, 0), 0u);
  EXPECT_EQ(load_bias(false, segs, 0x401000, 0x1000), 0u);
  EXPECT_EQ(load_bias(false, {}, 0x400000, 0), 0u);
}

TEST(LoadBias, NoSegmentAtThatOffset) {
  EXPECT_FALSE(load_bias(true, kPie, 0x7f0000000000, 0x100000).has_value());
  EXPECT_FALSE(load_bias(true, {}, 0x7f0000000000, 0).has_value());
}

}  // namespace
}  // namespace ft
