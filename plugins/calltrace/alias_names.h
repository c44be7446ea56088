// AliasNames: one name per traced function when its entry has several symbols (glibc's
// free, cfree and __libc_free; fopen, fopen64 and _IO_fopen). functracer reports a
// function under whichever of its symbols it met first, which depends on the symbol
// table's order; the call log, the -c table and the trace use the name the program
// calls it by instead, as ltrace does: of the symbols the patterns selected, one the
// executable imports (has a PLT stub for), else the one with the fewest leading
// underscores, then the shortest, then the first in byte order. A program that imports
// two aliases of one function (fopen and fopen64) has its calls of both counted under
// one of them: at the function's entry nothing tells which name the caller used.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace calltrace {

class AliasNames {
 public:
  // A symbol the patterns selected, at run-time address `address` of `module`.
  void offer(const std::string& module, uint64_t address, const std::string& name);
  // A function the executable calls through its PLT ("fopen64" for "fopen64@plt").
  void imported(const std::string& name) {
    if (imported_.insert(name).second) ++generation_;
  }
  // The name to show for the function at that entry; nullptr if none was offered.
  // Called at every event: allocates nothing, and chooses once per entry until the
  // names change.
  const std::string* name(std::string_view module, uint64_t address) const;
  // a is a better name than b, imports aside.
  static bool better(const std::string& a, const std::string& b);

 private:
  struct Entry {
    std::vector<std::string> names;
    mutable const std::string* best = nullptr;
    mutable uint64_t chosen_at = 0;  // the generation best was chosen in (0: never)
  };
  const std::string* choose(const Entry& e) const;
  std::map<std::string, std::map<uint64_t, Entry>, std::less<>> names_;  // by module, then address
  std::set<std::string, std::less<>> imported_;
  uint64_t generation_ = 1;  // changes with every offer or import
};

}  // namespace calltrace
