// DwarfParams: parameter names and kinds of functions, from DWARF read with libdw.
// See dwarf_params.h.
#include "core/dwarf_params.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "common/hex.h"

namespace ft {
namespace {

constexpr int kMaxTypeChain = 64;  // typedef/qualifier hops before giving up (corrupt DWARF)
constexpr int kMaxNesting = 64;    // DIE nesting depth walked when indexing

// The file has a .debug_info (possibly compressed) with contents.
bool has_debug_info(Elf* elf) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return false;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) continue;
    if (sh.sh_type == SHT_NOBITS || sh.sh_size == 0) continue;
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (name == nullptr) continue;
    std::string_view n(name);
    if (n == ".debug_info" || n == ".zdebug_info") return true;
  }
  return false;
}

std::string dir_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Follows typedefs and qualifiers; false when the chain ends in void or is broken.
bool peel(Dwarf_Die* die) {
  for (int i = 0; i < kMaxTypeChain; ++i) {
    switch (dwarf_tag(die)) {
      case DW_TAG_typedef:
      case DW_TAG_const_type:
      case DW_TAG_volatile_type:
      case DW_TAG_restrict_type:
      case DW_TAG_atomic_type:
      case DW_TAG_immutable_type:
      case DW_TAG_packed_type:
      case DW_TAG_shared_type: {
        Dwarf_Attribute attr;
        if (dwarf_attr_integrate(die, DW_AT_type, &attr) == nullptr) return false;  // void
        if (dwarf_formref_die(&attr, die) == nullptr) return false;
        break;
      }
      default:
        return true;
    }
  }
  return false;
}

// The type a DIE refers to with DW_AT_type, typedefs and qualifiers removed.
bool type_of(Dwarf_Die* die, Dwarf_Die* type) {
  Dwarf_Attribute attr;
  if (dwarf_attr_integrate(die, DW_AT_type, &attr) == nullptr) return false;
  if (dwarf_formref_die(&attr, type) == nullptr) return false;
  return peel(type);
}

bool is_char(Dwarf_Die* type) {
  if (dwarf_tag(type) != DW_TAG_base_type) return false;
  Dwarf_Attribute attr;
  Dwarf_Word enc = 0;
  if (dwarf_formudata(dwarf_attr_integrate(type, DW_AT_encoding, &attr), &enc) != 0) return false;
  if (enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char) return true;
  return enc == DW_ATE_UTF && dwarf_bytesize(type) == 1;  // char8_t
}

ParamInfo::Kind classify_type(Dwarf_Die* type_die, bool* is_signed) {
  using Kind = ParamInfo::Kind;
  Dwarf_Die type = *type_die;
  switch (dwarf_tag(&type)) {
    case DW_TAG_pointer_type: {
      Dwarf_Die pointee;
      if (type_of(&type, &pointee) && is_char(&pointee)) return Kind::String;
      return Kind::Pointer;
    }
    case DW_TAG_reference_type:
    case DW_TAG_rvalue_reference_type:
    case DW_TAG_unspecified_type:  // std::nullptr_t
      return Kind::Pointer;
    case DW_TAG_enumeration_type:
      *is_signed = true;
      return Kind::Integer;
    case DW_TAG_base_type: {
      Dwarf_Attribute attr;
      Dwarf_Word enc = 0;
      if (dwarf_formudata(dwarf_attr_integrate(&type, DW_AT_encoding, &attr), &enc) != 0)
        return Kind::Other;
      int size = dwarf_bytesize(&type);
      bool fits_register = size <= 8;  // -1 (unknown) counts as fitting
      switch (enc) {
        case DW_ATE_float:
          return fits_register ? Kind::Float : Kind::Other;  // long double, _Float128: memory
        case DW_ATE_signed:
        case DW_ATE_signed_char:
          *is_signed = true;
          return fits_register ? Kind::Integer : Kind::Other;
        case DW_ATE_unsigned:
        case DW_ATE_unsigned_char:
        case DW_ATE_boolean:
        case DW_ATE_UTF:
          return fits_register ? Kind::Integer : Kind::Other;  // __int128: two registers
        default:
          return Kind::Other;
      }
    }
    default:
      return Kind::Other;  // structs, unions, classes, pointers to members, ...
  }
}

