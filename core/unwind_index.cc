#include "core/unwind_index.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/elf_image.h"
#include "core/frame_rules.h"

namespace ft {
namespace {

bool fits8(int64_t off) { return off % 8 == 0 && off / 8 >= -128 && off / 8 <= 127; }

ft_rec_unwind_row pack(uint64_t pc, const std::optional<FrameRule>& rule) {
  ft_rec_unwind_row row{};
  row.pc = pc;
  row.flags = FT_REC_NO_RULE;
  if (!rule) return row;
  const FrameRule& r = *rule;
  if (r.cfa_off < std::numeric_limits<int32_t>::min() || r.cfa_off > std::numeric_limits<int32_t>::max()) return row;
  uint8_t flags = r.cfa_base == FrameRule::Base::Bp ? FT_REC_CFA_BP : 0;
  if (r.ra == FrameRule::Saved::Undefined) {
    flags |= FT_REC_OUTERMOST;
  } else if (r.ra == FrameRule::Saved::AtCfa && fits8(r.ra_off)) {
    row.ra_off8 = static_cast<int8_t>(r.ra_off / 8);
  } else {
    return row;
  }
  switch (r.bp) {
    case FrameRule::Saved::Same:
      break;
    case FrameRule::Saved::Undefined:
      flags |= FT_REC_BP_LOST;
      break;
    case FrameRule::Saved::AtCfa:
      if (!fits8(r.bp_off)) return row;
      flags |= FT_REC_BP_SAVED;
      row.bp_off8 = static_cast<int8_t>(r.bp_off / 8);
      break;
    case FrameRule::Saved::IsCfa:
      return row;
  }
  row.cfa_off = static_cast<int32_t>(r.cfa_off);
  row.flags = flags;
  return row;
}

bool same_rule(const ft_rec_unwind_row& a, const ft_rec_unwind_row& b) {
  return a.cfa_off == b.cfa_off && a.ra_off8 == b.ra_off8 && a.bp_off8 == b.bp_off8 && a.flags == b.flags;
}

}  // namespace

std::vector<ft_rec_unwind_row> UnwindIndexBuilder::link_rows(const ElfImage& elf) {
  std::vector<ft_rec_unwind_row> rows;
  auto cfi = ModuleCfi::open(elf);
  if (!cfi) return rows;
  std::vector<uint64_t> starts = fde_starts(elf);
  auto emit = [&](uint64_t link_pc, const std::optional<FrameRule>& rule) {
    ft_rec_unwind_row row = pack(link_pc, rule);
    if (!rows.empty() && same_rule(rows.back(), row)) return;
    rows.push_back(row);
  };
  for (size_t i = 0; i < starts.size(); ++i) {
    uint64_t pc = starts[i];
    uint64_t next = i + 1 < starts.size() ? starts[i + 1] : std::numeric_limits<uint64_t>::max();
    if (!rows.empty() && rows.back().pc > pc) continue;  // FDEs that overlap: keep the first
    while (pc < next) {
      uint64_t row_start = 0, row_end = 0;
      auto rule = cfi->rule_at(pc, &row_start, &row_end);
      if (row_end <= pc) break;
      emit(pc, rule);
      pc = row_end;
    }
    if (pc < next) emit(pc, std::nullopt);  // no rule up to the next function
  }
  return rows;
}

void UnwindIndexBuilder::add_rows(const std::vector<ft_rec_unwind_row>& link, uint64_t bias, uint64_t start,
                                  uint64_t end) {
  Module mod{};
  mod.m.start = start;
  mod.m.end = end;
  mod.rows = link;
  for (auto& row : mod.rows) row.pc += bias;
  ++stats_.modules;
  stats_.rows += mod.rows.size();
  stats_.unfollowed += static_cast<uint64_t>(
      std::count_if(mod.rows.begin(), mod.rows.end(), [](const auto& r) { return r.flags & FT_REC_NO_RULE; }));
  modules_.push_back(std::move(mod));
}

const std::vector<ft_rec_unwind_row>& UnwindRowCache::rows(const std::shared_ptr<const ElfImage>& image) {
  auto it = entries_.find(image.get());
  if (it != entries_.end() && it->second.image.lock() == image) return it->second.rows;
  std::erase_if(entries_, [](const auto& e) { return e.second.image.expired(); });
  Entry& e = entries_[image.get()];
  e.image = image;
  e.rows = UnwindIndexBuilder::link_rows(*image);
  return e.rows;
}

std::vector<uint8_t> UnwindIndexBuilder::build() const {
  std::vector<const Module*> sorted;
  for (const auto& m : modules_) sorted.push_back(&m);
  std::sort(sorted.begin(), sorted.end(), [](const Module* a, const Module* b) { return a->m.start < b->m.start; });
  uint64_t nrows = 0;
  for (const Module* m : sorted) nrows += m->rows.size();
  std::vector<uint8_t> out(sizeof(ft_rec_unwind_index) + sorted.size() * sizeof(ft_rec_unwind_module) +
                           nrows * sizeof(ft_rec_unwind_row));
  ft_rec_unwind_index head{sorted.size(), nrows};
  std::memcpy(out.data(), &head, sizeof head);
  uint8_t* mods = out.data() + sizeof head;
  uint8_t* rows = mods + sorted.size() * sizeof(ft_rec_unwind_module);
  uint64_t first = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    ft_rec_unwind_module m = sorted[i]->m;
    m.first_row = first;
    m.nrows = sorted[i]->rows.size();
    std::memcpy(mods + i * sizeof m, &m, sizeof m);
    std::memcpy(rows + first * sizeof(ft_rec_unwind_row), sorted[i]->rows.data(),
                sorted[i]->rows.size() * sizeof(ft_rec_unwind_row));
    first += m.nrows;
  }
  return out;
}

}  // namespace ft
