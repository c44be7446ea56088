#include "postproc/group_filter.h"

#include <fnmatch.h>

#include <fstream>

namespace ft::post {

namespace {

bool glob_matches(const std::string& glob, const std::string& name) {
  return fnmatch(glob.c_str(), name.c_str(), 0) == 0;
}

// Whether `pattern` (with `*`, no anchors) matches `text` starting exactly at `pos`
// and, when `to_end`, ending at its end.
bool match_here(std::string_view pattern, std::string_view text, bool to_end) {
  if (pattern.empty()) return !to_end || text.empty();
  if (pattern[0] == '*') {
    for (size_t skip = 0; skip <= text.size(); ++skip) {
      if (match_here(pattern.substr(1), text.substr(skip), to_end)) return true;
    }
    return false;
  }
  if (text.empty() || text[0] != pattern[0]) return false;
  return match_here(pattern.substr(1), text.substr(1), to_end);
}

}  // namespace

bool suppression_matches(std::string_view pattern, std::string_view text) {
  bool anchored_start = !pattern.empty() && pattern.front() == '^';
  if (anchored_start) pattern.remove_prefix(1);
  bool anchored_end = !pattern.empty() && pattern.back() == '$';
  if (anchored_end) pattern.remove_suffix(1);
  if (anchored_start) return match_here(pattern, text, anchored_end);
  for (size_t start = 0; start <= text.size(); ++start) {
    if (match_here(pattern, text.substr(start), anchored_end)) return true;
  }
  return false;
}

Status GroupFilter::add_suppressions(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error::from_errno(errno, path);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    size_t start = line.find_first_not_of(" \t\r");
    if (start == std::string::npos || line[start] == '#') continue;
    size_t end = line.find_last_not_of(" \t\r");
    std::string_view entry = std::string_view(line).substr(start, end - start + 1);
    constexpr std::string_view kLeak = "leak:";
    if (!entry.starts_with(kLeak) || entry.size() == kLeak.size()) {
      return Error::msg(path + ":" + std::to_string(number) +
                        ": not a suppression (expected leak:PATTERN): " + std::string(entry));
    }
    suppressions_.emplace_back(entry.substr(kLeak.size()));
  }
  if (in.bad()) return Error::from_errno(errno, path);
  return {};
}

bool GroupFilter::selects(const GroupHead& head, const std::vector<ReportFrame>& frames) const {
  if (functions_.empty()) return true;
  for (const std::string& glob : functions_) {
    if (glob_matches(glob, head.function) || glob_matches(glob, head.mangled)) return true;
    for (const ReportFrame& f : frames) {
      if (f.function && glob_matches(glob, *f.function)) return true;
    }
  }
  return false;
}

bool GroupFilter::suppresses(const GroupHead& head, const std::vector<ReportFrame>& frames) const {
  for (const std::string& pattern : suppressions_) {
    if (suppression_matches(pattern, head.function) || suppression_matches(pattern, head.mangled))
      return true;
    for (const ReportFrame& f : frames) {
      if ((f.function && suppression_matches(pattern, *f.function)) ||
          (f.file && suppression_matches(pattern, *f.file)) ||
          (f.module && suppression_matches(pattern, *f.module))) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace ft::post