std::string name_of(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  const char* name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
  return name != nullptr ? name : "";
}

// --- Structure members, one level deep (ParamInfo::members) ---

constexpr int kMaxMembers = 16;  // members described; more end the list with "..."

bool is_aggregate(Dwarf_Die* type) {
  int tag = dwarf_tag(type);
  return tag == DW_TAG_structure_type || tag == DW_TAG_class_type || tag == DW_TAG_union_type;
}

bool flag(Dwarf_Die* die, unsigned name) {
  Dwarf_Attribute attr;
  bool v = false;
  return dwarf_attr_integrate(die, name, &attr) != nullptr && dwarf_formflag(&attr, &v) == 0 && v;
}

// The byte offset of a data member; false for static members, bit-fields and
// locations given as expressions (virtual bases).
bool member_offset(Dwarf_Die* member, Dwarf_Word* off) {
  if (dwarf_hasattr(member, DW_AT_bit_size) || dwarf_hasattr(member, DW_AT_data_bit_offset)) return false;
  Dwarf_Attribute attr;
  if (dwarf_attr_integrate(member, DW_AT_data_member_location, &attr) == nullptr) {
    *off = 0;  // a union's members
    return !dwarf_hasattr(member, DW_AT_external) && !flag(member, DW_AT_declaration);
  }
  return dwarf_formudata(&attr, off) == 0;
}

// The offset of the data member `name` of an aggregate, or -1.
long offset_of(Dwarf_Die* type, std::string_view name) {
  Dwarf_Die child;
  if (dwarf_child(type, &child) != 0) return -1;
  do {
    Dwarf_Word off = 0;
    if (dwarf_tag(&child) == DW_TAG_member && name_of(&child) == name && member_offset(&child, &off))
      return static_cast<long>(off);
  } while (dwarf_siblingof(&child, &child) == 0);
  return -1;
}

// libstdc++'s std::string (the C++11 ABI): the text pointer (_M_dataplus._M_p) at
// offset 0, the length at offset 8.
bool is_std_string(Dwarf_Die* type) {
  if (dwarf_tag(type) != DW_TAG_class_type && dwarf_tag(type) != DW_TAG_structure_type) return false;
  if (name_of(type).rfind("basic_string<char,", 0) != 0) return false;
  return offset_of(type, "_M_dataplus") == 0 && offset_of(type, "_M_string_length") == 8;
}

// A member's code: i1..i8/u1..u8 integers, p pointer, s char *, f4/f8, cN an array of N
// chars, S a std::string, o anything else (shown without its contents).
std::string member_code(Dwarf_Die* member) {
  Dwarf_Die type;
  if (!type_of(member, &type)) return "o";
  if (dwarf_tag(&type) == DW_TAG_array_type) {
    Dwarf_Die elem, sub;
    Dwarf_Word count = 0;
    if (type_of(&type, &elem) && is_char(&elem) && dwarf_child(&type, &sub) == 0 &&
        dwarf_tag(&sub) == DW_TAG_subrange_type && dwarf_aggregate_size(&type, &count) == 0 && count > 0)
      return "c" + std::to_string(count);
    return "o";
  }
  if (is_std_string(&type)) return "S";
  bool is_signed = false;
  int size = dwarf_bytesize(&type);
  switch (classify_type(&type, &is_signed)) {
    case ParamInfo::Kind::Integer:
      if (size == 1 || size == 2 || size == 4 || size == 8) return (is_signed ? "i" : "u") + std::to_string(size);
      return "o";
    case ParamInfo::Kind::Pointer: return "p";
    case ParamInfo::Kind::String: return "s";
    case ParamInfo::Kind::Float: return size == 4 ? "f4" : "f8";
    case ParamInfo::Kind::Other: return "o";
  }
  return "o";
}

