// ElfImage: symbols, PLT stubs, program headers and notes of an ELF file, read with
// libelf. See elf_image.h for what is promised.
//
// PLT stubs are found by decoding them with the decoder of the file's architecture
// (arch/plt.h: x86-64 `jmp *GOT(%rip)`, AArch64 `adrp x16; ldr x17, [x16, #off]`).
// The GOT slot the stub jumps through is matched against the JUMP_SLOT, GLOB_DAT
// and IRELATIVE relocations, which name the target. This handles .plt, .plt.sec,
// .plt.bnd and .plt.got, PLTs without a PLT0 header (static executables) and IRELATIVE
// slots that sit between the JUMP_SLOT ones. Only when nothing can be decoded (section
// contents absent, unknown stub layout) are .rela.plt entries mapped to fixed-size stubs
// in relocation order.
#include "core/elf_image.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "arch/arch.h"
#include "common/demangle.h"
#include "common/hex.h"

namespace ft {
namespace {

constexpr uint16_t kVersymHidden = 0x8000;  // .gnu.version: not the default version

class UniqueFd {
 public:
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

struct ElfDeleter {
  void operator()(Elf* elf) const { elf_end(elf); }
};
using ElfPtr = std::unique_ptr<Elf, ElfDeleter>;

std::string libelf_error() {
  const char* msg = elf_errmsg(-1);
  return msg != nullptr ? msg : "unknown libelf error";
}

// [off, off + len) lies inside a file of file_size bytes.
bool fits(uint64_t off, uint64_t len, uint64_t file_size) {
  return off <= file_size && len <= file_size - off;
}

uint16_t load16(const unsigned char* p, bool msb) {
  return msb ? static_cast<uint16_t>(p[0] << 8 | p[1]) : static_cast<uint16_t>(p[1] << 8 | p[0]);
}
uint32_t load32(const unsigned char* p, bool msb) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[msb ? i : 3 - i]) << (8 * (3 - i));
  return v;
}
uint64_t load64(const unsigned char* p, bool msb) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[msb ? i : 7 - i]) << (8 * (7 - i));
  return v;
}

// Reads up to len bytes at offset 0; returns the count read or -1 (errno set).
ssize_t read_prefix(int fd, unsigned char* buf, size_t len) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd, buf + done, len - done, static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

// A symbol before merging, with what decides which of several same-named or
// same-address symbols is preferred.
struct Candidate {
  ElfSymbol sym;
  bool hidden = false;  // a non-default symbol version (foo@VER, or hidden in .gnu.version)
};

// Lower is better: default version, then global, then exported.
int rank(const Candidate& c) {
  return (c.hidden ? 4 : 0) + (c.sym.global ? 0 : 2) + (c.sym.dynamic ? 0 : 1);
}

// A GOT slot a PLT stub may jump through, and what the relocation there names.
struct Slot {
  const char* name = nullptr;  // JUMP_SLOT / GLOB_DAT target (points into the string table)
  uint64_t addend = 0;         // IRELATIVE: the resolver address
  bool irelative = false;
};
using SlotMap = std::unordered_map<uint64_t, Slot>;

struct Stub {
  uint64_t addr = 0;
  const Slot* slot = nullptr;
};

class Loader {
 public:
  Loader(const std::string& path, Elf* elf, uint64_t file_size)
      : path_(path), elf_(elf), file_size_(file_size) {}

  Status load();

  bool is_dyn = false, has_symtab = false, go = false;
  bool shadow_stack = false;  // GNU_PROPERTY_X86_FEATURE_1_SHSTK
  uint16_t machine = 0;
  uint64_t entry = 0;
  std::string interp, build_id, debuglink;
  uint64_t init_addr = 0;  // the .init section (DT_INIT), 0 if none
  std::vector<ElfSegment> segments;
  uint64_t eh_frame_hdr = 0, eh_frame_hdr_size = 0;  // PT_GNU_EH_FRAME
  std::vector<Candidate> candidates;

 private:
  struct Section {
    Elf_Scn* scn = nullptr;
    size_t index = 0;
    GElf_Shdr shdr{};
    const char* name = "";
  };

  Error corrupt(const std::string& what) const {
    return Error::msg(path_ + ": corrupt ELF: " + what);
  }
  Error truncated(const std::string& what) const {
    return Error::msg(path_ + ": truncated ELF (" + what + ")");
  }

  Status load_program_headers(const GElf_Ehdr& eh);
  Status load_sections(const GElf_Ehdr& eh);
  Status load_symbols();
  Status read_symbol_table(const Section& sec, bool dynamic);
  Status load_plt();
  Status read_slots(const Section& rela, bool is_rela_plt, SlotMap& slots,
                    std::vector<Slot>& plt_order);
  // The build id and the GNU properties (NT_GNU_PROPERTY_TYPE_0) from the note
  // sections, or the PT_NOTE segments of a file without section headers.
  void load_notes();
  bool read_notes(Elf_Data* data);  // whether data held either
  void read_properties(std::span<const unsigned char> desc);
  void load_debuglink();

