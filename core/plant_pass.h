// PlantPass: the writes of one planting pass (the modules of a process read at attach,
// launch or exec; a module loaded later; IFUNCs resolved), made in one pass per process
// at its end instead of one function at a time.
//
// While a pass is open (p.space.pass), planting decides everything first: it reads and
// decodes the code, builds the out-of-line slots and trampolines, notes the traps in the
// guard's tables (survival.h), and queues the writes. flush() then writes, in this order:
//  1. the out-of-line code (slots, trampolines): no thread can reach it yet; contiguous
//     pieces of an area go in one write;
//  2. the threads stopped inside a window an entry patch replaces, moved to the same
//     instruction in its relocated copy;
//  3. the traps and jumps in the program's code, in address order, one write each
//     (text is read-only: only /proc/PID/mem writes it).
// A write of step 3 that fails undoes what was planned for it (its undo), and says why;
// if step 1 fails, nothing of step 3 is written.
//
// The other threads' registers are read once per pass (entry patches check each one
// against their window), not once per function.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "arch/registers.h"
#include "common/remote_addr.h"
#include "core/remote_memory.h"

namespace ft {

class PlantPass {
 public:
  using Undo = std::function<void(const std::string& why)>;

  // Out-of-line code (step 1).
  void outline(RemoteAddr at, std::span<const uint8_t> bytes);
  // A thread moved (step 2) out of the window of the patch at `window`: its registers
  // as they must be when it runs again. If it cannot be moved, that patch is not
  // written (undone).
  void move(pid_t tid, const Registers& regs, RemoteAddr window);
  // Bytes in the program's code (step 3); undo runs if they cannot be written.
  void code(RemoteAddr at, std::span<const uint8_t> bytes, Undo undo);
  // A stopped thread's registers, read once per pass (and as moved since).
  const Registers* regs_of(pid_t tid);

  // Writes everything queued (above) and empties the pass. Returns how many writes of
  // the program's code failed (each undone).
  size_t flush(const RemoteMemory& mem);

  bool empty() const { return outline_.empty() && moves_.empty() && code_.empty(); }

 private:
  struct Piece {
    RemoteAddr at;
    std::vector<uint8_t> bytes;
  };
  struct Site {
    RemoteAddr at;
    std::vector<uint8_t> bytes;
    Undo undo;
  };
  std::vector<Piece> outline_;
  struct Move {
    pid_t tid;
    Registers regs;
    RemoteAddr window;
  };
  std::vector<Move> moves_;
  std::vector<Site> code_;
  std::unordered_map<pid_t, Registers> regs_;
};

// Opens a pass on `slot` unless one is open there; the scope that opened it writes it
// when it ends. Planting opens one around each function too, so that alone it writes
// at once.
class PassScope {
 public:
  PassScope(PlantPass*& slot, const RemoteMemory& mem) : slot_(slot), mem_(mem) {
    if (slot_ == nullptr) {
      slot_ = &pass_;
      owner_ = true;
    }
  }
  ~PassScope() {
    if (!owner_) return;
    pass_.flush(mem_);
    slot_ = nullptr;
  }
  PassScope(const PassScope&) = delete;
  PassScope& operator=(const PassScope&) = delete;

 private:
  PlantPass*& slot_;
  const RemoteMemory& mem_;
  PlantPass pass_;
  bool owner_ = false;
};

}  // namespace ft
