// ModuleMap on this very process: /proc/self/maps read and turned into modules, checked
// against what the dynamic linker (dladdr(3): the file and base of the object holding
// an address) and stat(2) say; a deleted file mapped and unlinked by the test; a free
// range that mmap(2) must then be able to take.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "core/module_map.h"

namespace ft {
namespace {

std::vector<MappedModule> own_modules() {
  auto maps = read_maps(getpid());
  EXPECT_TRUE(maps) << maps.error().message;
  return maps ? modules_from_maps(*maps) : std::vector<MappedModule>{};
}

const MappedModule* holding(const std::vector<MappedModule>& mods, uint64_t addr) {
  for (const MappedModule& m : mods)
    if (addr >= m.base && addr < m.end) return &m;
  return nullptr;
}

// The module holding addr is the file dladdr names (file: that file under another
// name), mapped at the base dladdr names.
void expect_module_of(const void* addr, const char* file = nullptr) {
  Dl_info info{};
  ASSERT_NE(dladdr(addr, &info), 0);
  if (!file) file = info.dli_fname;
  struct stat st;
  ASSERT_EQ(stat(file, &st), 0) << file;
  auto mods = own_modules();
  const MappedModule* m = holding(mods, reinterpret_cast<uint64_t>(addr));
  ASSERT_NE(m, nullptr) << "no module holds " << addr << " (" << info.dli_fname << ")";
  EXPECT_EQ(m->base, reinterpret_cast<uint64_t>(info.dli_fbase)) << m->path;
  EXPECT_EQ(m->dev, st.st_dev) << m->path;
  EXPECT_EQ(m->inode, st.st_ino) << m->path;
  EXPECT_EQ(m->offset, 0u);
  EXPECT_FALSE(m->deleted);
  EXPECT_EQ(m->path[0], '/');
}

int in_this_executable() { return 7; }

TEST(ModuleMap, ModulesAreTheFilesTheDynamicLinkerLoaded) {
  // dladdr names the executable by its argv[0], which may be relative to another
  // directory.
  expect_module_of(reinterpret_cast<const void*>(&in_this_executable), "/proc/self/exe");
  expect_module_of(reinterpret_cast<const void*>(&getpid));
}

TEST(ModuleMap, ModulesAreInAddressOrderOncePerFile) {
  auto mods = own_modules();
  ASSERT_GE(mods.size(), 2u);  // this test and libc at least
  for (size_t i = 1; i < mods.size(); ++i) {
    EXPECT_LT(mods[i - 1].base, mods[i].base);
    EXPECT_LE(mods[i - 1].base, mods[i - 1].base_end);
    EXPECT_LE(mods[i - 1].base_end, mods[i - 1].end);
    for (size_t j = 0; j < i; ++j) EXPECT_NE(mods[i].path, mods[j].path);
  }
}

TEST(ModuleMap, ARemovedFileIsMarkedDeletedUnderItsOwnPath) {
  char path[] = "/tmp/ft-module-map-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  long page = sysconf(_SC_PAGESIZE);
  ASSERT_EQ(ftruncate(fd, 2 * page), 0);
  void* at = mmap(nullptr, static_cast<size_t>(2 * page), PROT_READ, MAP_PRIVATE, fd, 0);
  ASSERT_NE(at, MAP_FAILED);
  close(fd);
  ASSERT_EQ(unlink(path), 0);
  auto mods = own_modules();
  const MappedModule* m = holding(mods, reinterpret_cast<uint64_t>(at));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->path, path);  // without the " (deleted)" the kernel appends
  EXPECT_TRUE(m->deleted);
  EXPECT_EQ(m->base, reinterpret_cast<uint64_t>(at));
  EXPECT_EQ(m->end, reinterpret_cast<uint64_t>(at) + static_cast<uint64_t>(2 * page));
  munmap(at, static_cast<size_t>(2 * page));
}

TEST(ModuleMap, AFreeRangeNearAModuleCanBeMappedAndIsInReach) {
  auto maps = read_maps(getpid());
  ASSERT_TRUE(maps);
  auto mods = modules_from_maps(*maps);
  const MappedModule* exe = holding(mods, reinterpret_cast<uint64_t>(&in_this_executable));
  ASSERT_NE(exe, nullptr);
  const uint64_t size = 1ull << 20;
  uint64_t at = find_free_range(*maps, exe->base, exe->end, size);
  ASSERT_NE(at, 0u);
  // A 32-bit displacement from anywhere in the module reaches all of the range.
  const int64_t reach = int64_t{1} << 31;
  auto distance = [](uint64_t a, uint64_t b) { return a > b ? static_cast<int64_t>(a - b) : static_cast<int64_t>(b - a); };
  EXPECT_LT(distance(at + size, exe->base), reach);
  EXPECT_LT(distance(exe->end, at), reach);
  void* got = mmap(reinterpret_cast<void*>(at), size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  ASSERT_NE(got, MAP_FAILED) << "the range at " << std::hex << at << " is not free: " << errno;
  EXPECT_EQ(reinterpret_cast<uint64_t>(got), at);
  munmap(got, size);
}

}  // namespace
}  // namespace ft