  const Section* section_at(size_t index) const {
    if (index == 0 || index > sections_.size()) return nullptr;
    const Section& s = sections_[index - 1];
    return s.index == index ? &s : nullptr;
  }
  const Section* section_named(std::string_view name) const {
    for (const Section& s : sections_)
      if (name == s.name) return &s;
    return nullptr;
  }

  const std::string& path_;
  Elf* elf_;
  uint64_t file_size_;
  std::vector<Section> sections_;
  std::vector<GElf_Phdr> note_segments_;
  bool has_dynamic_ = false;
  const arch::Traits* arch_ = nullptr;  // load_plt(): the architecture of e_machine
};

Status Loader::load() {
  GElf_Ehdr eh;
  if (gelf_getehdr(elf_, &eh) == nullptr) return corrupt("cannot read ELF header: " + libelf_error());
  if (eh.e_type == ET_EXEC) {
    is_dyn = false;
  } else if (eh.e_type == ET_DYN) {
    is_dyn = true;
  } else {
    return Error::msg(path_ + ": not an executable or shared object (ELF type " +
                      std::to_string(eh.e_type) + ")");
  }
  machine = eh.e_machine;
  entry = eh.e_entry;
  if (Status st = load_program_headers(eh); !st) return st;
  if (Status st = load_sections(eh); !st) return st;
  if (Status st = load_symbols(); !st) return st;
  if (Status st = load_plt(); !st) return st;
  load_notes();
  load_debuglink();
  // The Go linker's sections: the pc-line table, the build information and the Go
  // build id note (gccgo's code is C-like and has none of them).
  go = section_named(".gopclntab") || section_named(".go.buildinfo") || section_named(".note.go.buildid");
  return {};
}

Status Loader::load_program_headers(const GElf_Ehdr& eh) {
  size_t phnum = 0;
  if (elf_getphdrnum(elf_, &phnum) != 0)
    return corrupt("cannot read program headers: " + libelf_error());
  if (phnum == 0) return {};
  size_t entsize = gelf_fsize(elf_, ELF_T_PHDR, 1, EV_CURRENT);
  if (eh.e_phentsize != entsize)
    return corrupt("program header size " + std::to_string(eh.e_phentsize));
  uint64_t table = 0;
  if (__builtin_mul_overflow(uint64_t{phnum}, uint64_t{entsize}, &table) ||
      !fits(eh.e_phoff, table, file_size_))
    return truncated("program headers end past the end of the file");
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf_, static_cast<int>(i), &ph) == nullptr)
      return corrupt("cannot read program header " + std::to_string(i) + ": " + libelf_error());
    switch (ph.p_type) {
      case PT_LOAD:
        if (!fits(ph.p_offset, ph.p_filesz, file_size_))
          return truncated("segment " + std::to_string(i) + " ends past the end of the file");
        segments.push_back(ElfSegment{ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz, ph.p_flags});
        break;
      case PT_INTERP: {
        if (!fits(ph.p_offset, ph.p_filesz, file_size_))
          return truncated("PT_INTERP ends past the end of the file");
        if (ph.p_filesz == 0) break;
        Elf_Data* data = elf_getdata_rawchunk(elf_, static_cast<int64_t>(ph.p_offset),
                                              ph.p_filesz, ELF_T_BYTE);
        if (data == nullptr || data->d_buf == nullptr)
          return corrupt("cannot read PT_INTERP: " + libelf_error());
        const char* s = static_cast<const char*>(data->d_buf);
        interp.assign(s, strnlen(s, data->d_size));
        break;
      }
      case PT_DYNAMIC:
        has_dynamic_ = true;
        break;
      case PT_GNU_EH_FRAME:
        eh_frame_hdr = ph.p_vaddr;
        eh_frame_hdr_size = ph.p_memsz;
        break;
      case PT_NOTE:
        note_segments_.push_back(ph);
        break;
      default:
        break;
    }
  }
  return {};
}

