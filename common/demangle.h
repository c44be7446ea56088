// Demangling of symbol names, for the engine (the demangled name it offers plugins with
// every symbol, which -a patterns are matched against) and the post-processor.
//
// Traces record mangled (linkage) names, because they are exact and unique; reports show
// them demangled. Only Itanium C++ ABI names ("_Z...") are passed to
// abi::__cxa_demangle: it would also "demangle" plain C names that happen to look like
// type encodings ("i" -> "int"). A version or PLT suffix ("NAME@plt", "NAME@GLIBC_2.2.5",
// "NAME@@VER") is kept as it is and only NAME is demangled.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>

#include "functracer/short_name.h"

namespace ft {

// "_Z3fooi" -> "foo(int)"; "_Z3fooi@plt" -> "foo(int)@plt"; "main" -> "main".
// Names that do not demangle are returned unchanged.
std::string demangle(std::string_view name);

// strip_parameters(demangled), the name without its parameter list, comes from
// functracer/short_name.h, which the calltrace plugin shares.

// Memoizes demangle() and strip_parameters(): reports ask for the same few names
// over and over.
class Demangler {
 public:
  const std::string& full(const std::string& mangled);
  const std::string& short_name(const std::string& mangled);

 private:
  std::unordered_map<std::string, std::string> full_;
  std::unordered_map<std::string, std::string> short_;
};

}  // namespace ft
