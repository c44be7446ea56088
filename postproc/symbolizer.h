// Symbolizer: turns code addresses of a traced process into function, file:line and
// module, offline, from the trace's module records (doc/trace-format.md §3.1) and the
// ELF files they name. Reports that show backtraces (leaks, and later peak, diff,
// flamegraph) share it.
//
// Resolution is two steps, because the module map changes while a trace is read
// (dlclose and a dlopen at the same place replace a module; exec drops them all) and
// differs between processes (ASLR):
//  - locate(): while reading, where an address lies in the module map *at that time*
//    (a Location: the address and the module record it fell in). Cheap, no file read.
//  - key() and resolve(): later, only for the addresses a report shows. key() is the
//    position-independent identity of the code at a Location (module file and
//    link-time address), so reports can merge the same call stack seen in several
//    processes that mapped their modules at different addresses; resolve() says what
//    the code is.
//
// Each module file (path + build-id) is opened once with libdwfl, in its own Dwfl at
// its link-time addresses, and shared by every process and every place it was mapped:
// a runtime address becomes a link-time one by subtracting the load bias of the
// mapping (base, offset) the module record names (common/load_bias.h).
// One Dwfl per file (instead of one per process) is what lets modules of different
// processes, or a module and its replacement, overlap, and makes the cache of resolved
// addresses (keyed by file and link-time address) serve every process: each distinct
// code address is looked up once.
//
// Return addresses (backtrace frames, trace-format §3.4) are resolved at address - 1,
// inside the call instruction: a call that is the last instruction of a function would
// otherwise be attributed to the next function, and its line would be the next line.
//
// Where the files are (ResolveOptions: --sysroot, --debug-dir). A trace may have been
// taken on another machine, whose files are copied under a sysroot; debug info may be
// in separate files. The debug directories are, in this order: each debug_dirs entry,
// then SYSROOT/usr/lib/debug when there is a sysroot, else /usr/lib/debug (with a
// sysroot, this machine's /usr/lib/debug is not searched unless named by debug_dirs).
// Relative directories are taken from the current directory.
//  - The module file. For a module record with path P: SYSROOT/P with a sysroot, never
//    this machine's P (a file of that name here is another build, or another program);
//    P without one. When that file is missing or unreadable, or its build-id differs
//    from the trace's (the file was rebuilt or replaced since), the module is looked for
//    by the trace's build-id in each debug directory, as DIR/.build-id/xx/rest (xx: the
//    first byte in hex, rest: the others; a full binary, or the link to one that debug
//    packages install there). Only a file with the trace's build-id is used; build-ids
//    shorter than 3 bytes are not looked up (as in libdwfl). A module recorded without a
//    build-id (the tracer could not read it) is used unchecked, and not looked up.
//    Absolute symbolic links inside a sysroot lead out of it; the build-id check keeps
//    a different file out.
//  - Its separate debug info (DWARF not in the module file): libdwfl's standard search,
//    dwfl_standard_find_debuginfo, with the path ":.debug:DIR1:...:DIRn" of the debug
//    directories. It looks by build-id first, DIR/.build-id/xx/rest.debug in each
//    directory; then by the .gnu_debuglink name NAME (the module's file name + ".debug"
//    without one): next to the module file that was read, in its .debug/ subdirectory,
//    then DIR/<module file's directory>/NAME in each directory, where libdwfl also
//    tries the directory's tails: for SYSROOT/usr/bin/prog that includes
//    SYSROOT/usr/lib/debug/usr/bin/NAME. A debug file is used only when its build-id is
//    the module's (without one, when the debuglink CRC matches). When DEBUGINFOD_URLS is
//    set, libdwfl also asks those servers, by build-id. A debug directory whose name
//    holds a ':' (the path's separator) cannot be given to libdwfl: it gets a warning
//    and is only used to find module files.
//  - Without any DWARF, functions are named from the ELF symbol table (.symtab, else
//    .dynsym, of the module or its debug file), without file and line.
// A module none of this finds resolves to no function, file or line; it gets one
// warning, the first time an address in it is resolved: one line that names the files
// tried, and why each one that exists was not used. Each module file is opened once.
//
// Code inlined by the compiler resolves to several frames, innermost first, from the
// DWARF inlined-subroutine scopes: the inlined function at the line table's file:line,
// then its callers at their call sites. Names are demangled; a function that has no
// linkage name in the DWARF (a C++ function that was only ever inlined) is shown by its
// qualified name without parameters ("ns::fill_buffer"), and a symbol's version suffix
// ("NAME@@GLIBC_2.34") is dropped.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/demangle.h"
#include "common/trace_record.h"
#include "postproc/trace_reader.h"

