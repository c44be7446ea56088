// SignatureSources: where the parameters and return type of a traced function come
// from, first found wins:
//   1. DWARF of its module (core/dwarf_params.h), the file's own or its separate
//      debug file;
//   2. the prototype files given with -F (core/c_prototype.h), by name;
//   3. the built-in prototypes of the C library (core/builtin_prototypes.h), for
//      functions of libc, libm and the dynamic linker and PLT stubs;
//   4. a C++ name's parameter types (core/mangled_signature.h);
// with two refinements of DWARF by a declaration of the same name: the declaration's
// symbolic sets (O_flags, ...) are given to DWARF's integer parameters, and DWARF that
// lists no parameters where the declaration has some (an assembly source: glibc's
// string functions) gives way to the declaration. The DWARF at an IFUNC symbol's address
// describes its resolver, so IFUNCs (strlen, memcpy, ...) skip step 1.
// and otherwise nothing: plugins see nparams = -1 and show raw registers.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>

#include "common/result.h"
#include "core/address_space.h"
#include "core/dwarf_params.h"

namespace ft {

class SignatureSources {
 public:
  enum class Origin { Dwarf, PrototypeFile, Builtin, MangledName };

  // Reads a prototype file (-F). A later declaration of a name replaces an earlier one.
  Status add_file(const std::string& path);
  // Adds the declarations of a text (tests); errors name `where`.
  Status add_text(std::string_view text, const std::string& where);

  struct Found {
    Signature sig;
    Origin origin;
  };
  // The signature of the function `sym` of module m (demangled: its demangled name,
  // as demangle() gives it). Opens the module's DWARF on first use.
  std::optional<Found> find(Module& m, const ElfSymbol& sym, const std::string& demangled);

 private:
  const std::unordered_set<std::string>& classes_of(const ElfImage& img);
  // The -F or built-in declaration of sym's name, if one applies to module m.
  const Signature* declared(const Module& m, const ElfSymbol& sym, Origin* origin);

  std::unordered_map<std::string, Signature> declared_;
  std::unordered_map<std::string, Signature> builtin_;
  bool builtin_loaded_ = false;
  std::unordered_map<const ElfImage*, std::unordered_set<std::string>> classes_;
};

const char* origin_name(SignatureSources::Origin o);

}  // namespace ft