Status Loader::load_sections(const GElf_Ehdr& eh) {
  size_t shnum = 0;
  if (elf_getshdrnum(elf_, &shnum) != 0)
    return corrupt("cannot read section headers: " + libelf_error());
  if (shnum == 0) return {};
  size_t entsize = gelf_fsize(elf_, ELF_T_SHDR, 1, EV_CURRENT);
  if (eh.e_shentsize != entsize)
    return corrupt("section header size " + std::to_string(eh.e_shentsize));
  uint64_t table = 0;
  if (__builtin_mul_overflow(uint64_t{shnum}, uint64_t{entsize}, &table) ||
      !fits(eh.e_shoff, table, file_size_))
    return truncated("section headers end past the end of the file");
  size_t shstrndx = 0;
  bool have_names = elf_getshdrstrndx(elf_, &shstrndx) == 0;
  sections_.reserve(shnum);
  for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn != nullptr; scn = elf_nextscn(elf_, scn)) {
    Section s;
    s.scn = scn;
    s.index = elf_ndxscn(scn);
    if (gelf_getshdr(scn, &s.shdr) == nullptr)
      return corrupt("cannot read section header " + std::to_string(s.index) + ": " +
                     libelf_error());
    if (s.shdr.sh_type != SHT_NOBITS && !fits(s.shdr.sh_offset, s.shdr.sh_size, file_size_))
      return truncated("section " + std::to_string(s.index) + " ends past the end of the file");
    if (have_names) {
      const char* name = elf_strptr(elf_, shstrndx, s.shdr.sh_name);
      if (name != nullptr) s.name = name;
    }
    if (s.shdr.sh_type == SHT_DYNAMIC) has_dynamic_ = true;
    if (s.name && std::string_view(s.name) == ".init" && s.shdr.sh_type == SHT_PROGBITS &&
        (s.shdr.sh_flags & SHF_EXECINSTR) && s.shdr.sh_size > 0)
      init_addr = s.shdr.sh_addr;
    sections_.push_back(s);
  }
  return {};
}

Status Loader::load_symbols() {
  size_t entries = 0;
  for (const Section& s : sections_)
    if ((s.shdr.sh_type == SHT_SYMTAB || s.shdr.sh_type == SHT_DYNSYM) && s.shdr.sh_entsize != 0)
      entries += s.shdr.sh_size / s.shdr.sh_entsize;
  candidates.reserve(std::min<size_t>(entries, file_size_ / 16));
  for (const Section& s : sections_) {
    if (s.shdr.sh_type == SHT_SYMTAB) {
      has_symtab = true;
      if (Status st = read_symbol_table(s, false); !st) return st;
    } else if (s.shdr.sh_type == SHT_DYNSYM) {
      if (Status st = read_symbol_table(s, true); !st) return st;
    }
  }
  return {};
}

Status Loader::read_symbol_table(const Section& sec, bool dynamic) {
  if (sec.shdr.sh_size == 0) return {};
  Elf_Data* data = elf_getdata(sec.scn, nullptr);
  if (data == nullptr)
    return corrupt(std::string("cannot read symbol table ") + sec.name + ": " + libelf_error());
  if (data->d_buf == nullptr) return {};
  const Section* strtab = section_at(sec.shdr.sh_link);
  if (strtab == nullptr || strtab->shdr.sh_type != SHT_STRTAB)
    return corrupt(std::string("symbol table ") + sec.name + " has no string table");

  // .gnu.version marks the non-default versions of dynamic symbols.
  Elf_Data* versym = nullptr;
  if (dynamic) {
    for (const Section& s : sections_) {
      if (s.shdr.sh_type == SHT_GNU_versym && s.shdr.sh_link == sec.index) {
        versym = elf_getdata(s.scn, nullptr);
        break;
      }
    }
  }
  size_t versym_count = versym != nullptr && versym->d_buf != nullptr
                            ? versym->d_size / sizeof(GElf_Versym)
                            : 0;

  size_t entsize = gelf_fsize(elf_, ELF_T_SYM, 1, EV_CURRENT);
  size_t count = std::min<size_t>(data->d_size / entsize, INT_MAX);
  for (size_t i = 1; i < count; ++i) {
    GElf_Sym sym;
    if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) continue;
    unsigned type = GELF_ST_TYPE(sym.st_info);
    if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
    if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
    const char* raw = elf_strptr(elf_, strtab->index, sym.st_name);
    if (raw == nullptr || *raw == '\0') continue;

    std::string_view name(raw);
    bool hidden = false;
    if (dynamic) {
      GElf_Versym ver = 0;
      if (i < versym_count && gelf_getversym(versym, static_cast<int>(i), &ver) != nullptr)
        hidden = (ver & kVersymHidden) != 0;
    } else {
      // .symtab spells versioned definitions "foo@VER" (non-default) or "foo@@VER":
      // keep the plain name, as .dynsym has it.
      size_t at = name.find('@');
      if (at != std::string_view::npos && at > 0) {
        std::string_view ver = name.substr(at + 1);
        bool is_default = !ver.empty() && ver[0] == '@';
        if (is_default) ver.remove_prefix(1);
        if (!ver.empty() && ver != "plt" && ver.find('@') == std::string_view::npos) {
          name = name.substr(0, at);
          hidden = !is_default;
        }
      }
    }

    unsigned bind = GELF_ST_BIND(sym.st_info);
    Candidate c;
    c.sym.name.assign(name);
    c.sym.value = sym.st_value;
    c.sym.size = sym.st_size;
    c.sym.ifunc = type == STT_GNU_IFUNC;
    c.sym.global = bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE;
    c.sym.dynamic = dynamic;
    c.hidden = hidden;
    candidates.push_back(std::move(c));
  }
  return {};
}

