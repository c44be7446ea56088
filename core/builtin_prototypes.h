// Built-in prototypes: the common functions of the C library (files, strings, memory,
// processes, time, sockets, a little libm), in the prototype language of c_prototype.h,
// used for functions of the C library's own modules (and PLT stubs that lead to them)
// when no DWARF describes them — the usual case on machines without debug packages.
//
// Written for calltrace's reader rather than copied from a header: a buffer the
// function fills is declared `void *` (its bytes at the entry are not yet the string:
// `char *fgets(void *buf, ...)`), and the returned `char *` shows the result; integers
// that hold constants name their set (`O_flags`, `LC_category`, ...).
#pragma once

#include <string_view>
#include <vector>

#include "core/c_prototype.h"

namespace ft {

// The table's source text (one declaration per line).
std::string_view builtin_prototype_text();

// Parsed once; the text is part of the program, so a line the parser refuses is a
// broken invariant.
const std::vector<CPrototype>& builtin_prototypes();

// Whether the built-in table applies to functions of the module at `path`: the C
// library, libm and the dynamic linker.
bool builtin_prototypes_apply(std::string_view path);

}  // namespace ft
