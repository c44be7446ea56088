#include "common/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace ft {

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
