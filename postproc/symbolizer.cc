#include "postproc/symbolizer.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iterator>

#include "common/hex.h"
#include "common/load_bias.h"
#include "functracer/schema.h"

namespace ft::post {

namespace {

// libdwfl looks build-ids of fewer bytes up nowhere (MIN_BUILD_ID_BYTES).
constexpr size_t kMinBuildIdBytes = 3;

// An absolute, lexically normal directory without a trailing '/' ("/" becomes "").
std::string absolute_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(dir, ec);
  if (ec) p = dir;
  std::string s = p.lexically_normal().string();
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

bool is_build_id(const std::string& id) {
  return id.size() >= 2 * kMinBuildIdBytes && id.size() % 2 == 0 &&
         id.find_first_not_of("0123456789abcdef") == std::string::npos;
}

const char* attr_string(Dwarf_Die* die, unsigned name) {
  Dwarf_Attribute attr;
  return dwarf_formstring(dwarf_attr_integrate(die, name, &attr));
}

// A function DIE's linkage name when it has one: it demangles to the qualified name
// with the parameters (C++).
const char* linkage_name(Dwarf_Die* die) {
  if (const char* n = attr_string(die, DW_AT_linkage_name)) return n;
  return attr_string(die, DW_AT_MIPS_linkage_name);
}

// The plain name qualified by the namespaces and classes around the function's
// declaration (C++ functions the compiler only inlined have no linkage name).
std::optional<std::string> qualified_name(Dwarf_Die* die) {
  const char* name = attr_string(die, DW_AT_name);
  if (name == nullptr) return std::nullopt;
  Dwarf_Die decl = *die;
  for (int hops = 0; hops < 8; ++hops) {
    Dwarf_Attribute attr;
    Dwarf_Attribute* ref = dwarf_attr(&decl, DW_AT_abstract_origin, &attr);
    if (ref == nullptr) ref = dwarf_attr(&decl, DW_AT_specification, &attr);
    Dwarf_Die next;
    if (ref == nullptr || dwarf_formref_die(ref, &next) == nullptr) break;
    decl = next;
  }
  std::string qualified;
  Dwarf_Die* scopes = nullptr;
  int n = dwarf_getscopes_die(&decl, &scopes);
  for (int i = n - 1; i >= 1; --i) {
    int tag = dwarf_tag(&scopes[i]);
    if (tag != DW_TAG_namespace && tag != DW_TAG_class_type && tag != DW_TAG_structure_type &&
        tag != DW_TAG_union_type) {
      continue;
    }
    const char* scope = dwarf_diename(&scopes[i]);
    qualified += scope != nullptr ? scope : "(anonymous namespace)";
    qualified += "::";
  }
  std::free(scopes);
  return qualified + name;
}

// Line-table file names are absolute or relative to the compilation directory.
std::string absolute_source(const char* name, const char* comp_dir) {
  std::filesystem::path p(name);
  if (p.is_relative() && comp_dir != nullptr && *comp_dir != '\0')
    p = std::filesystem::path(comp_dir) / p;
  return p.lexically_normal().string();
}

}  // namespace

struct Symbolizer::Search {
  std::string path;  // ":.debug:DIR1:...:DIRn"
  char* path_ptr = nullptr;
  Dwfl_Callbacks callbacks = {};
};

struct Symbolizer::ModuleFile {
  enum class State { kUnloaded, kReady, kFailed };

  std::string path;      // from the trace
  std::string build_id;  // from the trace
  State state = State::kUnloaded;
  Dwfl* dwfl = nullptr;
  Dwfl_Module* module = nullptr;
  bool dyn = false;  // ET_DYN: mapped at a load bias
  std::vector<LoadSegment> loads;
  ResolvedAddress unresolved;  // what every address in an unusable file resolves to
  std::unordered_map<uint64_t, ResolvedAddress> cache;  // link-time address -> result

  ~ModuleFile() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }
};

