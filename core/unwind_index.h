// UnwindIndex: the frame rules of a process's modules in the compact form the
// in-process recorder walks stacks with (ft_rec_unwind_index, core/recorder_abi.h):
// every address .eh_frame describes, as runs of addresses sharing one rule, each rule
// reduced as FrameRule reduces it (frame_rules.h) and packed into 16 bytes. Where a
// rule cannot be packed (a DWARF expression, offsets that are not whole words, a
// signal frame) the row says so and a walk stops there; the stop path then takes the
// backtrace with libunwind.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/recorder_abi.h"

namespace ft {

class ElfImage;

class UnwindIndexBuilder {
 public:
  // The rows of an image at its link-time addresses (the costly part: every FDE's
  // rules evaluated), to be placed with add_rows.
  static std::vector<ft_rec_unwind_row> link_rows(const ElfImage& elf);
  // The code of elf as loaded with `bias`, its executable mapping at [start, end).
  void add_module(const ElfImage& elf, uint64_t bias, uint64_t start, uint64_t end) {
    add_rows(link_rows(elf), bias, start, end);
  }
  // The same from rows link_rows made.
  void add_rows(const std::vector<ft_rec_unwind_row>& link, uint64_t bias, uint64_t start, uint64_t end);
  // The index, ready to be copied into the process.
  std::vector<uint8_t> build() const;

  struct Stats {
    uint64_t modules = 0, rows = 0, unfollowed = 0;  // unfollowed: rows with FT_REC_NO_RULE
  };
  const Stats& stats() const { return stats_; }

 private:
  struct Module {
    ft_rec_unwind_module m;
    std::vector<ft_rec_unwind_row> rows;
  };
  std::vector<Module> modules_;
  Stats stats_;
};

// link_rows of each image, kept while the image lives: made once per file, ahead of
// an attach where it can be (FastPath::decode_ahead), not at every module change.
class UnwindRowCache {
 public:
  const std::vector<ft_rec_unwind_row>& rows(const std::shared_ptr<const ElfImage>& image);

 private:
  struct Entry {
    std::weak_ptr<const ElfImage> image;
    std::vector<ft_rec_unwind_row> rows;
  };
  std::unordered_map<const ElfImage*, Entry> entries_;
};

}  // namespace ft
