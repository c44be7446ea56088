#include "core/memory_budget.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include <fmt/format.h>

namespace ft::memory_budget {
namespace {

// Enough for a detach of a few processes with large heaps' worth of bookkeeping
// already allocated: the detach itself allocates little.
constexpr size_t kReserveBytes = 32 << 20;
// Share of a cgroup's memory.max at which functracer lets go.
constexpr double kCgroupShare = 0.75;
constexpr uint64_t kCheckEveryNs = 100'000'000;

void* g_reserve = nullptr;
std::atomic<bool> g_failed{false};    // an allocation failed; not yet taken
std::atomic<bool> g_ran_out{false};
uint64_t g_next_check = 0;
std::string g_cgroup_dir;  // of functracer's own memory cgroup, empty: none found
const char* g_limit_file = "";
const char* g_usage_file = "";
const char* g_inactive_key = "";
bool g_cgroup_looked = false;
std::optional<std::string> g_pending;  // found by poll, not yet taken
uint64_t g_as_limit = 0;   // RLIMIT_AS's soft limit, 0: none
// Share of RLIMIT_AS at which functracer lets go (its mappings grow in steps: a hash
// table's new buckets, a trace buffer).
constexpr double kAddressSpaceShare = 0.75;

void on_no_memory() {
  if (g_reserve) {
    std::free(g_reserve);
    g_reserve = nullptr;
    g_failed = true;
    g_ran_out = true;
    return;  // operator new tries again, with the reserve's room
  }
  // Nothing left to give: the way a SIGKILL would end functracer (an attached program
  // runs on, survival.h), said first.
  static constexpr char kLine[] =
      "functracer: out of memory, with no reserve left to let go of the traced processes cleanly: exiting\n";
  (void)!::write(2, kLine, sizeof kLine - 1);
  ::_exit(1);
}

// A small file's contents, without allocating on the way (read into a stack buffer).
bool read_small(const std::string& path, char* buf, size_t size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = ::read(fd, buf, size - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  return true;
}

// Where functracer's memory cgroup keeps its limit and its usage: cgroup v2 (the line
// "0::/path"; memory.max, memory.current) or v1 (the memory controller's line;
// memory.limit_in_bytes, memory.usage_in_bytes). What counts is the working set, as
// container runtimes count it: the usage but for the inactive file pages
// (memory.stat), which the kernel takes back before it kills.
void find_cgroup() {
  g_cgroup_looked = true;
  char buf[4096];
  if (!read_small("/proc/self/cgroup", buf, sizeof buf)) return;
  std::string v1, v2;
  for (char* line = std::strtok(buf, "\n"); line; line = std::strtok(nullptr, "\n")) {
    if (std::strncmp(line, "0::", 3) == 0) v2 = std::string("/sys/fs/cgroup") + (line + 3);
    const char* m = std::strstr(line, ":memory:");
    if (m) v1 = std::string("/sys/fs/cgroup/memory") + (m + 8);
  }
  char limit[64];
  if (!v1.empty() && read_small(v1 + "/memory.limit_in_bytes", limit, sizeof limit)) {
    g_cgroup_dir = v1;
    g_limit_file = "/memory.limit_in_bytes";
    g_usage_file = "/memory.usage_in_bytes";
    g_inactive_key = "total_inactive_file ";
  } else if (!v2.empty() && read_small(v2 + "/memory.max", limit, sizeof limit)) {
    g_cgroup_dir = v2;
    g_limit_file = "/memory.max";
    g_usage_file = "/memory.current";
    g_inactive_key = "inactive_file ";
  }
}

// The cgroup's limit and working set, in bytes; false when it has no limit.
bool cgroup_usage(double& limit, double& used) {
  char max[64], cur[64];
  if (!read_small(g_cgroup_dir + g_limit_file, max, sizeof max) || std::strncmp(max, "max", 3) == 0) return false;
  limit = std::strtod(max, nullptr);
  if (limit <= 0 || limit >= 0x1p60) return false;  // v1's "no limit" is near 2^63
  if (!read_small(g_cgroup_dir + g_usage_file, cur, sizeof cur)) return false;
  used = std::strtod(cur, nullptr);
  static char stat[16384];
  if (!read_small(g_cgroup_dir + "/memory.stat", stat, sizeof stat)) return true;
  const size_t klen = std::strlen(g_inactive_key);
  for (char* line = stat; line && *line;) {
    char* next = std::strchr(line, '\n');
    if (std::strncmp(line, g_inactive_key, klen) == 0) {
      used -= std::min(used, std::strtod(line + klen, nullptr));
      break;
    }
    line = next ? next + 1 : nullptr;
  }
  return true;
}

}  // namespace

void install() {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) g_as_limit = rl.rlim_cur;
  // Under RLIMIT_AS, an eighth of it (the address space grows in steps that large:
  // a hash table's buckets doubling), within bounds.
  size_t reserve = g_as_limit ? std::clamp<size_t>(g_as_limit / 8, kReserveBytes / 2, 2 * kReserveBytes) : kReserveBytes;
  g_reserve = std::malloc(reserve);
  std::set_new_handler(on_no_memory);
}

namespace {

std::optional<std::string> check(uint64_t now_ns) {
  if (now_ns < g_next_check) return std::nullopt;
  g_next_check = now_ns + kCheckEveryNs;
  if (g_as_limit) {
    char statm[128];
    if (read_small("/proc/self/statm", statm, sizeof statm)) {
      double size = std::strtod(statm, nullptr) * static_cast<double>(::sysconf(_SC_PAGESIZE));
      if (size >= kAddressSpaceShare * static_cast<double>(g_as_limit)) {
        g_ran_out = true;
        double limit = static_cast<double>(g_as_limit);
        g_as_limit = 0;  // said once
        return fmt::format("its address space is {:.0f} MiB of its RLIMIT_AS of {:.0f} MiB", size / 1048576,
                           limit / 1048576);
      }
    }
  }
  if (!g_cgroup_looked) find_cgroup();
  double limit = 0, used = 0;
  if (g_cgroup_dir.empty() || !cgroup_usage(limit, used) || used < kCgroupShare * limit) return std::nullopt;
  g_ran_out = true;
  g_cgroup_dir.clear();  // said once
  return fmt::format("its memory cgroup uses {:.0f} MiB of its limit of {:.0f} MiB", used / 1048576, limit / 1048576);
}

}  // namespace

void poll(uint64_t now_ns) {
  if (g_pending) return;
  if (g_failed.exchange(false))
    g_pending = std::string("an allocation failed (a limit on its address space or memory, RLIMIT_AS, or none left)");
  else
    g_pending = check(now_ns);
}

bool pending() { return g_failed.load() || g_pending.has_value(); }

std::optional<std::string> take_exceeded(uint64_t now_ns) {
  poll(now_ns);
  return std::exchange(g_pending, std::nullopt);
}

bool ran_out() { return g_ran_out.load(); }

uint64_t room() {
  double left = 1e300;
  if (g_as_limit) {
    char statm[128];
    if (read_small("/proc/self/statm", statm, sizeof statm))
      left = kAddressSpaceShare * static_cast<double>(g_as_limit) -
             std::strtod(statm, nullptr) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  }
  if (!g_cgroup_looked) find_cgroup();
  double limit = 0, used = 0;
  if (!g_cgroup_dir.empty() && cgroup_usage(limit, used)) left = std::min(left, kCgroupShare * limit - used);
  if (left <= 0) return 0;
  return left >= 0x1p63 ? UINT64_MAX : static_cast<uint64_t>(left);
}

}  // namespace ft::memory_budget
