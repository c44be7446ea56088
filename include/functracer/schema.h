/*
 * functracer record schema — the record types and field keys of trace files
 * (doc/trace-format.md, section 3), and typed views of the records the bundled
 * plugins write.
 *
 * Why here: the writers (the engine, the plugins) and the reader (functracer-postproc)
 * must agree on every name. Plugins see only include/functracer/, so the names live
 * in this header-only file and both sides use it instead of spelling the strings.
 * Nothing here is part of the C ABI of plugin.h; it is C++20, inline, and depends on
 * the standard library only.
 *
 * A view (AllocRecord, FdOpenRecord, ...) is a plain struct with the record's fields.
 * It is written through any Writer with
 *     str(key, std::string_view)  integer(key, int64_t)  hex(key, uint64_t)
 *     list(key, const uint64_t *, size_t)
 * (ft::sdk::RecordBuilder for plugins, ft::TraceRecordWriter in common/) and read
 * from any Reader with
 *     get_str(key) -> const std::string *   get_int(key) -> std::optional<int64_t>
 *     get_hex(key) -> std::optional<uint64_t>   get_list(key) -> const std::vector<uint64_t> *
 * (ft::TraceRecord). A view read from a record borrows its strings and lists: it is
 * valid while the record is. read() returns nothing when a field the type always has
 * is missing or of another form.
 */
#ifndef FUNCTRACER_SCHEMA_H
#define FUNCTRACER_SCHEMA_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ft::schema {

// Record types (TYPE of a line).
namespace type {
inline constexpr char kHeader[] = "header";
inline constexpr char kModule[] = "module";
inline constexpr char kProcess[] = "process";
inline constexpr char kThread[] = "thread";
inline constexpr char kThreadExit[] = "thread_exit";
inline constexpr char kExec[] = "exec";
inline constexpr char kSignal[] = "signal";
inline constexpr char kExit[] = "exit";
inline constexpr char kKilled[] = "killed";
inline constexpr char kDetach[] = "detach";
inline constexpr char kLost[] = "lost";
inline constexpr char kStats[] = "stats";
inline constexpr char kUntraced[] = "untraced";
// A call stack written once and referred to by later records (section 3.2).
inline constexpr char kStack[] = "stack";
// calls (section 3.3)
inline constexpr char kCall[] = "call";
inline constexpr char kReturn[] = "return";
inline constexpr char kUnwound[] = "unwound";
// memtrace (section 3.5)
inline constexpr char kAlloc[] = "alloc";
inline constexpr char kFree[] = "free";
inline constexpr char kAllocFailed[] = "alloc_failed";
inline constexpr char kBadFree[] = "bad_free";
inline constexpr char kMap[] = "map";
inline constexpr char kUnmap[] = "unmap";
inline constexpr char kLeakScan[] = "leak_scan";
inline constexpr char kLeak[] = "leak";
// fileops (section 3.6)
inline constexpr char kFdOpen[] = "fd_open";
inline constexpr char kFdClose[] = "fd_close";
inline constexpr char kFileOpen[] = "file_open";
inline constexpr char kFileClose[] = "file_close";
}  // namespace type

