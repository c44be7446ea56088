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
#include <utility>
#include <vector>

namespace calltrace {

class AliasNames {
 public:
  // A symbol the patterns selected, at run-time address `address` of `module`.
  void offer(const std::string& module, uint64_t address, const std::string& name);
  // A function the executable calls through its PLT ("fopen64" for "fopen64@plt").
  void imported(const std::string& name) { imported_.insert(name); }
  // The name to show for the function at that entry; nullptr if none was offered.
  const std::string* name(const std::string& module, uint64_t address) const;
  // a is a better name than b, imports aside.
  static bool better(const std::string& a, const std::string& b);

 private:
  std::map<std::pair<std::string, uint64_t>, std::vector<std::string>> names_;
  std::set<std::string, std::less<>> imported_;
};

}  // namespace calltrace
