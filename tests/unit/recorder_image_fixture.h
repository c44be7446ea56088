// The recorder image (core/recorder_image.h) in executable memory, as functracer
// places it in a process: the tests call its functions through their offsets, next to
// the same functions compiled natively.
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/recorder_abi.h"
#include "core/recorder_image.h"

namespace ft {

class LoadedRecorderImage {
 public:
  LoadedRecorderImage() {
    size_ = (sizeof recorder_image::kCode + 4095) & ~size_t{4095};
    void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(p, MAP_FAILED);
    std::memcpy(p, recorder_image::kCode, sizeof recorder_image::kCode);
    EXPECT_EQ(::mprotect(p, size_, PROT_READ | PROT_EXEC), 0);
    base_ = static_cast<uint8_t*>(p);
  }
  ~LoadedRecorderImage() { ::munmap(base_, size_); }
  LoadedRecorderImage(const LoadedRecorderImage&) = delete;
  LoadedRecorderImage& operator=(const LoadedRecorderImage&) = delete;

  // The image's function at `offset` (one of recorder_image's k*Offset), as Fn.
  template <typename Fn>
  Fn at(size_t offset) const {
    return reinterpret_cast<Fn>(base_ + offset);
  }

 private:
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
};

// The own part of a region (recorder_abi.h: the hooked frames, the owner word), in
// this test's memory as in a process's; owned unless told otherwise.
class OwnPart {
 public:
  OwnPart() {
    void* p = ::mmap(nullptr, FT_REC_OWN_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(p, MAP_FAILED);
    own_ = static_cast<ft_rec_own*>(p);
    own_->owner = 1;
  }
  ~OwnPart() { ::munmap(own_, FT_REC_OWN_BYTES); }
  OwnPart(const OwnPart&) = delete;
  OwnPart& operator=(const OwnPart&) = delete;
  uint64_t addr() const { return reinterpret_cast<uint64_t>(own_); }
  ft_rec_own* get() const { return own_; }
  ft_rec_stack& stack(uint64_t ring) const { return own_->stacks[ring]; }

 private:
  ft_rec_own* own_ = nullptr;
};

}  // namespace ft
