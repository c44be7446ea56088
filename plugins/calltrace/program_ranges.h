// ProgramRanges: where each traced process has its executable mapped, so that
// --from-program can keep only the calls made from the executable's own code (the
// return address of the call lies in it) and leave out the calls libraries make to
// each other: ltrace's view, where `strlen` means the program's calls to strlen.
//
// Learned from the module events (ft_plugin.module, is_main_program); a main program
// of another path (after an exec) replaces a process's ranges, a forked child starts
// with its parent's (the same mappings; FT_EVENT_PROCESS_CREATED says whose child it is).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace calltrace {

class ProgramRanges {
 public:
  void mapped(int pid, const std::string& path, uint64_t base, uint64_t end);
  void unmapped(int pid, uint64_t base, uint64_t end);
  void forked(int parent, int child);
  bool in_program(int pid, uint64_t address) const;

 private:
  struct Program {
    std::string path;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [base, end)
  };
  std::unordered_map<int, Program> programs_;
};

}  // namespace calltrace
