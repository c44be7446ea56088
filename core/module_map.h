// ModuleMap: the ELF modules mapped into a process, read from /proc/PID/maps
// (proc(5)). A module is every mapping of one file; its base is the start of the
// mapping with file offset 0 and its end the end of its last mapping. The map is
// re-read when the dynamic linker says its list is consistent again (a breakpoint on
// r_debug.r_brk, i.e. _dl_debug_state) and compared with the previous one: modules
// that appeared are announced, modules that went away lose their breakpoints without
// any write to their (now unmapped) memory.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace ft {

struct MappedModule {
  std::string path;     // without the " (deleted)" the kernel appends to removed files
  uint64_t base = 0;    // start of the offset-0 mapping
  uint64_t base_end = 0;  // end of the offset-0 mapping
  uint64_t end = 0;     // end of the highest mapping of the file
  bool deleted = false; // removed or replaced on disk since it was mapped
  uint64_t offset = 0;  // file offset of the mapping at base (0)
  dev_t dev = 0;
  ino_t inode = 0;
  bool operator==(const MappedModule&) const = default;
};

struct MapsEntry {
  uint64_t start = 0, end = 0, offset = 0;
  bool r = false, w = false, x = false;
  unsigned long dev_major = 0, dev_minor = 0, inode = 0;
  std::string path;
};

// Parses the text of /proc/PID/maps.
std::vector<MapsEntry> parse_maps(const std::string& text);
Result<std::vector<MapsEntry>> read_maps(pid_t pid);
// File-backed ELF modules (paths starting with '/'), in address order. A file removed
// or replaced since it was mapped is marked deleted (its path would now name another
// file or none); read it through /proc (source_of).
std::vector<MappedModule> modules_from_maps(const std::vector<MapsEntry>& maps);

// A free range of `size` bytes within +-2 GiB of [near_start, near_end), preferring
// addresses just below near_start; 0 if there is none.
uint64_t find_free_range(const std::vector<MapsEntry>& maps, uint64_t near_start, uint64_t near_end,
                         uint64_t size);

}  // namespace ft