// Field keys.
namespace key {
inline constexpr char kFunction[] = "function";
inline constexpr char kAddress[] = "address";
inline constexpr char kSize[] = "size";
inline constexpr char kAlign[] = "align";
inline constexpr char kFrames[] = "frames";
// In place of `frames`: the id of an earlier `stack` record holding them.
inline constexpr char kStack[] = "stack";
inline constexpr char kId[] = "id";
inline constexpr char kReason[] = "reason";
inline constexpr char kDepth[] = "depth";
inline constexpr char kArgs[] = "args";
inline constexpr char kFargs[] = "fargs";
inline constexpr char kNargs[] = "nargs";
inline constexpr char kTypes[] = "types";
inline constexpr char kRetval[] = "retval";
inline constexpr char kFretval[] = "fretval";
inline constexpr char kCallsite[] = "callsite";
inline constexpr char kRetstr[] = "retstr";
inline constexpr char kFd[] = "fd";
inline constexpr char kPath[] = "path";
inline constexpr char kName[] = "name";
inline constexpr char kStream[] = "stream";
inline constexpr char kMode[] = "mode";
inline constexpr char kCommand[] = "command";
inline constexpr char kCount[] = "count";
inline constexpr char kExe[] = "exe";
inline constexpr char kSignal[] = "signal";
inline constexpr char kStatus[] = "status";
inline constexpr char kPlugins[] = "plugins";
inline constexpr char kCmdline[] = "cmdline";
inline constexpr char kBuildId[] = "build_id";
// The engine's own records (header, module, lifecycle).
inline constexpr char kFormat[] = "format";
inline constexpr char kArch[] = "arch";
inline constexpr char kPid[] = "pid";
inline constexpr char kStartRealtimeNs[] = "start_realtime_ns";
inline constexpr char kBacktraceDepth[] = "backtrace_depth";
inline constexpr char kBase[] = "base";
inline constexpr char kEnd[] = "end";
inline constexpr char kOffset[] = "offset";
inline constexpr char kDeleted[] = "deleted";
inline constexpr char kParent[] = "parent";
inline constexpr char kPpid[] = "ppid";
inline constexpr char kAttached[] = "attached";
// memtrace's leak scan (section 3.5)
inline constexpr char kKind[] = "kind";
inline constexpr char kBlocks[] = "blocks";
inline constexpr char kBytes[] = "bytes";
inline constexpr char kRoots[] = "roots";
inline constexpr char kElapsedNs[] = "elapsed_ns";
// The string arguments of a call, keyed by the integer argument register (0..5).
inline constexpr const char* kStr[6] = {"str0", "str1", "str2", "str3", "str4", "str5"};
// The structure arguments of a call as shown (members, std::string text), keyed by
// the integer argument register that holds the structure or its address.
inline constexpr const char* kStruct[6] = {"struct0", "struct1", "struct2", "struct3", "struct4", "struct5"};
// The thread a goroutine's record happened on (its TID is -goroutine).
inline constexpr char kThread[] = "thread";
}  // namespace key

// The bundled plugins' names, as the header's `plugins` field lists them.
namespace plugin {
inline constexpr char kCalltrace[] = "calltrace";
inline constexpr char kMemtrace[] = "memtrace";
inline constexpr char kFileops[] = "fileops";
}  // namespace plugin

// The `reason` of a bad_free record.
namespace reason {
inline constexpr char kDouble[] = "double";
inline constexpr char kUnknown[] = "unknown";
inline constexpr char kAllocator[] = "allocator";
}  // namespace reason

// The `kind` of a leak record (memcheck's kinds; still reachable blocks get no record).
namespace leak_kind {
inline constexpr char kDefinite[] = "definite";
inline constexpr char kIndirect[] = "indirect";
inline constexpr char kPossible[] = "possible";
inline constexpr char kReachable[] = "reachable";
}  // namespace leak_kind

// A list of hex values (frames, args) borrowed from the record or the writer.
struct HexSpan {
  const uint64_t* data = nullptr;
  size_t size = 0;
  bool empty() const { return size == 0; }
  const uint64_t* begin() const { return data; }
  const uint64_t* end() const { return data + size; }
};

namespace detail {

template <class Reader>
std::optional<std::string_view> str(const Reader& r, const char* k) {
  if (const auto* s = r.get_str(k)) return std::string_view(*s);
  return std::nullopt;
}

template <class Reader>
HexSpan list(const Reader& r, const char* k) {
  if (const auto* l = r.get_list(k)) return HexSpan{l->data(), l->size()};
  return {};
}

// Sizes and counts are integers; a negative one (a hostile trace) reads as 0.
template <class Reader>
uint64_t count(const Reader& r, const char* k) {
  return static_cast<uint64_t>(std::max<int64_t>(r.get_int(k).value_or(0), 0));
}

// The largest size an integer field can hold: sizes above it are written as it.
inline int64_t clamp_size(uint64_t v) {
  return v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v);
}