// The members of an aggregate as "{name:code@offset;...}" (or "S" for a std::string);
// *int_only: none of them is floating-point or of unknown class. False when DWARF has
// no members for it (a declaration only, an empty class).
bool struct_body(Dwarf_Die* type, std::string* out, bool* int_only) {
  *int_only = true;
  if (is_std_string(type)) {
    *out = "S";
    return true;
  }
  if (!is_aggregate(type) || flag(type, DW_AT_declaration)) return false;
  std::string body = "{";
  int n = 0;
  Dwarf_Die child;
  if (dwarf_child(type, &child) == 0) {
    do {
      Dwarf_Word off = 0;
      if (dwarf_tag(&child) != DW_TAG_member || !member_offset(&child, &off)) continue;
      std::string name = name_of(&child);
      if (name.empty() || name.find_first_of(":;@{}") != std::string::npos) continue;
      std::string code = member_code(&child);
      if (code[0] == 'f' || code[0] == 'o' || code[0] == 'S') *int_only = false;
      if (n == kMaxMembers) {
        body += ";...";
        break;
      }
      if (n++) body += ';';
      body += name + ":" + code + "@" + std::to_string(off);
    } while (dwarf_siblingof(&child, &child) == 0);
  }
  if (n == 0) return false;
  *out = body + "}";
  return true;
}

