// AliasNames: one name per traced function when its entry has several symbols (glibc's
// free, cfree and __libc_free; fopen, fopen64 and _IO_fopen). functracer reports a
// function under whichever of its symbols it met first, which depends on the symbol
// table's order; the call log, the -c table and the trace use the name a user would
// type instead, as ltrace shows it: of the symbols the patterns selected, the one with
// the fewest leading underscores, then the shortest, then the first in byte order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace calltrace {

class AliasNames {
 public:
  // A symbol the patterns selected, at run-time address `address` of `module`.
  void offer(const std::string& module, uint64_t address, const std::string& name);
  // The name to show for the function at that entry; nullptr if none was offered.
  const std::string* name(const std::string& module, uint64_t address) const;
  // a is a better name than b.
  static bool better(const std::string& a, const std::string& b);

 private:
  std::map<std::pair<std::string, uint64_t>, std::string> names_;
};

}  // namespace calltrace