template <class Writer>
void frames(Writer& w, HexSpan f) {
  if (!f.empty()) w.list(key::kFrames, f.data, f.size);
}

}  // namespace detail

// `alloc`: a block of `size` bytes became live at `address`.
struct AllocRecord {
  static constexpr const char* kType = type::kAlloc;
  std::string_view function;
  uint64_t size = 0;
  uint64_t address = 0;
  uint64_t align = 0;  // 0: not an aligned allocator (no field)
  HexSpan frames;

  template <class Writer>
  void write(Writer& w) const {
    w.str(key::kFunction, function);
    w.integer(key::kSize, detail::clamp_size(size));
    w.hex(key::kAddress, address);
    if (align) w.integer(key::kAlign, static_cast<int64_t>(align));
    detail::frames(w, frames);
  }
  template <class Reader>
  static std::optional<AllocRecord> read(const Reader& r) {
    auto address = r.get_hex(key::kAddress);
    if (!address) return std::nullopt;
    AllocRecord a;
    a.function = detail::str(r, key::kFunction).value_or(std::string_view());
    a.size = detail::count(r, key::kSize);
    a.address = *address;
    a.align = detail::count(r, key::kAlign);
    a.frames = detail::list(r, key::kFrames);
    return a;
  }
};

// `leak_scan`: the process's memory was scanned for pointers to its live blocks (at
// its end, `reason` "exit", or before a detach, "detach"); `leak` records for the
// blocks found lost follow it, every other block live then is still reachable.
struct LeakScanRecord {
  static constexpr const char* kType = type::kLeakScan;
  std::string_view reason;
  uint64_t blocks = 0, bytes = 0;  // live blocks scanned, their bytes
  uint64_t roots = 0;              // bytes of root memory read
  uint64_t elapsed_ns = 0;

  template <class Writer>
  void write(Writer& w) const {
    w.str(key::kReason, reason);
    w.integer(key::kBlocks, detail::clamp_size(blocks));
    w.integer(key::kBytes, detail::clamp_size(bytes));
    w.integer(key::kRoots, detail::clamp_size(roots));
    w.integer(key::kElapsedNs, detail::clamp_size(elapsed_ns));
  }
  template <class Reader>
  static std::optional<LeakScanRecord> read(const Reader& r) {
    auto reason = detail::str(r, key::kReason);
    if (!reason) return std::nullopt;
    LeakScanRecord l;
    l.reason = *reason;
    l.blocks = detail::count(r, key::kBlocks);
    l.bytes = detail::count(r, key::kBytes);
    l.roots = detail::count(r, key::kRoots);
    l.elapsed_ns = detail::count(r, key::kElapsedNs);
    return l;
  }
};

// `leak`: a live block the last leak_scan found lost; `kind` is one of leak_kind.
struct LeakRecord {
  static constexpr const char* kType = type::kLeak;
  uint64_t address = 0;
  std::string_view kind;

  template <class Writer>
  void write(Writer& w) const {
    w.hex(key::kAddress, address);
    w.str(key::kKind, kind);
  }
  template <class Reader>
  static std::optional<LeakRecord> read(const Reader& r) {
    auto address = r.get_hex(key::kAddress);
    auto kind = detail::str(r, key::kKind);
    if (!address || !kind) return std::nullopt;
    return LeakRecord{*address, *kind};
  }
};

// `free`: a live block was released.
struct FreeRecord {
  static constexpr const char* kType = type::kFree;
  std::string_view function;
  uint64_t address = 0;
  HexSpan frames;

  template <class Writer>
  void write(Writer& w) const {
    w.str(key::kFunction, function);
    w.hex(key::kAddress, address);
    detail::frames(w, frames);
  }
  template <class Reader>
  static std::optional<FreeRecord> read(const Reader& r) {
    auto address = r.get_hex(key::kAddress);
    if (!address) return std::nullopt;
    FreeRecord f;
    f.function = detail::str(r, key::kFunction).value_or(std::string_view());
    f.address = *address;
    f.frames = detail::list(r, key::kFrames);
    return f;
  }
};

