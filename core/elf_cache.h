// ElfCache: one ElfImage per file for as long as something holds it. Every process
// that maps libc (forks, exec'd children, attached services) shares one reading of its
// symbols, and an attach reads the files of its target before it stops the target's
// threads (Tracer::read_modules_ahead), so that the pause the attach costs the
// program (--stats) is not spent reading a 100 MB executable.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "common/result.h"
#include "core/elf_image.h"

namespace ft {

class ElfCache {
 public:
  // The image of the file at path, read unless an image of the same file (device,
  // inode, size and modification time) is still held. Files read through /proc (one
  // removed since it was mapped: /proc/PID/exe, /proc/PID/map_files/...) are read
  // each time, their path being good only while that process lives. Errors are not
  // kept: a file that is not ELF is tried again at the next call.
  Result<std::shared_ptr<const ElfImage>> open(const std::string& path);

  // Images still held by someone (for tests).
  size_t live() const;

 private:
  using Key = std::tuple<dev_t, ino_t, off_t, int64_t>;
  std::map<Key, std::weak_ptr<const ElfImage>> images_;
};

}  // namespace ft
