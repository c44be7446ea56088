#include "core/plant_pass.h"

#include <algorithm>

#include "core/ptrace.h"

namespace ft {

void PlantPass::outline(RemoteAddr at, std::span<const uint8_t> bytes) {
  // The next piece of the same area: one write for both. (Pieces are never padded
  // here: the bytes between two pieces may have been written by others.)
  if (!outline_.empty() && outline_.back().at + static_cast<int64_t>(outline_.back().bytes.size()) == at) {
    outline_.back().bytes.insert(outline_.back().bytes.end(), bytes.begin(), bytes.end());
    return;
  }
  outline_.push_back({at, {bytes.begin(), bytes.end()}});
}

void PlantPass::move(pid_t tid, const Registers& regs, RemoteAddr window) {
  regs_[tid] = regs;
  moves_.push_back({tid, regs, window});
}

void PlantPass::code(RemoteAddr at, std::span<const uint8_t> bytes, Undo undo) {
  code_.push_back({at, {bytes.begin(), bytes.end()}, std::move(undo)});
}

const Registers* PlantPass::regs_of(pid_t tid) {
  if (auto it = regs_.find(tid); it != regs_.end()) return &it->second;
  auto r = ptrace::get_regs(tid);
  if (!r) return nullptr;
  return &regs_.emplace(tid, *r).first->second;
}

size_t PlantPass::flush(const RemoteMemory& mem) {
  std::string outline_error;
  for (const Piece& piece : outline_)
    if (auto s = mem.write(piece.at, piece.bytes); !s) {
      outline_error = "its out-of-line code cannot be written: " + s.error().message;
      break;
    }
  // A thread that cannot be moved keeps running the original code: its window keeps it.
  std::set<RemoteAddr> kept;
  for (const Move& mv : moves_)
    if (outline_error.empty() && !ptrace::set_regs(mv.tid, mv.regs)) kept.insert(mv.window);
  std::stable_sort(code_.begin(), code_.end(), [](const Site& a, const Site& b) { return a.at < b.at; });
  size_t failed = 0;
  for (Site& site : code_) {
    std::string why = outline_error;
    if (why.empty() && kept.count(site.at)) why = "a thread inside its first instructions cannot be moved";
    if (why.empty())
      if (auto s = mem.write(site.at, site.bytes); !s) why = "its code cannot be written: " + s.error().message;
    if (why.empty()) continue;
    ++failed;
    if (site.undo) site.undo(why);
  }
  outline_.clear();
  moves_.clear();
  code_.clear();
  regs_.clear();
  return failed;
}

}  // namespace ft