// `bad_free`: a release of an address that is not live (reason:: kDouble, kUnknown,
// kAllocator).
// What could not be traced (the engine writes these for functions; a plugin for the
// events it knows it missed): every report warns that its totals are incomplete.
struct UntracedRecord {
  static constexpr const char* kType = type::kUntraced;
  std::string_view function;
  uint64_t address = 0;
  std::string_view reason;

  template <class Writer>
  void write(Writer& w) const {
    w.str(key::kFunction, function);
    w.hex(key::kAddress, address);
    w.str(key::kReason, reason);
  }
};

struct BadFreeRecord {
  static constexpr const char* kType = type::kBadFree;
  std::string_view function;
  uint64_t address = 0;
  std::string_view reason;
  HexSpan frames;

  template <class Writer>
  void write(Writer& w) const {
    w.str(key::kFunction, function);
    w.hex(key::kAddress, address);
    w.str(key::kReason, reason);
    detail::frames(w, frames);
  }
  template <class Reader>
  static std::optional<BadFreeRecord> read(const Reader& r) {
    auto address = r.get_hex(key::kAddress);
    if (!address) return std::nullopt;
    BadFreeRecord b;
    b.function = detail::str(r, key::kFunction).value_or(std::string_view());
    b.address = *address;
    b.reason = detail::str(r, key::kReason).value_or(std::string_view());
    b.frames = detail::list(r, key::kFrames);
    return b;
  }
};

// `alloc_failed`: an allocation returned no memory.
struct AllocFailedRecord {
  static constexpr const char* kType = type::kAllocFailed;
  std::string_view function;
  uint64_t size = 0;
  HexSpan frames;

  template <class Writer>
  void write(Writer& w) const {
    w.str(key::kFunction, function);
    w.integer(key::kSize, detail::clamp_size(size));
    detail::frames(w, frames);
  }
  template <class Reader>
  static std::optional<AllocFailedRecord> read(const Reader& r) {
    AllocFailedRecord a;
    a.function = detail::str(r, key::kFunction).value_or(std::string_view());
    a.size = detail::count(r, key::kSize);
    a.frames = detail::list(r, key::kFrames);
    return a;
  }
};

// `map` and `unmap` (the type is the caller's): pages mapped or unmapped.
struct MappingRecord {
  std::string_view function;
  uint64_t address = 0;
  uint64_t size = 0;
  HexSpan frames;

  template <class Writer>
  void write(Writer& w) const {
    w.str(key::kFunction, function);
    w.hex(key::kAddress, address);
    w.integer(key::kSize, static_cast<int64_t>(size));
    detail::frames(w, frames);
  }
  template <class Reader>
  static std::optional<MappingRecord> read(const Reader& r) {
    auto address = r.get_hex(key::kAddress);
    if (!address) return std::nullopt;
    MappingRecord m;
    m.function = detail::str(r, key::kFunction).value_or(std::string_view());
    m.address = *address;
    m.size = detail::count(r, key::kSize);
    m.frames = detail::list(r, key::kFrames);
    return m;
  }
};

// `fd_open` / `fd_close` (the type is the caller's): `path_key` is kPath, or kName
// for memfd_create; a close has no path.
struct FdRecord {
  std::string_view function;
  int64_t fd = -1;
  const char* path_key = key::kPath;
  std::optional<std::string_view> path;
  HexSpan frames;

  template <class Writer>
  void write(Writer& w) const {
    w.str(key::kFunction, function);
    w.integer(key::kFd, fd);
    if (path) w.str(path_key, *path);
    detail::frames(w, frames);
  }
  template <class Reader>
  static std::optional<FdRecord> read(const Reader& r) {
    auto fd = r.get_int(key::kFd);
    if (!fd) return std::nullopt;
    FdRecord f;
    f.function = detail::str(r, key::kFunction).value_or(std::string_view());
    f.fd = *fd;
    f.path = detail::str(r, key::kPath);
    if (!f.path) {
      f.path = detail::str(r, key::kName);
      if (f.path) f.path_key = key::kName;
    }
    f.frames = detail::list(r, key::kFrames);
    return f;
  }
};