// Records the GOT slots named by one RELA section's relocations.
Status Loader::read_slots(const Section& rela, bool is_rela_plt, SlotMap& slots,
                          std::vector<Slot>& plt_order) {
  const auto [jump_slot, glob_dat, irelative] = arch_->plt_relocations;
  if (rela.shdr.sh_size == 0) return {};
  Elf_Data* data = elf_getdata(rela.scn, nullptr);
  if (data == nullptr) {
    if (!is_rela_plt) return {};
    return corrupt(std::string("cannot read ") + rela.name + ": " + libelf_error());
  }
  if (data->d_buf == nullptr) return {};

  Elf_Data* symdata = nullptr;
  size_t strndx = 0;
  if (const Section* symtab = section_at(rela.shdr.sh_link);
      symtab != nullptr &&
      (symtab->shdr.sh_type == SHT_DYNSYM || symtab->shdr.sh_type == SHT_SYMTAB)) {
    symdata = elf_getdata(symtab->scn, nullptr);
    strndx = symtab->shdr.sh_link;
  }

  size_t entsize = gelf_fsize(elf_, ELF_T_RELA, 1, EV_CURRENT);
  size_t count = std::min<size_t>(data->d_size / entsize, INT_MAX);
  for (size_t i = 0; i < count; ++i) {
    GElf_Rela r;
    if (gelf_getrela(data, static_cast<int>(i), &r) == nullptr) continue;
    auto type = static_cast<uint32_t>(GELF_R_TYPE(r.r_info));
    Slot slot;
    if (type == irelative) {
      slot.irelative = true;
      slot.addend = static_cast<uint64_t>(r.r_addend);
    } else if (type == jump_slot || type == glob_dat) {
      size_t symi = GELF_R_SYM(r.r_info);
      GElf_Sym sym;
      if (symdata == nullptr || symi == 0 || symi > INT_MAX ||
          gelf_getsym(symdata, static_cast<int>(symi), &sym) == nullptr)
        continue;
      const char* name = elf_strptr(elf_, strndx, sym.st_name);
      if (name == nullptr || *name == '\0') continue;
      slot.name = name;
    } else {
      continue;
    }
    if (is_rela_plt && type != glob_dat) plt_order.push_back(slot);
    slots.emplace(r.r_offset, slot);
  }
  return {};
}