Symbolizer::Symbolizer(Diagnostics& diag, ResolveOptions options)
    : diag_(diag), search_(std::make_unique<Search>()) {
  nowhere_.frames.emplace_back();
  if (!options.sysroot.empty()) sysroot_ = absolute_dir(options.sysroot);
  for (const std::string& dir : options.debug_dirs) {
    if (!dir.empty()) debug_dirs_.push_back(absolute_dir(dir));
  }
  debug_dirs_.push_back(sysroot_ + "/usr/lib/debug");

  // The empty entry is the module file's directory, ".debug" its subdirectory; absolute
  // entries are searched by build-id and by the module's directory under them.
  search_->path = ":.debug";
  for (const std::string& dir : debug_dirs_) {
    if (dir.find(':') != std::string::npos) {
      diag_.warning("debug directory " + dir +
                    ": a ':' in its name cannot be passed to libdwfl; separate debug files"
                    " are not looked for there");
      continue;
    }
    search_->path += ":" + dir;
  }
  search_->path_ptr = search_->path.data();
  search_->callbacks.find_elf = dwfl_build_id_find_elf;
  search_->callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
  search_->callbacks.section_address = dwfl_offline_section_address;
  search_->callbacks.debuginfo_path = &search_->path_ptr;
}

Symbolizer::~Symbolizer() = default;

void Symbolizer::begin_process() { current_.clear(); }

void Symbolizer::observe(const TraceRecord& r) {
  if (r.type == schema::type::kExec) {
    current_.clear();
    return;
  }
  if (r.type != schema::type::kModule) return;
  auto module = schema::ModuleRecord::read(r);
  if (!module) return;
  const uint64_t base = module->base;
  const uint64_t end = module->end;
  const uint64_t offset = module->offset;

  auto [fit, new_file] = file_index_.try_emplace(
      {std::string(module->path), std::string(module->build_id)}, files_.size());
  if (new_file) {
    auto f = std::make_unique<ModuleFile>();
    f->path = module->path;
    f->build_id = module->build_id;
    files_.push_back(std::move(f));
    ModuleFile& file = *files_.back();
    file.unresolved.module = &file.path;
    file.unresolved.frames.emplace_back();
  }
  uint32_t file = fit->second;
  auto [mit, new_mapping] = mapping_index_.try_emplace({file, base, end, offset},
                                                       static_cast<uint32_t>(mappings_.size()));
  if (new_mapping) mappings_.push_back(Mapping{base, end, offset, file});

  // A module overlapping earlier ones replaces them.
  auto it = current_.lower_bound(base);
  if (it != current_.begin() && mappings_[std::prev(it)->second].end > base) --it;
  while (it != current_.end() && it->first < end) it = current_.erase(it);
  current_[base] = mit->second;
}

Symbolizer::Location Symbolizer::locate(uint64_t address) const {
  auto it = current_.upper_bound(address);
  if (it == current_.begin()) return Location{address, kNone};
  --it;
  if (address >= mappings_[it->second].end) return Location{address, kNone};
  return Location{address, it->second};
}

Symbolizer::CodeKey Symbolizer::key(const Location& loc) {
  if (loc.mapping == kNone) return CodeKey{kNone, loc.address};
  const Mapping& m = mappings_[loc.mapping];
  uint64_t b = 0;
  if (usable_file(m, &b) != nullptr) return CodeKey{m.file, loc.address - b};
  return CodeKey{m.file, loc.address - m.base + m.offset};
}

