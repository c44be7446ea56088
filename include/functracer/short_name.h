/*
 * functracer short names — a demangled C++ function name without its parameter list,
 * the form users type and reports show a call with its argument values by:
 * "ns::Foo::bar(int) const" -> "ns::Foo::bar".
 *
 * Why here: the calltrace plugin matches -a patterns against it and prints calls with
 * it, and the post-processor shows calls with it; plugins see only include/functracer/,
 * so the one definition lives in this header-only file (C++20, standard library only).
 */
#ifndef FUNCTRACER_SHORT_NAME_H
#define FUNCTRACER_SHORT_NAME_H

#include <cstddef>
#include <string>
#include <string_view>

namespace ft {

// The demangled name without its parameter list and the qualifiers after it:
// "ns::Foo::bar(int) const" -> "ns::Foo::bar", "operator()(int)" -> "operator()",
// "foo(int) [clone .cold]" -> "foo [clone .cold]", "foo(int)@plt" -> "foo@plt",
// "ns::Foo<int>::bar(int)" -> "ns::Foo<int>::bar". Names without a parameter list
// are returned unchanged.
inline std::string strip_parameters(std::string_view demangled) {
  auto ends_with = [](std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
  };
  std::string_view name = demangled;
  size_t at = name.find('@');
  std::string_view version = at == std::string_view::npos ? std::string_view() : name.substr(at);
  name = name.substr(0, at);

  // " [clone .cold]" and friends, possibly several, kept in their order.
  size_t clones_start = name.size();
  while (ends_with(name.substr(0, clones_start), "]")) {
    size_t open = name.substr(0, clones_start).rfind(" [clone ");
    if (open == std::string_view::npos) break;
    clones_start = open;
  }
  std::string_view clones = name.substr(clones_start);
  name = name.substr(0, clones_start);

  static constexpr std::string_view kQualifiers[] = {" const", " volatile", " &&", " &",
                                                     " noexcept", " transaction_safe"};
  for (bool again = true; again;) {
    again = false;
    for (std::string_view q : kQualifiers) {
      if (ends_with(name, q)) {
        name.remove_suffix(q.size());
        again = true;
      }
    }
  }

  if (!ends_with(name, ")")) return std::string(demangled);
  int depth = 0;
  size_t i = name.size();
  while (i > 0) {
    --i;
    if (name[i] == ')') {
      ++depth;
    } else if (name[i] == '(') {
      if (--depth == 0) break;
    }
  }
  if (depth != 0 || i == 0) return std::string(demangled);

  std::string result(name.substr(0, i));
  result.append(clones);
  result.append(version);
  return result;
}

}  // namespace ft

#endif /* FUNCTRACER_SHORT_NAME_H */
