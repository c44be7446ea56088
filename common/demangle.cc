#include "common/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace ft {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::string demangle(std::string_view name) {
  size_t at = name.find('@');
  std::string_view symbol = name.substr(0, at);
  std::string_view suffix = at == std::string_view::npos ? std::string_view() : name.substr(at);
  if (symbol.size() < 3 || symbol.substr(0, 2) != "_Z") return std::string(name);

  std::string mangled(symbol);  // __cxa_demangle needs a terminated string
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || !out) return std::string(name);
  std::string result(out.get());
  result.append(suffix);
  return result;
}

std::string strip_parameters(std::string_view demangled) {
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

const std::string& Demangler::full(const std::string& mangled) {
  auto it = full_.find(mangled);
  if (it == full_.end()) it = full_.emplace(mangled, demangle(mangled)).first;
  return it->second;
}

const std::string& Demangler::short_name(const std::string& mangled) {
  auto it = short_.find(mangled);
  if (it == short_.end()) it = short_.emplace(mangled, strip_parameters(full(mangled))).first;
  return it->second;
}

}  // namespace ft
