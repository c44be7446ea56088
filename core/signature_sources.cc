#include "core/signature_sources.h"

#include <fstream>
#include <sstream>

#include "common/demangle.h"
#include "core/builtin_prototypes.h"
#include "core/c_prototype.h"
#include "core/mangled_signature.h"

namespace ft {

Status SignatureSources::add_text(std::string_view text, const std::string& where) {
  auto protos = parse_c_prototypes(text, where);
  if (!protos) return protos.error();
  for (CPrototype& p : *protos) declared_[p.name] = std::move(p.sig);
  return {};
}

Status SignatureSources::add_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error::from_errno(errno, "cannot read prototype file " + path);
  std::stringstream text;
  text << in.rdbuf();
  return add_text(text.str(), path);
}

const std::unordered_set<std::string>& SignatureSources::classes_of(const ElfImage& img) {
  auto [it, fresh] = classes_.try_emplace(&img);
  if (fresh)
    for (const ElfSymbol& s : img.functions())
      if (s.name.starts_with("_Z"))
        if (std::string cls = class_named_by(demangle(s.name)); !cls.empty()) it->second.insert(std::move(cls));
  return it->second;
}

const Signature* SignatureSources::declared(const Module& m, const ElfSymbol& sym, Origin* origin) {
  std::string name = sym.name.substr(0, sym.name.find('@'));  // "open@plt", "memcpy@GLIBC_2.14"
  if (auto it = declared_.find(name); it != declared_.end()) {
    *origin = Origin::PrototypeFile;
    return &it->second;
  }
  if (sym.plt || builtin_prototypes_apply(m.map.path)) {
    if (!builtin_loaded_) {
      builtin_loaded_ = true;
      for (const CPrototype& p : builtin_prototypes()) builtin_.emplace(p.name, p.sig);
    }
    if (auto it = builtin_.find(name); it != builtin_.end()) {
      *origin = Origin::Builtin;
      return &it->second;
    }
  }
  return nullptr;
}

namespace {

// DWARF of an assembly source (glibc's string functions) names the function but not
// its parameters: no parameters where the declaration has some.
bool says_less(const Signature& dwarf, const Signature& proto) {
  return dwarf.params.empty() && !proto.params.empty();
}

// The symbolic sets of a prototype given to DWARF's integer parameters, position by
// position, when both list the same number of parameters.
void add_formats(Signature& dwarf, const Signature& proto) {
  if (dwarf.params.size() != proto.params.size()) return;
  for (size_t i = 0; i < dwarf.params.size(); ++i)
    if (dwarf.params[i].kind == ParamInfo::Kind::Integer && proto.params[i].kind == ParamInfo::Kind::Integer)
      dwarf.params[i].format = proto.params[i].format;
}

}  // namespace

std::optional<SignatureSources::Found> SignatureSources::find(Module& m, const ElfSymbol& sym,
                                                              const std::string& demangled) {
  Origin origin = Origin::Builtin;
  const Signature* proto = declared(m, sym, &origin);
  if (m.elf) {
    if (!m.dwarf_tried) {
      m.dwarf_tried = true;
      m.dwarf = DwarfParams::open(m.elf->path(), m.elf->build_id(), m.elf->debuglink());
    }
    // An IFUNC symbol's address is its resolver's, whose DWARF is not the function's.
    if (m.dwarf && !sym.ifunc)
      if (auto sig = m.dwarf->signature(sym.value); sig && !(proto && says_less(*sig, *proto))) {
        if (proto) add_formats(*sig, *proto);
        return Found{std::move(*sig), Origin::Dwarf};
      }
  }
  if (proto) return Found{*proto, origin};
  std::string name = sym.name.substr(0, sym.name.find('@'));
  if (name.starts_with("_Z") && m.elf)
    if (auto sig = mangled_signature(demangled, classes_of(*m.elf))) return Found{std::move(*sig), Origin::MangledName};
  return std::nullopt;
}

const char* origin_name(SignatureSources::Origin o) {
  switch (o) {
    case SignatureSources::Origin::Dwarf: return "DWARF";
    case SignatureSources::Origin::PrototypeFile: return "a prototype file";
    case SignatureSources::Origin::Builtin: return "the built-in prototypes";
    case SignatureSources::Origin::MangledName: return "its mangled name";
  }
  return "?";
}

}  // namespace ft
