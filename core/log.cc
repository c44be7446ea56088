#include "core/log.h"

#include <unistd.h>

#include <string>

namespace ft::log {

bool debug_enabled = false;
bool quiet = false;

void write_line(std::string_view prefix, std::string_view text) {
  std::string line;
  line.reserve(prefix.size() + text.size() + 1);
  line.append(prefix).append(text).push_back('\n');
  // One write per line so lines from functracer and the program do not interleave
  // mid-line on a shared terminal.
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace ft::log
