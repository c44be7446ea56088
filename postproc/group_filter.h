// Which groups (backtraces) a heap or descriptor report shows, decided on the resolved
// frames: --function and --suppressions.
//
// --function GLOB keeps the groups with a frame, or the traced entry point itself,
// whose function name matches GLOB (fnmatch(3), whole name; demangled and mangled
// names are both tried): `--function 'parse_*'`, `--function 'Cache::*'`. Several
// --function options keep a group that matches any of them.
//
// A suppressions file uses the format of LeakSanitizer's, so existing files work:
// one `leak:PATTERN` per line, `#` comments and blank lines ignored. PATTERN is
// matched against each frame's function name, source file and module path, and the
// entry point's name; it matches when it occurs anywhere in the name (`*` stands for
// any characters; a leading `^` or trailing `$` anchors it to the start or end). A
// group with any matching frame is suppressed: left out of the report and counted
// apart, so the totals still say how much was suppressed. Any other line is an error
// naming the file and line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "postproc/report_frame.h"

namespace ft::post {

// LeakSanitizer-style substring match with `*`, `^` and `$`.
bool suppression_matches(std::string_view pattern, std::string_view text);

class GroupFilter {
 public:
  void add_function(std::string glob) { functions_.push_back(std::move(glob)); }
  // Reads a suppressions file; the error names the file (and line).
  Status add_suppressions(const std::string& path);
  void add_suppression(std::string pattern) { suppressions_.push_back(std::move(pattern)); }

  bool empty() const { return functions_.empty() && suppressions_.empty(); }
  // Whether --function keeps the group (always, without --function).
  bool selects(const GroupHead& head, const std::vector<ReportFrame>& frames) const;
  bool suppresses(const GroupHead& head, const std::vector<ReportFrame>& frames) const;

 private:
  std::vector<std::string> functions_;
  std::vector<std::string> suppressions_;
};

}  // namespace ft::post