namespace ft::post {

// One source-level frame at a code address.
struct SourceFrame {
  std::optional<std::string> function;  // demangled
  std::optional<std::string> file;      // absolute when the DWARF allows it
  std::optional<int64_t> line;
  bool inlined = false;  // this code was inlined into the next frame's function
};

struct ResolvedAddress {
  const std::string* module = nullptr;  // path of the module record; null: in no module
  std::vector<SourceFrame> frames;      // innermost first; never empty
  // The ELF symbol the address lies in, at link-time addresses (symbol_size 0: none,
  // or a symbol without a size). Profiles that place costs inside a function's body
  // (gprof's histogram) need its extent.
  uint64_t symbol_address = 0;
  uint64_t symbol_size = 0;
};

// Where the module files of a trace and their debug info are (see above).
struct ResolveOptions {
  std::string sysroot;                  // --sysroot DIR: module paths are looked up under DIR
  std::vector<std::string> debug_dirs;  // --debug-dir DIR (repeatable): where separate debug files are
};

class Symbolizer {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // An address as the process had it, and the module record it fell in (kNone: none).
  // Stays valid when the module map changes later.
  struct Location {
    uint64_t address = 0;
    uint32_t mapping = kNone;
    bool operator==(const Location&) const = default;
  };

  // The code at a Location, independent of where its module was mapped: the module
  // file and the link-time address. When the file cannot be used, the offset from the
  // start of the file instead (address - base + offset of the mapping). Outside every
  // module: file kNone and the address itself.
  struct CodeKey {
    uint32_t file = kNone;
    uint64_t offset = 0;
    auto operator<=>(const CodeKey&) const = default;
  };

  explicit Symbolizer(Diagnostics& diag, ResolveOptions options = {});
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Forgets the module map: call at the start of each trace file.
  void begin_process();
  // Applies a record to the module map: a `module` record adds its module (replacing
  // those it overlaps), an `exec` record empties the map. Other records are ignored,
  // as are module records without base, end and path.
  void observe(const TraceRecord& record);

  Location locate(uint64_t address) const;
  // Reads the module file the first time (see resolve() for the warnings).
  CodeKey key(const Location& location);

  // What is at the location; at address - 1 when it is a return address. The result
  // stays valid as long as the Symbolizer.
  const ResolvedAddress& resolve(const Location& location, bool return_address);

  // Distinct (file, address) lookups done in ELF and DWARF so far.
  uint64_t lookups() const { return lookups_; }

 private:
  struct ModuleFile;
  struct Search;  // libdwfl's callbacks and debuginfo path, for every module's Dwfl
  struct Mapping {
    uint64_t base = 0, end = 0, offset = 0;
    uint32_t file = kNone;
  };

  // The mapping's file, read, and its load bias; null when it cannot be used.
  ModuleFile* usable_file(const Mapping& m, uint64_t* bias);
  bool load(ModuleFile& f);
  // Opens `file` as f's module; empty when it is usable, else why not.
  std::string open(ModuleFile& f, const std::string& file);
  void lookup(ModuleFile& f, uint64_t vaddr, ResolvedAddress& out);

  Diagnostics& diag_;
  std::string sysroot_;                  // absolute, no trailing '/'; empty: none
  std::vector<std::string> debug_dirs_;  // absolute, in search order, default last
  std::unique_ptr<Search> search_;       // outlives every file's Dwfl
  Demangler demangler_;
  std::vector<std::unique_ptr<ModuleFile>> files_;
  std::map<std::pair<std::string, std::string>, uint32_t> file_index_;  // (path, build-id)
  std::vector<Mapping> mappings_;
  std::map<std::tuple<uint32_t, uint64_t, uint64_t, uint64_t>, uint32_t> mapping_index_;
  std::map<uint64_t, uint32_t> current_;  // the process's module map: base -> mapping
  ResolvedAddress nowhere_;               // for addresses in no module
  uint64_t lookups_ = 0;
};

}  // namespace ft::post