Status Loader::load_plt() {
  arch_ = arch::traits_for_machine(machine);
  if (arch_ == nullptr) return {};
  std::vector<const Section*> stub_sections;
  bool have_plt_got = false;
  for (const Section& s : sections_) {
    std::string_view name(s.name);
    if ((s.shdr.sh_flags & SHF_EXECINSTR) == 0) continue;
    if (name == ".plt" || name == ".plt.sec" || name == ".plt.bnd" || name == ".plt.got") {
      stub_sections.push_back(&s);
      if (name == ".plt.got") have_plt_got = true;
    }
  }
  if (stub_sections.empty()) return {};

  // .rela.plt names the lazily bound slots; .plt.got stubs use GLOB_DAT slots, which
  // live in .rela.dyn (only read when such stubs exist: it can be large).
  SlotMap slots;
  std::vector<Slot> plt_order;
  for (const Section& s : sections_) {
    if (s.shdr.sh_type != SHT_RELA) continue;
    bool is_rela_plt = std::string_view(s.name) == ".rela.plt";
    if (!is_rela_plt && !have_plt_got) continue;
    if (Status st = read_slots(s, is_rela_plt, slots, plt_order); !st) return st;
  }
  if (slots.empty()) return {};

  // Decode the stubs; each section's stubs get the distance to the next one as size.
  std::vector<Stub> stubs;
  size_t lazy_stubs = 0;  // decoded outside .plt.got
  std::vector<arch::PltStub> decoded;
  auto is_slot = [&slots](uint64_t addr) { return slots.count(addr) != 0; };
  for (const Section* sec : stub_sections) {
    if (sec->shdr.sh_type != SHT_PROGBITS || sec->shdr.sh_size == 0) continue;
    Elf_Data* data = elf_getdata(sec->scn, nullptr);
    if (data == nullptr || data->d_buf == nullptr) continue;
    decoded.clear();
    arch_->decode_plt({static_cast<const uint8_t*>(data->d_buf), data->d_size}, sec->shdr.sh_addr, is_slot,
                      decoded);
    for (const arch::PltStub& d : decoded) stubs.push_back(Stub{d.addr, &slots.at(d.got_slot)});
    if (std::string_view(sec->name) != ".plt.got") lazy_stubs += decoded.size();
  }

  // No .rela.plt stub decodable: fall back to .rela.plt order over fixed-size stubs
  // after the PLT0 header (dynamically linked files only: static ones order their slots
  // differently). Wrong when IRELATIVE slots sit between JUMP_SLOT ones.
  if (lazy_stubs == 0 && !plt_order.empty() && has_dynamic_) {
    const Section* sec = section_named(".plt.sec");
    if (sec == nullptr) sec = section_named(".plt.bnd");
    uint64_t header = 0;
    if (sec == nullptr) {
      sec = section_named(".plt");
      header = arch_->plt_header_size;
    }
    if (sec != nullptr) {
      const uint64_t entry = arch_->plt_entry_size;
      for (size_t i = 0; i < plt_order.size(); ++i) {
        uint64_t off = header + entry * i;
        if (off + entry > sec->shdr.sh_size) break;
        stubs.push_back(Stub{sec->shdr.sh_addr + off, &plt_order[i]});
      }
    }
  }
  if (stubs.empty()) return {};

  // Section ends bound the last stub of each section.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const Section* sec : stub_sections)
    ranges.emplace_back(sec->shdr.sh_addr, sec->shdr.sh_addr + sec->shdr.sh_size);
  std::sort(stubs.begin(), stubs.end(),
            [](const Stub& a, const Stub& b) { return a.addr < b.addr; });

  // IRELATIVE slots carry no symbol: name them after the IFUNC whose resolver they call.
  std::unordered_map<uint64_t, const Candidate*> ifunc_names;
  for (const Stub& s : stubs)
    if (s.slot->irelative) ifunc_names.emplace(s.slot->addend, nullptr);
  if (!ifunc_names.empty()) {
    auto better = [](const Candidate& a, const Candidate& b) {
      if (a.sym.ifunc != b.sym.ifunc) return a.sym.ifunc;
      if (rank(a) != rank(b)) return rank(a) < rank(b);
      return a.sym.name < b.sym.name;
    };
    for (const Candidate& c : candidates) {
      auto it = ifunc_names.find(c.sym.value);
      if (it != ifunc_names.end() && (it->second == nullptr || better(c, *it->second)))
        it->second = &c;
    }
  }

  // Stub sizes: up to the next stub or the section end, at most one entry.
  const uint64_t max_stub = arch_->plt_max_stub_size;
  std::vector<Candidate> plt;
  plt.reserve(stubs.size());
  for (size_t i = 0; i < stubs.size(); ++i) {
    const Stub& s = stubs[i];
    if (i > 0 && stubs[i - 1].addr == s.addr) continue;
    uint64_t end = s.addr + max_stub;
    for (const auto& [lo, hi] : ranges)
      if (s.addr >= lo && s.addr < hi) end = std::min(end, hi);
    if (i + 1 < stubs.size() && stubs[i + 1].addr > s.addr)
      end = std::min(end, stubs[i + 1].addr);
    std::string name;
    if (s.slot->irelative) {
      auto it = ifunc_names.find(s.slot->addend);
      if (it != ifunc_names.end() && it->second != nullptr) {
        name = it->second->sym.name;
      } else {
        // No symbol for the resolver (a local IFUNC in a stripped file): the name
        // objdump gives it.
        char buf[40];
        std::snprintf(buf, sizeof buf, "*ABS*+0x%llx",
                      static_cast<unsigned long long>(s.slot->addend));
        name = buf;
      }
    } else {
      name = s.slot->name;
    }
    Candidate c;
    c.sym.name = std::move(name);
    c.sym.name += "@plt";
    c.sym.value = s.addr;
    c.sym.size = end > s.addr ? end - s.addr : 0;
    c.sym.plt = true;
    plt.push_back(std::move(c));
  }
  for (Candidate& c : plt) candidates.push_back(std::move(c));
  return {};
}

bool Loader::read_notes(Elf_Data* data) {
  if (data == nullptr || data->d_buf == nullptr) return false;
  size_t offset = 0, name_off = 0, desc_off = 0;
  GElf_Nhdr nh;
  bool found = false;
  while (offset < data->d_size) {
    size_t next = gelf_getnote(data, offset, &nh, &name_off, &desc_off);
    if (next == 0 || next <= offset) break;
    const auto* base = static_cast<const unsigned char*>(data->d_buf);
    bool gnu = nh.n_namesz == 4 && std::memcmp(base + name_off, "GNU", 4) == 0;
    if (gnu && nh.n_type == NT_GNU_BUILD_ID && nh.n_descsz > 0 && build_id.empty()) {
      build_id = bytes_to_hex({base + desc_off, nh.n_descsz});
      found = true;
    } else if (gnu && nh.n_type == NT_GNU_PROPERTY_TYPE_0) {
      read_properties({base + desc_off, nh.n_descsz});
      found = true;
    }
    offset = next;
  }
  return found;
}