// `file_open` / `file_close` (the type is the caller's): `path_key` is kPath, or
// kCommand for popen; a close has only function, stream and frames.
struct StreamRecord {
  std::string_view function;
  uint64_t stream = 0;
  std::optional<int64_t> fd;  // file_open: -1 when unknown
  const char* path_key = key::kPath;
  std::optional<std::string_view> path;
  std::optional<std::string_view> mode;
  HexSpan frames;

  template <class Writer>
  void write(Writer& w) const {
    w.str(key::kFunction, function);
    w.hex(key::kStream, stream);
    if (fd) w.integer(key::kFd, *fd);
    if (path) w.str(path_key, *path);
    if (mode) w.str(key::kMode, *mode);
    detail::frames(w, frames);
  }
  template <class Reader>
  static std::optional<StreamRecord> read(const Reader& r) {
    auto stream = r.get_hex(key::kStream);
    if (!stream) return std::nullopt;
    StreamRecord s;
    s.function = detail::str(r, key::kFunction).value_or(std::string_view());
    s.stream = *stream;
    s.fd = r.get_int(key::kFd);
    s.path = detail::str(r, key::kPath);
    if (!s.path) {
      s.path = detail::str(r, key::kCommand);
      if (s.path) s.path_key = key::kCommand;
    }
    s.mode = detail::str(r, key::kMode);
    s.frames = detail::list(r, key::kFrames);
    return s;
  }
};

// `call`, `return`, `unwound` share their first fields (section 3.3). The writers
// always give the depth; a reader tolerates a record without one (the caller decides
// what depth it stands for).
struct FrameFields {
  std::string_view function;
  uint64_t address = 0;
  std::optional<int64_t> depth;

  template <class Writer>
  void write(Writer& w) const {
    w.str(key::kFunction, function);
    w.hex(key::kAddress, address);
    if (depth) w.integer(key::kDepth, *depth);
  }
  template <class Reader>
  static FrameFields read(const Reader& r) {
    FrameFields f;
    f.function = detail::str(r, key::kFunction).value_or(std::string_view());
    f.address = r.get_hex(key::kAddress).value_or(0);
    f.depth = r.get_int(key::kDepth);
    return f;
  }
};

// The integer argument registers a call record describes (str0..str5, args).
inline constexpr size_t kArgRegisters = 6;

// `call`: a traced function was entered. `args` are the integer argument registers;
// `fargs` the floating-point argument registers in use; `nargs` and `types` say how
// many parameters there are and of what kind, when that is known; strings[i] is the
// string argument register i points to (key::kStr[i]); `callsite` is the return
// address the function was called with (the instruction after the call), absent in
// traces written before it was recorded and when it could not be read; structs[i]
// the text shown for the structure argument register i holds or points to
// (key::kStruct[i], with --struct-depth).
struct CallRecord {
  static constexpr const char* kType = type::kCall;
  FrameFields frame;
  HexSpan args;
  HexSpan fargs;
  std::optional<int64_t> nargs;
  std::optional<std::string_view> types;
  std::optional<std::string_view> strings[kArgRegisters];
  std::optional<uint64_t> callsite = std::nullopt;  // defaulted: older initializers stay complete
  std::optional<std::string_view> structs[kArgRegisters] = {};

