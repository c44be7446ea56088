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

namespace ft {

// "_Z3fooi" -> "foo(int)"; "_Z3fooi@plt" -> "foo(int)@plt"; "main" -> "main".
// Names that do not demangle are returned unchanged.
std::string demangle(std::string_view name);

// The demangled name without its parameter list and the qualifiers after it, for
// showing a call with its argument values: "ns::Foo::bar(int) const" -> "ns::Foo::bar",
// "operator()(int)" -> "operator()", "foo(int) [clone .cold]" -> "foo [clone .cold]",
// "foo(int)@plt" -> "foo@plt". Names without a parameter list are returned unchanged.
std::string strip_parameters(std::string_view demangled);

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