void Loader::read_properties(std::span<const unsigned char> desc) {
  // Properties: {u32 type, u32 size, data, padding to 8 bytes (4 in a 32-bit file)}.
  size_t align = gelf_getclass(elf_) == ELFCLASS64 ? 8 : 4;
  size_t at = 0;
  while (at + 8 <= desc.size()) {
    uint32_t type = 0, size = 0;
    std::memcpy(&type, desc.data() + at, 4);
    std::memcpy(&size, desc.data() + at + 4, 4);
    at += 8;
    if (size > desc.size() - at) return;
    if (type == GNU_PROPERTY_X86_FEATURE_1_AND && size >= 4 &&
        (machine == EM_X86_64 || machine == EM_386)) {
      uint32_t bits = 0;
      std::memcpy(&bits, desc.data() + at, 4);
      shadow_stack = (bits & GNU_PROPERTY_X86_FEATURE_1_SHSTK) != 0;
    }
    at += (size + align - 1) / align * align;
  }
}

void Loader::load_notes() {
  bool any = false;
  for (const Section& s : sections_) {
    if (s.shdr.sh_type != SHT_NOTE || s.shdr.sh_size == 0) continue;
    any |= read_notes(elf_getdata(s.scn, nullptr));
  }
  if (any) return;
  // No section headers (or no note sections): look in the PT_NOTE segments.
  for (const GElf_Phdr& ph : note_segments_) {
    if (ph.p_filesz == 0 || !fits(ph.p_offset, ph.p_filesz, file_size_)) continue;
    Elf_Data* data = elf_getdata_rawchunk(elf_, static_cast<int64_t>(ph.p_offset), ph.p_filesz,
                                          ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
    (void)read_notes(data);
  }
}

void Loader::load_debuglink() {
  const Section* s = section_named(".gnu_debuglink");
  if (s == nullptr || s->shdr.sh_type == SHT_NOBITS || s->shdr.sh_size == 0) return;
  Elf_Data* data = elf_getdata(s->scn, nullptr);
  if (data == nullptr || data->d_buf == nullptr) return;
  const char* name = static_cast<const char*>(data->d_buf);
  size_t len = strnlen(name, data->d_size);
  if (len < data->d_size) debuglink.assign(name, len);
}

// Sorts by address and merges entries with the same name and address; within one
// address the preferred symbol comes first.
void merge_candidates(std::vector<Candidate>& c) {
  std::sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) {
    if (a.sym.value != b.sym.value) return a.sym.value < b.sym.value;
    return a.sym.name < b.sym.name;
  });
  size_t out = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (out > 0 && c[out - 1].sym.value == c[i].sym.value && c[out - 1].sym.name == c[i].sym.name) {
      Candidate& d = c[out - 1];
      d.sym.size = std::max(d.sym.size, c[i].sym.size);
      d.sym.ifunc = d.sym.ifunc || c[i].sym.ifunc;
      d.sym.plt = d.sym.plt || c[i].sym.plt;
      d.sym.global = d.sym.global || c[i].sym.global;
      d.sym.dynamic = d.sym.dynamic || c[i].sym.dynamic;
      d.hidden = d.hidden && c[i].hidden;
      continue;
    }
    if (out != i) c[out] = std::move(c[i]);
    ++out;
  }
  c.resize(out);
  for (size_t lo = 0; lo < c.size();) {
    size_t hi = lo + 1;
    while (hi < c.size() && c[hi].sym.value == c[lo].sym.value) ++hi;
    if (hi - lo > 1) {
      std::sort(c.begin() + static_cast<ptrdiff_t>(lo), c.begin() + static_cast<ptrdiff_t>(hi),
                [](const Candidate& a, const Candidate& b) {
                  if (rank(a) != rank(b)) return rank(a) < rank(b);
                  return a.sym.name < b.sym.name;
                });
    }
    lo = hi;
  }
}

bool contains(const ElfSymbol& s, uint64_t addr) {
  if (addr < s.value) return false;
  return s.size == 0 ? addr == s.value : addr - s.value < s.size;
}

uint64_t end_of(const ElfSymbol& s) {
  uint64_t len = std::max<uint64_t>(s.size, 1);
  uint64_t end = 0;
  return __builtin_add_overflow(s.value, len, &end) ? ~uint64_t{0} : end;
}

uint64_t name_hash(std::string_view name) { return std::hash<std::string_view>{}(name); }

}  // namespace

