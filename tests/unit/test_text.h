// Small text helpers the unit tests share: lines and words of a command's output or a
// report, and substring checks.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace ft::test {

// The lines of `text` without their newlines; a last line without one counts too.
inline std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

inline std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> w;
  std::istringstream in(line);
  for (std::string t; in >> t;) w.push_back(t);
  return w;
}

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace ft::test
