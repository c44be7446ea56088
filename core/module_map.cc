#include "core/module_map.h"

#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>

namespace ft {

std::vector<MapsEntry> parse_maps(const std::string& text) {
  std::vector<MapsEntry> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    MapsEntry e;
    char perms[8] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx %7s %lx %lx:%lx %lu %n", &e.start, &e.end, perms, &e.offset,
                    &e.dev_major, &e.dev_minor, &e.inode, &path_at) < 7)
      continue;
    e.r = perms[0] == 'r';
    e.w = perms[1] == 'w';
    e.x = perms[2] == 'x';
    if (path_at > 0 && static_cast<size_t>(path_at) <= line.size()) e.path = line.substr(path_at);
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::vector<MapsEntry>> read_maps(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/maps";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error::from_errno(errno, "cannot read " + path);
  std::string text;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return parse_maps(text);
}

std::vector<MappedModule> modules_from_maps(const std::vector<MapsEntry>& maps) {
  std::map<std::string, MappedModule> by_path;
  std::vector<std::string> order;
  for (const auto& e : maps) {
    if (e.path.empty() || e.path[0] != '/') continue;
    auto [it, inserted] = by_path.try_emplace(e.path);
    MappedModule& m = it->second;
    if (inserted) {
      static constexpr std::string_view kDeleted = " (deleted)";
      m.path = e.path;
      if (m.path.ends_with(kDeleted)) {
        m.path.resize(m.path.size() - kDeleted.size());
        m.deleted = true;
      }
      m.base = e.start;
      m.base_end = e.end;
      m.offset = e.offset;
      m.end = e.end;
      m.dev = makedev(e.dev_major, e.dev_minor);
      m.inode = e.inode;
      order.push_back(e.path);
    }
    if (e.offset == 0 && (m.offset != 0 || e.start < m.base)) {
      m.base = e.start;
      m.base_end = e.end;
      m.offset = 0;
    }
    m.end = std::max(m.end, e.end);
  }
  std::vector<MappedModule> out;
  for (const auto& p : order)
    if (by_path[p].offset == 0) out.push_back(by_path[p]);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.base < b.base; });
  return out;
}

uint64_t find_free_range(const std::vector<MapsEntry>& maps, uint64_t near_start, uint64_t near_end,
                         uint64_t size) {
  constexpr uint64_t kReach = (1ull << 31) - (1ull << 24);  // stay well inside +-2 GiB
  constexpr uint64_t kMinAddr = 1ull << 20;                  // above mmap_min_addr
  constexpr uint64_t kGuard = 1ull << 20;                    // leave room next to neighbours
  std::vector<std::pair<uint64_t, uint64_t>> used;
  for (const auto& e : maps) used.emplace_back(e.start, e.end);
  std::sort(used.begin(), used.end());
  auto is_free = [&](uint64_t a) {
    for (const auto& [s, e] : used)
      if (a < e + kGuard && s < a + size + kGuard) return false;
    return true;
  };
  auto in_reach = [&](uint64_t a) {
    return a + size <= near_start + kReach && (near_end <= a + kReach) && a >= kMinAddr;
  };
  // Candidates: just below every used range and just above every used range, near first.
  std::vector<uint64_t> candidates;
  for (const auto& [s, e] : used) {
    if (s > size + kGuard) candidates.push_back((s - size - kGuard) & ~0xfffull);
    candidates.push_back((e + kGuard + 0xfff) & ~0xfffull);
  }
  if (near_start > size + kGuard) candidates.push_back((near_start - size - kGuard) & ~0xfffull);
  std::sort(candidates.begin(), candidates.end(), [&](uint64_t a, uint64_t b) {
    auto dist = [&](uint64_t x) { return x < near_start ? near_start - x : x - near_start; };
    // Prefer below the module (the heap usually grows right above the executable).
    bool a_below = a < near_start, b_below = b < near_start;
    if (a_below != b_below) return a_below;
    return dist(a) < dist(b);
  });
  for (uint64_t c : candidates)
    if (in_reach(c) && is_free(c)) return c;
  return 0;
}

}  // namespace ft