ElfImage::~ElfImage() {
  if (file_) ::munmap(const_cast<uint8_t*>(file_), file_size_);
}

std::span<const uint8_t> ElfImage::read_only_bytes(uint64_t vaddr, uint64_t n) const {
  if (!file_) return {};
  for (const ElfSegment& seg : segments_) {
    if (seg.flags & PF_W) continue;
    if (vaddr < seg.vaddr || vaddr - seg.vaddr >= seg.filesz) continue;
    uint64_t off = seg.offset + (vaddr - seg.vaddr);
    uint64_t avail = std::min(seg.filesz - (vaddr - seg.vaddr), file_size_ - std::min(off, file_size_));
    if (n > avail) return {};
    return {file_ + off, static_cast<size_t>(n)};
  }
  return {};
}

std::vector<uint8_t> ElfImage::read_from_disk(uint64_t vaddr, uint64_t n) const {
  std::span<const uint8_t> mapped = read_only_bytes(vaddr, n);
  if (mapped.empty()) return {};
  const auto off = static_cast<off_t>(mapped.data() - file_);
  UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return {};
  std::vector<uint8_t> out(n);
  if (::pread(fd.get(), out.data(), n, off) != static_cast<ssize_t>(n)) return {};
  return out;
}

Result<std::unique_ptr<ElfImage>> ElfImage::open(const std::string& path) {
  static const bool libelf_ready = elf_version(EV_CURRENT) != EV_NONE;
  if (!libelf_ready) return Error::msg(path + ": libelf initialization failed");

  int raw_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (raw_fd < 0) return Error::from_errno(errno, path);
  UniqueFd fd(raw_fd);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Error::from_errno(errno, path);
  if (!S_ISREG(st.st_mode)) return Error::msg(path + ": not a regular file");
  auto file_size = static_cast<uint64_t>(st.st_size);

  // Check the ELF header by hand first, so that short and cut-off files get a clear
  // message instead of whatever libelf makes of them.
  unsigned char hdr[sizeof(Elf64_Ehdr)] = {};
  ssize_t got = read_prefix(fd.get(), hdr, sizeof hdr);
  if (got < 0) return Error::from_errno(errno, path);
  auto have = static_cast<size_t>(got);
  if (have < SELFMAG || std::memcmp(hdr, ELFMAG, SELFMAG) != 0)
    return Error::msg(path + ": not an ELF file");
  if (have < EI_NIDENT) return Error::msg(path + ": truncated ELF (short ELF header)");
  unsigned char cls = hdr[EI_CLASS], enc = hdr[EI_DATA];
  if (cls != ELFCLASS32 && cls != ELFCLASS64)
    return Error::msg(path + ": corrupt ELF: bad ELF class " + std::to_string(cls));
  if (enc != ELFDATA2LSB && enc != ELFDATA2MSB)
    return Error::msg(path + ": corrupt ELF: bad data encoding " + std::to_string(enc));
  bool is64 = cls == ELFCLASS64, msb = enc == ELFDATA2MSB;
  size_t ehsize = is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
  if (have < ehsize) return Error::msg(path + ": truncated ELF (short ELF header)");
  uint64_t phoff = is64 ? load64(hdr + 32, msb) : load32(hdr + 28, msb);
  uint64_t shoff = is64 ? load64(hdr + 40, msb) : load32(hdr + 32, msb);
  uint16_t phentsize = load16(hdr + (is64 ? 54 : 42), msb);
  uint16_t phnum = load16(hdr + (is64 ? 56 : 44), msb);
  uint16_t shentsize = load16(hdr + (is64 ? 58 : 46), msb);
  uint16_t shnum = load16(hdr + (is64 ? 60 : 48), msb);
  if (phnum != 0 && phnum != PN_XNUM &&
      !fits(phoff, uint64_t{phnum} * phentsize, file_size))
    return Error::msg(path + ": truncated ELF (program headers end past the end of the file)");
  if (shoff != 0 && !fits(shoff, uint64_t{std::max<uint16_t>(shnum, 1)} * shentsize, file_size))
    return Error::msg(path + ": truncated ELF (section headers end past the end of the file)");

  ElfPtr elf(elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr));
  if (elf == nullptr) return Error::msg(path + ": cannot read ELF: " + libelf_error());
  if (elf_kind(elf.get()) != ELF_K_ELF) return Error::msg(path + ": not an ELF file");

  Loader loader(path, elf.get(), file_size);
  if (Status s = loader.load(); !s) return s.error();

  auto image = std::unique_ptr<ElfImage>(new ElfImage());
  image->path_ = path;
  image->interp_ = std::move(loader.interp);
  image->build_id_ = std::move(loader.build_id);
  image->debuglink_ = std::move(loader.debuglink);
  image->is_dyn_ = loader.is_dyn;
  image->has_symtab_ = loader.has_symtab;
  if (loader.go) image->walker_ = StackWalker::Go;
  image->shadow_stack_ = loader.shadow_stack;
  image->machine_ = loader.machine;
  image->entry_ = loader.entry;
  image->init_ = loader.init_addr;
  image->segments_ = std::move(loader.segments);
  image->eh_frame_hdr_ = loader.eh_frame_hdr;
  image->eh_frame_hdr_size_ = loader.eh_frame_hdr_size;
  // The file stays mapped (private, read-only; pages are read only when touched) so
  // that unwind tables and code can be read without asking the traced process.
  if (file_size > 0) {
    void* map = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (map != MAP_FAILED) {
      image->file_ = static_cast<const uint8_t*>(map);
      image->file_size_ = file_size;
    }
  }

  std::vector<Candidate>& cands = loader.candidates;
  merge_candidates(cands);
  if (cands.size() > UINT32_MAX) return Error::msg(path + ": corrupt ELF: too many symbols");
  std::vector<uint8_t> ranks(cands.size());
  image->functions_.reserve(cands.size());
  for (size_t i = 0; i < cands.size(); ++i) {
    ranks[i] = static_cast<uint8_t>(rank(cands[i]));
    image->functions_.push_back(std::move(cands[i].sym));
  }
  cands.clear();

  const std::vector<ElfSymbol>& fns = image->functions_;
  image->max_end_.resize(fns.size());
  uint64_t max_end = 0;
  for (size_t i = 0; i < fns.size(); ++i) {
    max_end = std::max(max_end, end_of(fns[i]));
    image->max_end_[i] = max_end;
  }
  // Names are compared by hash first: long mangled names with shared prefixes make
  // plain string sorting slow on big libraries.
  image->by_name_.resize(fns.size());
  for (size_t i = 0; i < fns.size(); ++i)
    image->by_name_[i] = {name_hash(fns[i].name), static_cast<uint32_t>(i)};
  std::sort(image->by_name_.begin(), image->by_name_.end(),
            [&](const std::pair<uint64_t, uint32_t>& a, const std::pair<uint64_t, uint32_t>& b) {
              if (a.first != b.first) return a.first < b.first;
              int cmp = fns[a.second].name.compare(fns[b.second].name);
              if (cmp != 0) return cmp < 0;
              if (ranks[a.second] != ranks[b.second]) return ranks[a.second] < ranks[b.second];
              return a.second < b.second;
            });
  if (image->walker_ == StackWalker::None) {
    if (image->find("JNI_CreateJavaVM")) {
      image->walker_ = StackWalker::Jvm;
    } else {
      for (const ElfSymbol& f : fns)
        if (f.name.starts_with("_ZN2v88internal") || f.name.starts_with("Builtins_")) {
          image->walker_ = StackWalker::V8;
          break;
        }
    }
  }
  return image;
}

