#include "core/elf_cache.h"

#include <sys/stat.h>

#include <cerrno>
#include <utility>

namespace ft {

Result<std::shared_ptr<const ElfImage>> ElfCache::open(const std::string& path) {
  if (path.starts_with("/proc/")) {
    auto image = ElfImage::open(path);
    if (!image) return image.error();
    return std::shared_ptr<const ElfImage>(std::move(*image));
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Error::from_errno(errno, path);
  const Key key{st.st_dev, st.st_ino, st.st_size,
                static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
  if (auto it = images_.find(key); it != images_.end()) {
    if (auto held = it->second.lock()) return held;
    images_.erase(it);
  }
  auto image = ElfImage::open(path);
  if (!image) return image.error();
  std::shared_ptr<const ElfImage> shared(std::move(*image));
  // Entries of images nobody holds any more go as new ones come.
  std::erase_if(images_, [](const auto& e) { return e.second.expired(); });
  images_[key] = shared;
  return shared;
}

size_t ElfCache::live() const {
  size_t n = 0;
  for (const auto& [key, image] : images_) n += image.expired() ? 0 : 1;
  return n;
}

}  // namespace ft
