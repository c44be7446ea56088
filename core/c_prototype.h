// CPrototype: function declarations in C syntax — the `-F FILE` prototype files and
// the built-in table of libc functions (builtin_prototypes.h) — and the C/C++ type
// names in them or in a demangled C++ name's parameter list, turned into the
// Signature DWARF would give (core/dwarf_params.h), so calltrace can show arguments
// of functions whose module has no debug information.
//
// The language is a small, strict subset of C, one declaration per line:
//
//     int add3(int a, int b, int c);
//     size_t mystrlen(const char *s);
//     double scale(double x, int n);
//     int open(const char *path, O_flags flags, ...);
//
// Types: void, char/short/int/long/long long (signed, unsigned), _Bool/bool, float,
// double (long double: by memory, shown as "other"), the usual typedefs (size_t,
// ssize_t, off_t, pid_t, uid_t, mode_t, time_t, socklen_t, intN_t/uintN_t, ...),
// `struct X`/`union X`/`enum X` (an enum is an int), pointers (`char *` and
// `const char *` are strings, other pointers addresses; `T[]` is a pointer), function
// pointers as parameters, qualifiers (const, volatile, restrict). A few integer types
// name the symbolic constants they hold (symbolic_values.h: O_flags, LC_category, ...);
// they are ints shown as the names (`O_RDONLY|O_CLOEXEC`). Parameter names are
// optional; `...` ends a variadic list (only the fixed parameters are shown); `(void)`
// is no parameter. Blank lines and lines starting with `#` or `//` are skipped;
// `/* */` and `//` comments may end a line. Anything else is an error naming the line
// and what was not understood: a prototype file is code, and a silently skipped line
// would show wrong values.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "core/dwarf_params.h"

namespace ft {

struct CPrototype {
  std::string name;
  Signature sig;  // param names and formats as declared
  bool variadic = false;
};

// One declaration (without the comment/blank-line handling of files).
Result<CPrototype> parse_c_prototype(std::string_view line);

// A type as written in C ("const char *", "unsigned long", "O_flags") or in a demangled
// C++ name ("char const*", "std::string const&", "int (*)(int)"). With cxx, a name
// the parser does not know is a class passed by value (Kind::Other) instead of an
// error; references are pointers.
Result<ParamInfo> parse_c_type(std::string_view text, bool cxx = false);

// Every declaration of a file's text; errors are "WHERE:LINE: message".
Result<std::vector<CPrototype>> parse_c_prototypes(std::string_view text, const std::string& where);

}  // namespace ft