const std::vector<std::string>& ElfImage::demangled_names() const {
  std::call_once(demangled_once_, [this] {
    demangled_.reserve(functions_.size());
    for (const ElfSymbol& f : functions_) demangled_.push_back(demangle(f.name));
  });
  return demangled_;
}

const char* ElfImage::stack_walker_name(StackWalker w) {
  switch (w) {
    case StackWalker::Go: return "Go";
    case StackWalker::Jvm: return "a JVM";
    case StackWalker::V8: return "V8";
    case StackWalker::None: break;
  }
  return "none";
}

const ElfSymbol* ElfImage::function_at(uint64_t addr) const {
  auto it = std::upper_bound(functions_.begin(), functions_.end(), addr,
                             [](uint64_t a, const ElfSymbol& s) { return a < s.value; });
  auto i = static_cast<size_t>(it - functions_.begin());
  while (i > 0) {
    --i;
    if (max_end_[i] <= addr) return nullptr;  // nothing at or before i reaches addr
    if (!contains(functions_[i], addr)) continue;
    // The innermost symbol containing addr starts here; take the preferred alias.
    size_t j = i;
    while (j > 0 && functions_[j - 1].value == functions_[i].value) --j;
    for (; j <= i; ++j)
      if (contains(functions_[j], addr)) return &functions_[j];
  }
  return nullptr;
}

const ElfSymbol* ElfImage::find(const std::string& name) const {
  uint64_t hash = name_hash(name);
  auto it = std::lower_bound(by_name_.begin(), by_name_.end(), hash,
                             [](const std::pair<uint64_t, uint32_t>& e, uint64_t h) {
                               return e.first < h;
                             });
  for (; it != by_name_.end() && it->first == hash; ++it)
    if (functions_[it->second].name == name) return &functions_[it->second];
  return nullptr;
}

}  // namespace ft