std::string Symbolizer::open(ModuleFile& f, const std::string& file) {
  // Each candidate gets a Dwfl of its own, kept only when the file is usable.
  Dwfl* dwfl = dwfl_begin(&search_->callbacks);
  if (dwfl == nullptr) return std::string("libdwfl: ") + dwfl_errmsg(-1);
  auto reject = [&](std::string why) {
    dwfl_end(dwfl);
    f.module = nullptr;
    f.loads.clear();
    return why;
  };
  dwfl_report_begin(dwfl);
  // At the link-time addresses: an ET_DYN file is placed at bias 0 (add_p_vaddr), an
  // ET_EXEC one where it says anyway. The module is named as in the trace; libdwfl
  // looks for its debug info next to `file`.
  f.module = dwfl_report_elf(dwfl, f.path.c_str(), file.c_str(), -1, 0, true);
  if (f.module == nullptr) {
    std::string why = dwfl_errmsg(-1);
    dwfl_report_end(dwfl, nullptr, nullptr);
    return reject("cannot read it (" + why + ")");
  }
  dwfl_report_end(dwfl, nullptr, nullptr);

  GElf_Addr elf_bias = 0;
  Elf* elf = dwfl_module_getelf(f.module, &elf_bias);
  GElf_Ehdr ehdr;
  if (elf == nullptr || gelf_getehdr(elf, &ehdr) == nullptr) {
    return reject(std::string("cannot read it (") + dwfl_errmsg(-1) + ")");
  }
  const unsigned char* bits = nullptr;
  GElf_Addr id_vaddr = 0;
  int n = dwfl_module_build_id(f.module, &bits, &id_vaddr);
  std::string file_id = n > 0 ? bytes_to_hex({bits, static_cast<size_t>(n)}) : std::string();
  // A trace without a build-id for the module (the tracer could not read it) leaves
  // nothing to check.
  if (!f.build_id.empty() && file_id != f.build_id) {
    return reject("build-id " + (file_id.empty() ? std::string("(none)") : file_id) +
                  " differs from the trace's " + f.build_id +
                  " (the file was replaced or rebuilt since)");
  }

  f.dyn = ehdr.e_type == ET_DYN;
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0) phnum = 0;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) != nullptr && ph.p_type == PT_LOAD) {
      f.loads.push_back(LoadSegment{ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz, ph.p_flags});
    }
  }
  if (f.dyn && f.loads.empty()) return reject("it has no loadable segment");
  f.dwfl = dwfl;
  return {};
}

bool Symbolizer::load(ModuleFile& f) {
  f.state = ModuleFile::State::kFailed;
  auto fail = [&](const std::string& why) {
    diag_.warning(f.path + ": " + why + "; its frames are not resolved");
    return false;
  };
  if (f.path.empty() || f.path[0] != '/') return fail("not a file (no symbols to read)");

  // "/../x" stays inside the sysroot.
  std::string primary = sysroot_ + std::filesystem::path(f.path).lexically_normal().string();
  std::string why = open(f, primary);
  if (why.empty()) {
    f.state = ModuleFile::State::kReady;
    return true;
  }
  if (primary != f.path) why = primary + ": " + why;
  if (!is_build_id(f.build_id)) return fail(why);

  std::string tried;
  for (const std::string& dir : debug_dirs_) {
    std::string candidate =
        dir + "/.build-id/" + f.build_id.substr(0, 2) + "/" + f.build_id.substr(2);
    tried += tried.empty() ? "" : ", ";
    tried += candidate;
    std::error_code ec;
    if (!std::filesystem::exists(candidate, ec)) continue;
    std::string no = open(f, candidate);
    if (no.empty()) {
      f.state = ModuleFile::State::kReady;
      return true;
    }
    tried += " (" + no + ")";
  }
  return fail(why + "; not found by build-id either, tried " + tried);
}

Symbolizer::ModuleFile* Symbolizer::usable_file(const Mapping& m, uint64_t* b) {
  ModuleFile& f = *files_[m.file];
  if (f.state == ModuleFile::State::kUnloaded) load(f);
  if (f.state != ModuleFile::State::kReady) return nullptr;
  std::optional<uint64_t> mb = load_bias(f.dyn, f.loads, m.base, m.offset);
  if (!mb) return nullptr;
  *b = *mb;
  return &f;
}

const ResolvedAddress& Symbolizer::resolve(const Location& loc, bool return_address) {
  if (loc.mapping == kNone) return nowhere_;
  const Mapping& m = mappings_[loc.mapping];
  uint64_t b = 0;
  ModuleFile* f = usable_file(m, &b);
  if (f == nullptr) return files_[m.file]->unresolved;
  uint64_t vaddr = loc.address - b - (return_address && loc.address > 0 ? 1 : 0);
  auto [it, inserted] = f->cache.try_emplace(vaddr);
  if (inserted) {
    ++lookups_;
    it->second.module = &f->path;
    lookup(*f, vaddr, it->second);
  }
  return it->second;
}

