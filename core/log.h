// Diagnostics of functracer itself: warnings (always, unless -q; gaps in the data even
// with -q), debug traces (-d).
// Everything goes to stderr with a "functracer: " prefix so it can be told apart from
// the traced program's own output.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace ft::log {

extern bool debug_enabled;
extern bool quiet;

void write_line(std::string_view prefix, std::string_view text);

template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  if (!quiet) write_line("functracer: ", fmt::format(f, std::forward<Args>(args)...));
}
// A gap in the data (a function the trace misses): printed even with -q, since the
// numbers the user reads from the trace depend on it.
template <typename... Args>
void gap(fmt::format_string<Args...> f, Args&&... args) {
  write_line("functracer: ", fmt::format(f, std::forward<Args>(args)...));
}
// Errors are printed even with -q.
template <typename... Args>
void error(fmt::format_string<Args...> f, Args&&... args) {
  write_line("functracer: ", fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  if (!quiet) write_line("functracer: ", fmt::format(f, std::forward<Args>(args)...));
}

#define FT_DEBUG(...)                                                            \
  do {                                                                           \
    if (::ft::log::debug_enabled)                                                \
      ::ft::log::write_line("functracer[debug]: ", ::fmt::format(__VA_ARGS__)); \
  } while (0)

}  // namespace ft::log