  template <class Writer>
  void write(Writer& w) const {
    frame.write(w);
    if (callsite) w.hex(key::kCallsite, *callsite);
    if (!args.empty()) w.list(key::kArgs, args.data, args.size);
    if (!fargs.empty()) w.list(key::kFargs, fargs.data, fargs.size);
    if (nargs) w.integer(key::kNargs, *nargs);
    if (types) w.str(key::kTypes, *types);
    for (size_t i = 0; i < kArgRegisters; ++i) {
      if (strings[i]) w.str(key::kStr[i], *strings[i]);
    }
    for (size_t i = 0; i < kArgRegisters; ++i) {
      if (structs[i]) w.str(key::kStruct[i], *structs[i]);
    }
  }
  template <class Reader>
  static CallRecord read(const Reader& r) {
    CallRecord c;
    c.frame = FrameFields::read(r);
    c.args = detail::list(r, key::kArgs);
    c.fargs = detail::list(r, key::kFargs);
    c.nargs = r.get_int(key::kNargs);
    c.types = detail::str(r, key::kTypes);
    for (size_t i = 0; i < kArgRegisters; ++i) c.strings[i] = detail::str(r, key::kStr[i]);
    c.callsite = r.get_hex(key::kCallsite);
    for (size_t i = 0; i < kArgRegisters; ++i) c.structs[i] = detail::str(r, key::kStruct[i]);
    return c;
  }
};

// `unwound`: the frame was left without a return.
struct UnwoundRecord {
  static constexpr const char* kType = type::kUnwound;
  FrameFields frame;
  std::string_view reason;

  template <class Writer>
  void write(Writer& w) const {
    frame.write(w);
    w.str(key::kReason, reason);
  }
  // A record without a reason reads as reason "unknown".
  template <class Reader>
  static UnwoundRecord read(const Reader& r) {
    return UnwoundRecord{FrameFields::read(r), detail::str(r, key::kReason).value_or("unknown")};
  }
};

// `return`: the frame returned; fretval only for floating-point returns, retstr
// only for a string return (the text retval points to).
struct ReturnRecord {
  static constexpr const char* kType = type::kReturn;
  FrameFields frame;
  uint64_t retval = 0;
  std::optional<uint64_t> fretval;
  std::optional<std::string_view> retstr = std::nullopt;

  template <class Writer>
  void write(Writer& w) const {
    frame.write(w);
    w.hex(key::kRetval, retval);
    if (fretval) w.hex(key::kFretval, *fretval);
    if (retstr) w.str(key::kRetstr, *retstr);
  }
  template <class Reader>
  static ReturnRecord read(const Reader& r) {
    return ReturnRecord{FrameFields::read(r), r.get_hex(key::kRetval).value_or(0), r.get_hex(key::kFretval),
                        detail::str(r, key::kRetstr)};
  }
};

// `module` (the engine's, section 3.1): a file mapped at base..end from `offset` of
// the file; build_id is empty when the file has none (or is not ELF).
struct ModuleRecord {
  static constexpr const char* kType = type::kModule;
  uint64_t base = 0;
  uint64_t end = 0;
  uint64_t offset = 0;
  std::string_view path;
  std::string_view build_id;
  bool deleted = false;

  template <class Writer>
  void write(Writer& w) const {
    w.hex(key::kBase, base);
    w.hex(key::kEnd, end);
    w.hex(key::kOffset, offset);
    w.str(key::kPath, path);
    w.str(key::kBuildId, build_id);
    if (deleted) w.integer(key::kDeleted, 1);
  }
  // Nothing without base, end and path, or when end is not above base.
  template <class Reader>
  static std::optional<ModuleRecord> read(const Reader& r) {
    auto base = r.get_hex(key::kBase);
    auto end = r.get_hex(key::kEnd);
    auto path = detail::str(r, key::kPath);
    if (!base || !end || !path || *end <= *base) return std::nullopt;
    ModuleRecord m;
    m.base = *base;
    m.end = *end;
    m.offset = r.get_hex(key::kOffset).value_or(0);
    m.path = *path;
    m.build_id = detail::str(r, key::kBuildId).value_or(std::string_view());
    m.deleted = r.get_int(key::kDeleted).value_or(0) != 0;
    return m;
  }
};

}  // namespace ft::schema

#endif /* FUNCTRACER_SCHEMA_H */