void Symbolizer::lookup(ModuleFile& f, uint64_t vaddr, ResolvedAddress& out) {
  Dwfl_Module* mod = dwfl_addrmodule(f.dwfl, vaddr);
  if (mod == nullptr) {
    out.frames.emplace_back();
    return;
  }
  GElf_Off sym_offset = 0;
  GElf_Sym sym;
  const char* symbol =
      dwfl_module_addrinfo(mod, vaddr, &sym_offset, &sym, nullptr, nullptr, nullptr);
  if (symbol != nullptr) {
    out.symbol_address = vaddr - sym_offset;
    out.symbol_size = sym.st_size;
  }

  // The innermost file:line, from the line table.
  std::optional<std::string> file;
  std::optional<int64_t> line;
  if (Dwfl_Line* l = dwfl_module_getsrc(mod, vaddr)) {
    int lineno = 0;
    if (const char* name = dwfl_lineinfo(l, nullptr, &lineno, nullptr, nullptr, nullptr)) {
      file = absolute_source(name, dwfl_line_comp_dir(l));
      if (lineno > 0) line = lineno;
    }
  }

  // Inlined functions around the address: each one's caller is at its call site.
  std::optional<std::string> dwarf_name;  // for code without a symbol
  Dwarf_Addr dw_bias = 0;
  if (Dwarf_Die* cudie = dwfl_module_addrdie(mod, vaddr, &dw_bias)) {
    Dwarf_Die* scopes = nullptr;
    int n = dwarf_getscopes(cudie, vaddr - dw_bias, &scopes);
    Dwarf_Files* files = nullptr;
    size_t nfiles = 0;
    const char* comp_dir = attr_string(cudie, DW_AT_comp_dir);
    for (int i = 0; i < n; ++i) {
      Dwarf_Die* scope = &scopes[i];
      int tag = dwarf_tag(scope);
      if (tag == DW_TAG_subprogram) {
        if (symbol == nullptr) symbol = linkage_name(scope);
        if (symbol == nullptr) dwarf_name = qualified_name(scope);
        break;
      }
      if (tag != DW_TAG_inlined_subroutine) continue;
      SourceFrame inl;
      if (const char* name = linkage_name(scope)) {
        inl.function = demangler_.full(name);
      } else {
        inl.function = qualified_name(scope);
      }
      inl.file = file;
      inl.line = line;
      inl.inlined = true;
      out.frames.push_back(std::move(inl));
      file.reset();
      line.reset();
      Dwarf_Attribute attr;
      Dwarf_Word call_file = 0, call_line = 0;
      if (dwarf_formudata(dwarf_attr(scope, DW_AT_call_file, &attr), &call_file) == 0 &&
          (files != nullptr || dwarf_getsrcfiles(cudie, &files, &nfiles) == 0) &&
          call_file < nfiles) {
        if (const char* name = dwarf_filesrc(files, call_file, nullptr, nullptr)) {
          file = absolute_source(name, comp_dir);
        }
      }
      if (dwarf_formudata(dwarf_attr(scope, DW_AT_call_line, &attr), &call_line) == 0 &&
          call_line > 0) {
        line = static_cast<int64_t>(call_line);
      }
    }
    std::free(scopes);
  }

  SourceFrame outer;
  if (symbol != nullptr) {
    // Symbol tables name versioned symbols "NAME@@VERSION" (.symver); the code is NAME.
    std::string name = symbol;
    if (size_t at = name.find('@'); at != std::string::npos && at > 0) name.resize(at);
    outer.function = demangler_.full(name);
  } else {
    outer.function = std::move(dwarf_name);
  }
  outer.file = std::move(file);
  outer.line = line;
  out.frames.push_back(std::move(outer));
}

}  // namespace ft::post
