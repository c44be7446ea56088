// CallSummary: the table -c prints at exit instead of the call log, as ltrace -c and
// strace -c do: per function, the share of the time, the seconds, microseconds per
// call, calls and errors, the most expensive first, and a total line.
//
// Time is inclusive (entry to return, callees included), as ltrace -c measures it.
// A call counts when it is made; its time when it returns (a frame left by longjmp or
// an exception adds the time until then). An error is a return of a negative value
// from a function whose return type is known to be a signed integer (-1 and -errno
// conventions); functions without a known return type never count errors.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

namespace calltrace {

class CallSummary {
 public:
  void add_call(const std::string& name);
  void add_time(const std::string& name, uint64_t ns, bool error);

  // The table, one line per function with at least one call.
  std::string table() const;

 private:
  struct Entry {
    uint64_t calls = 0;
    uint64_t ns = 0;
    uint64_t errors = 0;
  };
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace calltrace
