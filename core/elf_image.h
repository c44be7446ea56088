// ElfImage: what the tracer needs from an ELF file on disk, read with libelf.
//
//  - function symbols from .symtab and .dynsym (merged, one entry per name; a stripped
//    binary still has its exported .dynsym functions), with their link-time address
//    (st_value) and size; STT_GNU_IFUNC symbols are marked (the resolver runs once,
//    the implementation it returns is what should be traced);
//  - synthetic "NAME@plt" symbols for PLT stubs (.plt / .plt.sec, from .rela.plt);
//  - the ELF type (ET_EXEC: addresses are absolute; ET_DYN: add the load bias, which
//    common/load_bias.h computes from the PT_LOAD segments and a mapping), entry point,
//    PT_INTERP, PT_LOAD segments, build-id (NT_GNU_BUILD_ID, hex), .gnu_debuglink and
//    the x86 shadow stack marking (.note.gnu.property).
//
// Errors (missing file, not ELF, truncated or corrupt) are Results naming the path.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/load_bias.h"
#include "common/result.h"

namespace ft {

struct ElfSymbol {
  std::string name;       // mangled, as in the symbol table; PLT stubs are "NAME@plt"
  uint64_t value = 0;     // link-time virtual address
  uint64_t size = 0;
  bool ifunc = false;     // STT_GNU_IFUNC
  bool plt = false;       // synthetic PLT stub
  bool global = false;    // STB_GLOBAL or STB_WEAK
  bool dynamic = false;   // present in .dynsym (exported)
};

using ElfSegment = LoadSegment;  // a PT_LOAD program header

class ElfImage {
 public:
  static Result<std::unique_ptr<ElfImage>> open(const std::string& path);
  ~ElfImage();
  ElfImage(const ElfImage&) = delete;
  ElfImage& operator=(const ElfImage&) = delete;

  const std::string& path() const { return path_; }
  bool is_dyn() const { return is_dyn_; }                    // ET_DYN (PIE executable or shared library)
  bool is_static() const { return interp_.empty(); }         // no PT_INTERP
  const std::string& interp() const { return interp_; }
  uint64_t entry() const { return entry_; }
  // Link-time address of the .init section (the DT_INIT function), 0 if none. It runs
  // once the module and everything loaded with it are relocated.
  uint64_t init() const { return init_; }
  const std::string& build_id() const { return build_id_; }  // lowercase hex, empty if none
  const std::string& debuglink() const { return debuglink_; }
  const std::vector<ElfSegment>& segments() const { return segments_; }
  uint16_t machine() const { return machine_; }              // EM_X86_64, EM_AARCH64
  bool has_symtab() const { return has_symtab_; }            // false: stripped
  // Marked as fit for a shadow stack (x86 CET: GNU_PROPERTY_X86_FEATURE_1_SHSTK in its
  // .note.gnu.property). glibc turns the shadow stack on at start-up when the
  // executable and the libraries loaded with it all say so and the kernel offers it.
  bool shadow_stack() const { return shadow_stack_; }
  // Built by the Go toolchain (.gopclntab, .go.buildinfo or the Go build id note): its
  // runtime moves goroutine stacks and walks them, so the stack is never written.
  bool is_go() const { return walker_ == StackWalker::Go; }
  // A language runtime that walks the native stacks of its threads itself (to collect
  // garbage, throw, deoptimise or print a crash report) and so must never find a
  // replaced return address there: Go (above), a JVM (the module defines
  // JNI_CreateJavaVM: HotSpot's libjvm.so, OpenJ9's libj9vm) or V8 (node and other
  // embedders: v8::internal code or the embedded builtins). Its functions' returns are
  // caught at their return instructions (doc/internals.md section 8c).
  enum class StackWalker : uint8_t { None, Go, Jvm, V8 };
  StackWalker stack_walker() const { return walker_; }
  static const char* stack_walker_name(StackWalker w);

  // Function symbols (STT_FUNC, STT_GNU_IFUNC, PLT stubs) with a non-zero address in
  // this file, sorted by address. Several names may share an address (aliases).
  const std::vector<ElfSymbol>& functions() const { return functions_; }
  // The function whose [value, value+size) contains addr (size 0: exact match).
  const ElfSymbol* function_at(uint64_t addr) const;
  // The demangled names of functions(), in the same order (common/demangle.h),
  // worked out at the first call for all of them (an attach asks before it stops the
  // program's threads: a big C++ program has 100,000 names to demangle).
  const std::vector<std::string>& demangled_names() const;
  const ElfSymbol* find(const std::string& name) const;

  // PT_GNU_EH_FRAME: link-time address and size of .eh_frame_hdr (0 if none), the
  // binary-search table over .eh_frame that unwinders use.
  uint64_t eh_frame_hdr() const { return eh_frame_hdr_; }
  uint64_t eh_frame_hdr_size() const { return eh_frame_hdr_size_; }
  // The n bytes at link-time address vaddr, if they lie in a read-only PT_LOAD segment
  // (code, .rodata, unwind tables), read from the file: what the process has there
  // too, except for the breakpoints functracer planted. Empty if not.
  std::span<const uint8_t> read_only_bytes(uint64_t vaddr, uint64_t n) const;
  // The same bytes read from the file with pread, not through the mapping: the kernel
  // writes a uprobe's int3 into every mapping of the file that may execute, and a
  // read-only private one (functracer's) may; never into the file. Empty if they
  // cannot be read (the file is gone or changed size).
  std::vector<uint8_t> read_from_disk(uint64_t vaddr, uint64_t n) const;
  // The whole file as mapped (empty if it could not be mapped).
  std::span<const uint8_t> file_bytes() const { return {file_, static_cast<size_t>(file_size_)}; }

 private:
  ElfImage() = default;
  std::string path_, interp_, build_id_, debuglink_;
  bool is_dyn_ = false, has_symtab_ = false, shadow_stack_ = false;
  StackWalker walker_ = StackWalker::None;
  mutable std::once_flag demangled_once_;
  mutable std::vector<std::string> demangled_;
  uint16_t machine_ = 0;
  uint64_t entry_ = 0;
  uint64_t init_ = 0;
  uint64_t eh_frame_hdr_ = 0, eh_frame_hdr_size_ = 0;
  const uint8_t* file_ = nullptr;  // the whole file, mapped read-only
  uint64_t file_size_ = 0;
  std::vector<ElfSegment> segments_;
  std::vector<ElfSymbol> functions_;
  // Lookup indexes built by open(): max_end_[i] is the largest end address (value + size,
  // at least value + 1) among functions_[0..i]; by_name_ holds (hash of name, index into
  // functions_) sorted by hash, then name, the preferred symbol of a name first.
  std::vector<uint64_t> max_end_;
  std::vector<std::pair<uint64_t, uint32_t>> by_name_;
};

}  // namespace ft