// A class the C++ ABI passes by invisible reference (a pointer to a copy): one with a
// user-declared destructor or copy/move constructor. GCC does not emit
// DW_AT_calling_convention, so the declarations tell.
bool passed_by_reference(Dwarf_Die* type) {
  if (dwarf_tag(type) != DW_TAG_class_type && dwarf_tag(type) != DW_TAG_structure_type) return false;
  std::string cls = name_of(type);
  cls = cls.substr(0, cls.find('<'));
  Dwarf_Die child;
  if (dwarf_child(type, &child) != 0) return false;
  do {
    if (dwarf_tag(&child) != DW_TAG_subprogram || flag(&child, DW_AT_artificial)) continue;
    std::string name = name_of(&child);
    if (!name.empty() && name[0] == '~') return true;
    if (name != cls) continue;
    Dwarf_Die param, ptype;
    int explicit_params = 0;
    bool reference = false;
    if (dwarf_child(&child, &param) == 0) {
      do {
        if (dwarf_tag(&param) != DW_TAG_formal_parameter || flag(&param, DW_AT_artificial)) continue;
        ++explicit_params;
        Dwarf_Attribute attr;
        if (dwarf_attr_integrate(&param, DW_AT_type, &attr) != nullptr && dwarf_formref_die(&attr, &ptype) != nullptr) {
          int tag = dwarf_tag(&ptype);
          reference = tag == DW_TAG_reference_type || tag == DW_TAG_rvalue_reference_type;
        }
      } while (dwarf_siblingof(&param, &param) == 0);
    }
    if (explicit_params == 1 && reference) return true;
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

// The structure a parameter of type `type` (peeled) is or points to.
void describe_members(Dwarf_Die* type, ParamInfo* out) {
  bool int_only = false;
  std::string body;
  int tag = dwarf_tag(type);
  if (tag == DW_TAG_pointer_type || tag == DW_TAG_reference_type || tag == DW_TAG_rvalue_reference_type) {
    Dwarf_Die pointee;
    if (type_of(type, &pointee) && struct_body(&pointee, &body, &int_only)) out->members = "*" + body;
    return;
  }
  if (!struct_body(type, &body, &int_only)) return;
  if (passed_by_reference(type)) {
    out->kind = ParamInfo::Kind::Pointer;
    out->size = 8;
    out->members = "^" + body;
  } else if (out->size > 0 && out->size <= 16 && int_only && tag != DW_TAG_union_type) {
    out->int_aggregate = true;
    out->members = body;
  }
}

// Fills kind, size and signedness from the DW_AT_type of `die` (a parameter or a
// subprogram); false when it has none (void). With `members`, the structure it is or
// points to too.
bool describe_type(Dwarf_Die* die, ParamInfo* out, bool members = false) {
  Dwarf_Die type;
  if (!type_of(die, &type)) return false;
  out->kind = classify_type(&type, &out->is_signed);
  out->size = dwarf_bytesize(&type);
  if (out->size < 0 && (out->kind == ParamInfo::Kind::Pointer || out->kind == ParamInfo::Kind::String)) out->size = 8;
  if (members) describe_members(&type, out);
  return true;
}

// A parameter or result of a Go function: what Go's internal ABI puts in registers
// (the Go internal ABI specification: each integer, boolean or pointer takes the next
// integer register, each float the next floating-point one, a string (pointer,
// length) or an interface (two words) two integer registers, a slice (pointer,
// length, capacity) three); other types (arrays, structs, ...) are Other. Go never passes a char * string: a *uint8 is a pointer.
void describe_go_type(Dwarf_Die* die, ParamInfo* out) {
  using Kind = ParamInfo::Kind;
  out->kind = Kind::Other;
  Dwarf_Die type;
  if (!type_of(die, &type)) return;
  out->size = dwarf_bytesize(&type);
  switch (dwarf_tag(&type)) {
    case DW_TAG_pointer_type:
      out->kind = Kind::Pointer;
      out->size = 8;
      return;
    case DW_TAG_base_type: {
      Dwarf_Attribute attr;
      Dwarf_Word enc = 0;
      if (dwarf_formudata(dwarf_attr_integrate(&type, DW_AT_encoding, &attr), &enc) != 0) return;
      if (out->size <= 0 || out->size > 8) return;
      if (enc == DW_ATE_float) {
        out->kind = Kind::Float;
      } else if (enc == DW_ATE_signed || enc == DW_ATE_signed_char) {
        out->kind = Kind::Integer;
        out->is_signed = true;
      } else if (enc == DW_ATE_unsigned || enc == DW_ATE_unsigned_char || enc == DW_ATE_boolean) {
        out->kind = Kind::Integer;
      }
      return;
    }
    case DW_TAG_structure_type: {
      // The runtime's two- and three-word values, in consecutive integer registers,
      // described as structures in registers (ft_function.param_members): a string
      // is a text pointer and a length, as a std::string is ("S").
      std::string name = name_of(&type);
      if (out->size == 16 && name == "string") {
        out->members = "S";
      } else if (out->size == 16 && name == "runtime.iface") {
        out->members = "{tab:p@0;data:p@8}";
      } else if (out->size == 16 && name == "runtime.eface") {
        out->members = "{_type:p@0;data:p@8}";
      } else if (out->size == 24 && name.starts_with("[]")) {
        out->members = "{array:p@0;len:i8@8;cap:i8@16}";
      }
      out->int_aggregate = !out->members.empty();
      return;
    }
    default:
      return;
  }
}

// Entry address of a subprogram: DW_AT_entry_pc, DW_AT_low_pc, or the first range.
bool entry_of(Dwarf_Die* die, Dwarf_Addr* addr) {
  if (dwarf_hasattr(die, DW_AT_entry_pc) && dwarf_entrypc(die, addr) == 0) return true;
  if (dwarf_lowpc(die, addr) == 0) return true;
  if (!dwarf_hasattr(die, DW_AT_ranges)) return false;
  Dwarf_Addr base = 0, start = 0, end = 0;
  if (dwarf_ranges(die, 0, &base, &start, &end) <= 0) return false;
  *addr = start;
  return true;
}

}  // namespace

struct DwarfParams::Impl {
  struct Entry {
    uint64_t addr;
    Dwarf_Die die;
  };

  int fd = -1;
  Elf* elf = nullptr;
  Dwarf* dwarf = nullptr;
  bool indexed = false;
  std::vector<Entry> index;  // subprograms with an address, sorted by address

  ~Impl() {
    if (dwarf != nullptr) dwarf_end(dwarf);
    if (elf != nullptr) elf_end(elf);
    if (fd >= 0) ::close(fd);
  }

  void build_index();
  void walk(Dwarf_Die* parent, int depth);
  void add(Dwarf_Die* die);
};

void DwarfParams::Impl::add(Dwarf_Die* die) {
  Dwarf_Addr addr = 0;
  if (!entry_of(die, &addr)) return;
  // 0 and the -1/-2 tombstones mark functions the linker discarded.
  if (addr == 0 || addr >= ~Dwarf_Addr{1}) return;
  index.push_back(Entry{addr, *die});
}

void DwarfParams::Impl::walk(Dwarf_Die* parent, int depth) {
  if (depth > kMaxNesting) return;
  Dwarf_Die child;
  if (dwarf_child(parent, &child) != 0) return;
  do {
    switch (dwarf_tag(&child)) {
      case DW_TAG_subprogram: {
        size_t before = index.size();
        add(&child);
        if (index.size() != before) walk(&child, depth + 1);  // nested functions
        break;
      }
      case DW_TAG_namespace:
      case DW_TAG_module:
      case DW_TAG_class_type:
      case DW_TAG_structure_type:
      case DW_TAG_union_type:
      case DW_TAG_interface_type:
      case DW_TAG_lexical_block:
        walk(&child, depth + 1);
        break;
      default:
        break;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

void DwarfParams::Impl::build_index() {
  indexed = true;
  Dwarf_CU* cu = nullptr;
  Dwarf_Half version = 0;
  uint8_t unit_type = 0;
  Dwarf_Die cudie, subdie;
  while (dwarf_get_units(dwarf, cu, &cu, &version, &unit_type, &cudie, &subdie) == 0) {
    Dwarf_Die* root = nullptr;
    if (unit_type == DW_UT_compile || unit_type == DW_UT_partial) {
      root = &cudie;
    } else if (unit_type == DW_UT_skeleton && dwarf_tag(&subdie) == DW_TAG_compile_unit) {
      root = &subdie;  // split DWARF: the functions are in the .dwo unit
    }
    if (root != nullptr) walk(root, 0);
  }
  std::stable_sort(index.begin(), index.end(),
                   [](const Entry& a, const Entry& b) { return a.addr < b.addr; });
  index.shrink_to_fit();
}

DwarfParams::DwarfParams(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DwarfParams::~DwarfParams() = default;

std::unique_ptr<DwarfParams> DwarfParams::open(const std::string& path,
                                               const std::string& build_id,
                                               const std::string& debuglink) {
  static const bool libelf_ready = elf_version(EV_CURRENT) != EV_NONE;
  if (!libelf_ready) return nullptr;

  // A DWARF source: an ELF file with .debug_info whose build-id, when checked and known
  // on both sides, is the module's.
  auto try_file = [](const std::string& file, const std::string& want_build_id,
                     bool check_build_id) -> std::unique_ptr<Impl> {
    struct stat st;
    if (::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return nullptr;
    auto impl = std::make_unique<Impl>();
    impl->fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (impl->fd < 0) return nullptr;
    impl->elf = elf_begin(impl->fd, ELF_C_READ_MMAP, nullptr);
    if (impl->elf == nullptr || elf_kind(impl->elf) != ELF_K_ELF) return nullptr;
    if (!has_debug_info(impl->elf)) return nullptr;
    if (check_build_id && !want_build_id.empty()) {
      const void* bits = nullptr;
      ssize_t len = dwelf_elf_gnu_build_id(impl->elf, &bits);
      if (len > 0 &&
          bytes_to_hex({static_cast<const unsigned char*>(bits), static_cast<size_t>(len)}) != want_build_id)
        return nullptr;  // a stale debug file for another build
    }
    impl->dwarf = dwarf_begin_elf(impl->elf, DWARF_C_READ, nullptr);
    if (impl->dwarf == nullptr) return nullptr;
    return impl;
  };

  // 1. The file's own DWARF.
  if (auto impl = try_file(path, build_id, false))
    return std::unique_ptr<DwarfParams>(new DwarfParams(std::move(impl)));

  // The global debug directory: /usr/lib/debug, or $FUNCTRACER_DEBUG_DIR.
  static const std::string debug_root = [] {
    const char* env = std::getenv("FUNCTRACER_DEBUG_DIR");
    return std::string(env != nullptr && env[0] != '\0' ? env : "/usr/lib/debug");
  }();

  // 2. DEBUG_ROOT/.build-id/xx/rest.debug
  if (build_id.size() > 2) {
    std::string file = debug_root + "/.build-id/" + build_id.substr(0, 2) + "/" +
                       build_id.substr(2) + ".debug";
    if (auto impl = try_file(file, build_id, true))
      return std::unique_ptr<DwarfParams>(new DwarfParams(std::move(impl)));
  }

  // 3. .gnu_debuglink next to the file, in .debug/ there, and under the debug root,
  //    for the directory as given and as resolved through symlinks.
  if (!debuglink.empty() && debuglink.find('/') == std::string::npos) {
    std::vector<std::string> dirs{dir_of(path)};
    if (char* real = ::realpath(path.c_str(), nullptr)) {
      std::string real_dir = dir_of(real);
      std::free(real);
      if (real_dir != dirs[0]) dirs.push_back(real_dir);
    }
    for (const std::string& dir : dirs) {
      std::vector<std::string> files{dir + "/" + debuglink, dir + "/.debug/" + debuglink};
      if (!dir.empty() && dir[0] == '/') files.push_back(debug_root + dir + "/" + debuglink);
      for (const std::string& file : files) {
        if (auto impl = try_file(file, build_id, true))
          return std::unique_ptr<DwarfParams>(new DwarfParams(std::move(impl)));
      }
    }
  }
  return nullptr;
}

std::optional<std::vector<ParamInfo>> DwarfParams::params(uint64_t link_addr) {
  auto sig = signature(link_addr);
  if (!sig) return std::nullopt;
  return std::move(sig->params);
}

std::optional<Signature> DwarfParams::signature(uint64_t link_addr) {
  if (!impl_->indexed) impl_->build_index();
  const auto& index = impl_->index;
  auto it = std::lower_bound(index.begin(), index.end(), link_addr,
                             [](const Impl::Entry& e, uint64_t a) { return e.addr < a; });
  if (it == index.end() || it->addr != link_addr) return std::nullopt;

  Dwarf_Die die = it->die;
  Signature sig;
  Dwarf_Die cu;
  // Go: the results are formal parameters too (DW_AT_variable_parameter); the first
  // is what the result register holds.
  sig.go_abi = dwarf_diecu(&die, &cu, nullptr, nullptr) != nullptr && dwarf_srclang(&cu) == DW_LANG_Go;
  if (!sig.go_abi) sig.returns_void = !describe_type(&die, &sig.ret);
  Dwarf_Die child;
  if (dwarf_child(&die, &child) == 0) {
    do {
      if (dwarf_tag(&child) != DW_TAG_formal_parameter) continue;
      ParamInfo p;
      p.name = name_of(&child);
      if (sig.go_abi) {
        describe_go_type(&child, &p);
      } else if (!describe_type(&child, &p, true)) {
        p.kind = ParamInfo::Kind::Other;
      }
      if (!sig.go_abi || !flag(&child, DW_AT_variable_parameter)) {
        sig.params.push_back(std::move(p));
      } else if (sig.returns_void) {
        sig.returns_void = false;
        sig.ret = std::move(p);
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }
  return sig;
}

}  // namespace ft
