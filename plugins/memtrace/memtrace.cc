// memtrace: follows the heap blocks of the traced processes — every allocator entry
// point a C or C++ program uses — and records when each block becomes live and when it
// is released, with a backtrace, so that functracer-postproc can report leaks, peaks
// and allocation hot spots (records: doc/trace-format.md, section 3.5).
//
// Cost: an allocation is one ptrace stop: its arguments and call stack are taken at
// the entry, and its return (the block) is handled in the process and delivered at a
// later stop (FT_TRACE_RETURN_VALUE); posix_memalign, whose block is in memory, and
// the mappings take two. free is one (entry only). Calls made inside another allocator call on the same thread
// (calloc calling malloc in some allocators, operator new calling malloc) are skipped:
// a block is recorded once, by the entry point the program called.
//
// Options: -b N frames per allocation (10 by default, 0: none), -A frames for
// releases too, -M SIZES frames only for allocations of these sizes (100,4096-8192),
// -e memtrace:mmap also records mmap/munmap/mremap as a separate resource.
#include <algorithm>
#include <cstdarg>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "functracer/plugin.h"

namespace {

const ft_host_api* host = nullptr;

// What an entry point does, and where its arguments are. The tag of every traced
// function (ft_function.tag) is its Kind.
enum Kind : uint64_t {
  kNone,
  kMalloc,         // (size)
  kCalloc,         // (nmemb, size)
  kRealloc,        // (ptr, size)
  kReallocArray,   // (ptr, nmemb, size)
  kFree,           // (ptr)
  kMemalign,       // (align, size): memalign, aligned_alloc
  kPosixMemalign,  // (void **memptr, align, size) -> 0 or an error number
  kValloc,         // (size): valloc, pvalloc
  kNew,            // (size): throws on failure
  kNewNothrow,     // (size, const nothrow_t&)
  kNewAligned,     // (size, align_val_t)
  kNewAlignedNothrow,
  kDelete,         // (ptr, ...): every operator delete/delete[]
  kMmap,           // (addr, len, prot, flags, fd, off)
  kMunmap,         // (addr, len)
  kMremap,         // (old, old_len, new_len, flags, ...)
};

struct Name {
  const char* name;
  Kind kind;
};

// Linkage names: C functions, and operator new/delete of the Itanium C++ ABI
// (_Znwm: new(size_t), _Znam: new[](size_t), _ZdlPv: delete(void*), ...).
constexpr Name kNames[] = {
    {"malloc", kMalloc},
    {"calloc", kCalloc},
    {"realloc", kRealloc},
    {"reallocarray", kReallocArray},
    {"free", kFree},
    {"cfree", kFree},
    {"memalign", kMemalign},
    {"aligned_alloc", kMemalign},
    {"posix_memalign", kPosixMemalign},
    {"valloc", kValloc},
    {"pvalloc", kValloc},
    {"_Znwm", kNew},
    {"_Znam", kNew},
    {"_ZnwmRKSt9nothrow_t", kNewNothrow},
    {"_ZnamRKSt9nothrow_t", kNewNothrow},
    {"_ZnwmSt11align_val_t", kNewAligned},
    {"_ZnamSt11align_val_t", kNewAligned},
    {"_ZnwmSt11align_val_tRKSt9nothrow_t", kNewAlignedNothrow},
    {"_ZnamSt11align_val_tRKSt9nothrow_t", kNewAlignedNothrow},
    {"_ZdlPv", kDelete},
    {"_ZdaPv", kDelete},
    {"_ZdlPvm", kDelete},
    {"_ZdaPvm", kDelete},
    {"_ZdlPvSt11align_val_t", kDelete},
    {"_ZdaPvSt11align_val_t", kDelete},
    {"_ZdlPvmSt11align_val_t", kDelete},
    {"_ZdaPvmSt11align_val_t", kDelete},
    {"_ZdlPvRKSt9nothrow_t", kDelete},
    {"_ZdaPvRKSt9nothrow_t", kDelete},
    {"_ZdlPvSt11align_val_tRKSt9nothrow_t", kDelete},
    {"_ZdaPvSt11align_val_tRKSt9nothrow_t", kDelete},
    {"mmap", kMmap},
    {"mmap64", kMmap},
    {"munmap", kMunmap},
    {"mremap", kMremap},
};

bool is_mapping(Kind k) { return k == kMmap || k == kMunmap || k == kMremap; }

struct Options {
  unsigned depth = 10;
  bool frames_for_releases = false;
  bool mmap = false;
  std::vector<std::pair<uint64_t, uint64_t>> monitor;  // size ranges; empty: every size
  bool streaming = false;
};
Options opts;

// A block allocated or released by an allocator call made inside another one (the
// malloc inside operator new). It is decided on when the outermost call ends: what
// that call itself returned or released is the same block and is not recorded
// twice; anything else (the exception object a failing operator new allocates, the
// blocks a custom allocator keeps for itself) is recorded then.
struct Inner {
  bool alloc = false;  // else a release
  std::string function;
  uint64_t addr = 0, size = 0, align = 0;
};

// A call waiting for its return.
struct Pending {
  Kind kind = kNone;
  std::string function;  // linkage name (the host's string lives only during a callback)
  unsigned depth = 0;    // host depth of the call
  bool outer = false;    // not inside another allocator call
  uint64_t size = 0, align = 0, ptr = 0, memptr = 0, len = 0;
  bool size_overflow = false;
  std::vector<Inner> inner;  // outermost call only
  // Outermost call only: its call stack, taken at the entry (the same as at the return,
  // where the records are made; the return itself is handled without a stop).
  std::vector<ft_addr> frames;
  bool have_frames = false;
};

// The call stack of the outermost call whose return is being handled, for its records.
const Pending* g_returning = nullptr;

struct ThreadState {
  std::vector<Pending> open;  // innermost last; open.size() allocator calls are under way
};

// What an allocator call did, from its arguments and its result.
struct Outcome {
  uint64_t released = 0;   // a block it released
  uint64_t allocated = 0;  // the block it returned
  bool failed = false;     // no memory
};

struct Block {
  uint64_t size = 0;
};

struct Mapping {
  uint64_t base = 0, end = 0;
  std::string path;
};

struct ProcessState {
  std::unordered_map<uint64_t, Block> live;
  std::unordered_set<uint64_t> released;  // released and not allocated again
  std::vector<Mapping> modules;           // mapped executables and libraries
  bool attached = false;
  uint64_t allocs = 0, frees = 0, failed = 0, bad_unknown = 0, bad_double = 0, by_allocator = 0;
  uint64_t live_bytes = 0, peak_bytes = 0;
};

// A vfork child shares its parent's state until it execs.
std::unordered_map<int, std::shared_ptr<ProcessState>> processes;
std::unordered_map<int, ThreadState> threads;
unsigned warnings_left = 10;

ProcessState& process_of(ft_ctx* ctx) {
  auto& ps = processes[host->pid(ctx)];
  if (!ps) ps = std::make_shared<ProcessState>();
  return *ps;
}

bool parse_u64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9' || v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

bool parse_monitor(std::string_view s) {
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
    size_t dash = item.find('-');
    uint64_t lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (!parse_u64(item, &lo)) return false;
      hi = lo;
    } else if (!parse_u64(item.substr(0, dash), &lo) || !parse_u64(item.substr(dash + 1), &hi) || hi < lo) {
      return false;
    }
    opts.monitor.emplace_back(lo, hi);
  }
  return !opts.monitor.empty();
}

bool monitored(uint64_t size) {
  if (opts.monitor.empty()) return true;
  for (auto [lo, hi] : opts.monitor)
    if (size >= lo && size <= hi) return true;
  return false;
}

// Records one event; frames are taken when wanted.
class Rec {
 public:
  Rec(ft_ctx* ctx, const char* type, const char* function) : ctx_(ctx), type_(type) {
    add_str("function", function);
  }
  Rec& add_str(const char* key, const char* s) {
    ft_field f{};
    f.key = key;
    f.kind = FT_FIELD_STRING;
    f.s = s;
    fields_[n_++] = f;
    return *this;
  }
  Rec& add_int(const char* key, int64_t v) {
    ft_field f{};
    f.key = key;
    f.kind = FT_FIELD_INT;
    f.i = v;
    fields_[n_++] = f;
    return *this;
  }
  Rec& add_hex(const char* key, uint64_t v) {
    ft_field f{};
    f.key = key;
    f.kind = FT_FIELD_HEX;
    f.u = v;
    fields_[n_++] = f;
    return *this;
  }
  Rec& frames(bool want) {
    if (!want || opts.depth == 0) return *this;
    int n;
    if (g_returning && g_returning->have_frames) {
      n = static_cast<int>(std::min<size_t>(g_returning->frames.size(), kMaxDepth));
      std::copy_n(g_returning->frames.begin(), n, frames_);
    } else {
      n = host->backtrace(ctx_, frames_, static_cast<int>(opts.depth));
    }
    if (n <= 0) return *this;
    ft_field f{};
    f.key = "frames";
    f.kind = FT_FIELD_HEX_LIST;
    f.list = frames_;
    f.list_len = static_cast<size_t>(n);
    fields_[n_++] = f;
    return *this;
  }
  void write() { host->record(ctx_, type_, fields_, n_); }

 private:
  static constexpr unsigned kMaxDepth = 1024;
  ft_ctx* ctx_;
  const char* type_;
  ft_field fields_[8];
  size_t n_ = 0;
  uint64_t frames_[kMaxDepth];
};

void print(ft_ctx* ctx, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void print(ft_ctx* ctx, const char* fmt, ...) {
  if (!opts.streaming) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  host->print(ctx, line);
}

void record_alloc(ft_ctx* ctx, const char* fn, uint64_t addr, uint64_t size, uint64_t align) {
  ProcessState& ps = process_of(ctx);
  auto [it, fresh] = ps.live.try_emplace(addr, Block{size});
  if (!fresh) {
    // The allocator handed out a block that is still live for us: its release went
    // by a path memtrace does not see. Count the old one as released.
    ps.live_bytes -= it->second.size;
    it->second.size = size;
  }
  ps.released.erase(addr);
  ++ps.allocs;
  ps.live_bytes += size;
  if (ps.live_bytes > ps.peak_bytes) ps.peak_bytes = ps.live_bytes;
  Rec r(ctx, "alloc", fn);
  r.add_int("size", static_cast<int64_t>(size > INT64_MAX ? INT64_MAX : size)).add_hex("address", addr);
  if (align) r.add_int("align", static_cast<int64_t>(align));
  r.frames(monitored(size)).write();
}

void record_failed(ft_ctx* ctx, const char* fn, uint64_t size) {
  ++process_of(ctx).failed;
  Rec r(ctx, "alloc_failed", fn);
  r.add_int("size", static_cast<int64_t>(size > INT64_MAX ? INT64_MAX : size)).frames(true).write();
  print(ctx, "%s(%" PRIu64 ") failed", fn, size);
}

const Mapping* module_at(const ProcessState& ps, uint64_t addr) {
  for (const Mapping& m : ps.modules)
    if (addr >= m.base && addr < m.end) return &m;
  return nullptr;
}

// Whether the release being entered was called from the module that defines the
// releasing function (at entry, entry is that function's address): the allocator
// tidying up after itself. glibc's thread exit (tcache_thread_shutdown) hands the
// blocks its per-thread cache holds, which the program had released, to free once
// more, and then the cache itself, which it allocated without malloc.
bool called_by_allocator(ft_ctx* ctx, const ProcessState& ps, uint64_t entry) {
  const Mapping* own = entry ? module_at(ps, entry) : nullptr;
  if (!own) return false;
  ft_addr caller = 0;
  if (host->backtrace(ctx, &caller, 1) != 1 || caller == 0) return false;
  return module_at(ps, caller - 1) == own;
}

// A release of addr (not NULL). Returns false for an address that is not live.
// entry: the address of the releasing function when the release is seen at its entry
// (0 otherwise).
bool record_release(ft_ctx* ctx, const char* fn, uint64_t addr, uint64_t entry = 0) {
  ProcessState& ps = process_of(ctx);
  auto it = ps.live.find(addr);
  if (it != ps.live.end()) {
    ps.live_bytes -= it->second.size;
    ps.live.erase(it);
    ps.released.insert(addr);
    ++ps.frees;
    Rec(ctx, "free", fn).add_hex("address", addr).frames(opts.frames_for_releases).write();
    return true;
  }
  if (called_by_allocator(ctx, ps, entry)) {
    // Not the program's doing: recorded for what it is, and not counted as a bad free.
    ++ps.by_allocator;
    Rec(ctx, "bad_free", fn).add_hex("address", addr).add_str("reason", "allocator").frames(true).write();
    return false;
  }
  bool twice = ps.released.count(addr) != 0;
  (twice ? ps.bad_double : ps.bad_unknown)++;
  Rec(ctx, "bad_free", fn).add_hex("address", addr).add_str("reason", twice ? "double" : "unknown").frames(true).write();
  // Releases of blocks allocated before an attach are expected; in a program traced
  // from its start they are bugs.
  if (!ps.attached && warnings_left > 0) {
    --warnings_left;
    char msg[256];
    std::snprintf(msg, sizeof msg, "memtrace: process %d thread %d: %s of %s pointer %#" PRIx64, host->pid(ctx),
                  host->tid(ctx), fn, twice ? "an already released" : "a never allocated", addr);
    host->warn(msg);
  }
  return false;
}

void on_mapping_return(ft_ctx* ctx, const Pending& p, uint64_t ret) {
  const char* fn = p.function.c_str();
  constexpr uint64_t kMapFailed = ~uint64_t{0};
  switch (p.kind) {
    case kMmap:
      if (ret == kMapFailed) return;
      Rec(ctx, "map", fn).add_hex("address", ret).add_int("size", static_cast<int64_t>(p.len)).frames(true).write();
      print(ctx, "%s(%" PRIu64 ") = %#" PRIx64, fn, p.len, ret);
      return;
    case kMunmap:
      if (ret != 0) return;
      Rec(ctx, "unmap", fn).add_hex("address", p.ptr).add_int("size", static_cast<int64_t>(p.len)).write();
      print(ctx, "%s(%#" PRIx64 ", %" PRIu64 ")", fn, p.ptr, p.len);
      return;
    case kMremap:
      if (ret == kMapFailed) return;
      Rec(ctx, "unmap", fn).add_hex("address", p.ptr).add_int("size", static_cast<int64_t>(p.len)).write();
      Rec(ctx, "map", fn).add_hex("address", ret).add_int("size", static_cast<int64_t>(p.size)).frames(true).write();
      return;
    default:
      return;
  }
}

unsigned on_symbol(void*, const ft_symbol* sym, uint64_t* tag) {
  if (sym->is_plt) return 0;
  for (const Name& n : kNames) {
    if (std::strcmp(sym->name, n.name) != 0) continue;
    if (is_mapping(n.kind) && !opts.mmap) return 0;
    *tag = n.kind;
    // free only needs its argument: one stop. Everything else is followed to its
    // return (operator delete too: the free inside it must be seen as nested), where
    // only the return value is needed — the call stack is taken at the entry — except
    // posix_memalign's (the block is in memory) and the mappings' (their records take
    // the call stack at the return).
    if (n.kind == kFree) return FT_TRACE_ENTRY;
    if (n.kind == kPosixMemalign || is_mapping(n.kind)) return FT_TRACE_ENTRY | FT_TRACE_RETURN;
    return FT_TRACE_ENTRY | FT_TRACE_RETURN | FT_TRACE_RETURN_VALUE;
  }
  return 0;
}

void on_call(void*, ft_ctx* ctx, const ft_function* fn) {
  Kind kind = static_cast<Kind>(fn->tag);
  ThreadState& ts = threads[host->tid(ctx)];
  bool outer = ts.open.empty();
  if (kind == kFree || kind == kDelete) {
    // Released at entry: once the call is under way another thread may get the same
    // address from the allocator.
    uint64_t ptr = host->arg(ctx, 0);
    if (ptr != 0) {
      if (!outer) ts.open.front().inner.push_back(Inner{false, fn->name, ptr, 0, 0});
      else if (record_release(ctx, fn->name, ptr, fn->address)) print(ctx, "%s(%#" PRIx64 ")", fn->demangled, ptr);
    }
    if (kind == kFree) return;  // entry only
  }
  Pending p;
  p.kind = kind;
  p.function = fn->name;
  p.depth = host->depth(ctx);
  p.outer = outer;
  if (outer && opts.depth > 0 && !is_mapping(kind)) {
    p.frames.resize(std::min<size_t>(opts.depth, 1024));
    int n = host->backtrace(ctx, p.frames.data(), static_cast<int>(p.frames.size()));
    p.frames.resize(n > 0 ? static_cast<size_t>(n) : 0);
    p.have_frames = true;
  }
  uint64_t a0 = host->arg(ctx, 0), a1 = host->arg(ctx, 1), a2 = host->arg(ctx, 2);
  switch (kind) {
    case kMalloc:
    case kValloc:
    case kNew:
    case kNewNothrow:
      p.size = a0;
      break;
    case kNewAligned:
    case kNewAlignedNothrow:
      p.size = a0;
      p.align = a1;
      break;
    case kCalloc:
      p.size_overflow = __builtin_mul_overflow(a0, a1, &p.size);
      break;
    case kRealloc:
      p.ptr = a0;
      p.size = a1;
      break;
    case kReallocArray:
      p.ptr = a0;
      p.size_overflow = __builtin_mul_overflow(a1, a2, &p.size);
      break;
    case kMemalign:
      p.align = a0;
      p.size = a1;
      break;
    case kPosixMemalign:
      p.memptr = a0;
      p.align = a1;
      p.size = a2;
      break;
    case kDelete:
      p.ptr = a0;
      break;
    case kMmap:
      p.len = a1;
      break;
    case kMunmap:
      p.ptr = a0;
      p.len = a1;
      break;
    case kMremap:
      p.ptr = a0;
      p.len = a1;
      p.size = a2;
      break;
    default:
      break;
  }
  ts.open.push_back(std::move(p));
}

// The pending call of this return or unwinding (frames whose end was never seen are
// dropped).
bool take_pending(ft_ctx* ctx, Pending* out) {
  auto it = threads.find(host->tid(ctx));
  if (it == threads.end()) return false;
  ThreadState& ts = it->second;
  unsigned depth = host->depth(ctx);
  while (!ts.open.empty() && ts.open.back().depth > depth) ts.open.pop_back();
  if (ts.open.empty() || ts.open.back().depth != depth) return false;
  *out = std::move(ts.open.back());
  ts.open.pop_back();
  return true;
}

Outcome outcome_of(ft_ctx* ctx, const Pending& p, uint64_t ret) {
  Outcome o;
  switch (p.kind) {
    case kDelete:
      return o;  // released at entry
    case kPosixMemalign: {
      uint64_t block = 0;
      if (static_cast<int>(ret) == 0 &&
          host->read_memory(ctx, p.memptr, &block, sizeof block) == static_cast<long>(sizeof block) && block != 0)
        o.allocated = block;
      else
        o.failed = true;
      return o;
    }
    case kRealloc:
    case kReallocArray:
      if (ret == 0) {
        // NULL: either the old block was freed (size 0) or nothing happened.
        if (p.ptr != 0 && p.size == 0 && !p.size_overflow) o.released = p.ptr;
        else o.failed = true;
        return o;
      }
      o.released = p.ptr;  // 0: realloc(NULL, n) only allocates
      o.allocated = ret;
      return o;
    default:
      if (ret == 0) o.failed = true;
      else o.allocated = ret;
      return o;
  }
}

// Records the inner blocks of an outermost call that are not its own result. A block
// goes through a chain of calls (operator delete(void*, size_t) jumping to operator
// delete(void*), which calls free; reallocarray calling realloc calling malloc):
// every inner release of the block the call releases is that same release, and
// every inner allocation of the block it returns, after the last inner release of
// that address, is that same allocation.
void settle_inner(ft_ctx* ctx, Pending& p, const Outcome& o) {
  uint64_t own_release = p.kind == kDelete ? p.ptr : o.released;
  size_t own_from = p.inner.size();  // inner allocations of o.allocated from here on are its own
  if (o.allocated) {
    own_from = 0;
    for (size_t i = p.inner.size(); i-- > 0;)
      if (!p.inner[i].alloc && p.inner[i].addr == o.allocated && o.allocated != own_release) {
        own_from = i + 1;
        break;
      }
  }
  for (size_t i = 0; i < p.inner.size(); ++i) {
    const Inner& in = p.inner[i];
    bool own = in.alloc ? (in.addr == o.allocated && i >= own_from) : (own_release != 0 && in.addr == own_release);
    if (own) continue;
    if (in.alloc) record_alloc(ctx, in.function.c_str(), in.addr, in.size, in.align);
    else record_release(ctx, in.function.c_str(), in.addr);
  }
  p.inner.clear();
}

bool is_aligned_kind(Kind k) { return k == kMemalign || k == kNewAligned || k == kNewAlignedNothrow || k == kPosixMemalign; }

void on_return(void*, ft_ctx* ctx, const ft_function* fn) {
  Pending p;
  if (!take_pending(ctx, &p)) return;
  struct Returning {
    explicit Returning(const Pending* p) { g_returning = p; }
    ~Returning() { g_returning = nullptr; }
  } returning(&p);
  uint64_t ret = host->retval(ctx);
  if (is_mapping(p.kind)) {
    if (p.outer) on_mapping_return(ctx, p, ret);  // inside malloc: the heap's own pages
    return;
  }
  Outcome o = outcome_of(ctx, p, ret);
  uint64_t align = is_aligned_kind(p.kind) ? p.align : 0;
  if (!p.outer) {
    auto& outer = threads[host->tid(ctx)].open.front().inner;
    if (o.released) outer.push_back(Inner{false, p.function, o.released, 0, 0});
    if (o.allocated) outer.push_back(Inner{true, p.function, o.allocated, p.size, align});
    return;
  }
  settle_inner(ctx, p, o);
  const char* name = p.function.c_str();
  if (o.released) record_release(ctx, name, o.released);
  if (o.allocated) record_alloc(ctx, name, o.allocated, p.size, align);
  if (o.failed) record_failed(ctx, name, p.size);
  if (!opts.streaming || p.kind == kDelete || o.failed) return;
  if (p.kind == kRealloc || p.kind == kReallocArray)
    print(ctx, "%s(%#" PRIx64 ", %" PRIu64 ") = %#" PRIx64, fn->demangled, p.ptr, p.size, o.allocated);
  else if (align)
    print(ctx, "%s(%" PRIu64 ", align %" PRIu64 ") = %#" PRIx64, fn->demangled, p.size, align, o.allocated);
  else
    print(ctx, "%s(%" PRIu64 ") = %#" PRIx64, fn->demangled, p.size, o.allocated);
}

void on_unwound(void*, ft_ctx* ctx, const ft_function*, const char*) {
  Pending p;
  if (!take_pending(ctx, &p) || !p.outer) return;
  struct Returning {
    explicit Returning(const Pending* p) { g_returning = p; }
    ~Returning() { g_returning = nullptr; }
  } returning(&p);
  // operator new throwing std::bad_alloc (or the thread ending inside an allocator):
  // what it allocated inside (the exception object) stays.
  settle_inner(ctx, p, Outcome{});
  if (p.kind != kDelete && !is_mapping(p.kind)) record_failed(ctx, p.function.c_str(), p.size);
}

void summary(ft_ctx* ctx, const ProcessState& ps) {
  if (!opts.streaming) return;
  uint64_t bytes = 0;
  for (const auto& [addr, b] : ps.live) bytes += b.size;
  char line[256];
  std::snprintf(line, sizeof line,
                "memtrace: %zu block%s (%" PRIu64 " bytes) still allocated; %" PRIu64 " allocations, %" PRIu64
                " releases, %" PRIu64 " failed, peak %" PRIu64 " bytes",
                ps.live.size(), ps.live.size() == 1 ? "" : "s", bytes, ps.allocs, ps.frees, ps.failed, ps.peak_bytes);
  host->print(ctx, line);
}

void on_event(void*, ft_ctx* ctx, const ft_event* ev) {
  int pid = host->pid(ctx);
  switch (ev->kind) {
    case FT_EVENT_PROCESS_CREATED: {
      std::shared_ptr<ProcessState> parent;
      if (ev->value != 0)
        if (auto it = processes.find(static_cast<int>(ev->value)); it != processes.end()) parent = it->second;
      if (parent && ev->text && std::strcmp(ev->text, "vfork") == 0) {
        processes[pid] = parent;  // the same memory
        return;
      }
      // A forked child starts with a copy of its parent's heap.
      auto fresh = std::make_shared<ProcessState>();
      if (parent) {
        fresh->live = parent->live;
        fresh->released = parent->released;
        fresh->live_bytes = fresh->peak_bytes = parent->live_bytes;
        fresh->modules = parent->modules;
      }
      fresh->attached = ev->address == 1;
      processes[pid] = std::move(fresh);
      return;
    }
    case FT_EVENT_EXEC:
      summary(ctx, process_of(ctx));
      processes[pid] = std::make_shared<ProcessState>();
      return;
    case FT_EVENT_THREAD_EXITED:
      threads.erase(host->tid(ctx));
      return;
    case FT_EVENT_EXITED:
    case FT_EVENT_KILLED:
    case FT_EVENT_DETACHED: {
      auto it = processes.find(pid);
      if (it == processes.end() || !it->second) return;
      ProcessState& ps = *it->second;
      summary(ctx, ps);
      if (ps.bad_unknown + ps.bad_double > 0 && (!ps.attached || ps.bad_double > 0)) {
        char msg[256];
        std::snprintf(msg, sizeof msg,
                      "memtrace: process %d released %" PRIu64 " never allocated and %" PRIu64
                      " already released block%s",
                      pid, ps.bad_unknown, ps.bad_double, ps.bad_unknown + ps.bad_double == 1 ? "" : "s");
        host->warn(msg);
      }
      processes.erase(it);
      threads.erase(host->tid(ctx));
      return;
    }
    default:
      return;
  }
}

void on_module(void*, ft_ctx* ctx, const ft_module* m) {
  ProcessState& ps = process_of(ctx);
  std::erase_if(ps.modules, [&](const Mapping& x) { return x.base < m->end && m->base < x.end; });
  if (m->loaded) ps.modules.push_back(Mapping{m->base, m->end, m->path ? m->path : ""});
}

ft_plugin plugin = {
    .api_version = FT_PLUGIN_API_VERSION,
    .size = sizeof(ft_plugin),
    .name = "memtrace",
    .data = nullptr,
    .module = on_module,
    .symbol = on_symbol,
    .call = on_call,
    .ret = on_return,
    .unwound = on_unwound,
    .event = on_event,
    .syscall = nullptr,
    .finish = nullptr,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const ft_plugin* functracer_plugin_init(const ft_host_api* h) {
  if (h->api_version != FT_PLUGIN_API_VERSION) return &plugin;
  host = h;
  opts = Options{};
  opts.streaming = h->option("output") == nullptr;
  if (const char* d = h->option("backtrace_depth")) {
    uint64_t v = 0;
    if (!parse_u64(d, &v) || v > 1024) {
      h->warn("memtrace: backtrace depth must be 0..1024");
      return nullptr;
    }
    opts.depth = static_cast<unsigned>(v);
  }
  if (const char* a = h->option("backtrace_all")) opts.frames_for_releases = std::strcmp(a, "1") == 0;
  if (const char* m = h->option("monitor"))
    if (!parse_monitor(m)) {
      std::string msg = std::string("memtrace: bad size list for -M: '") + m + "' (expected SIZE or LOW-HIGH, comma-separated)";
      h->warn(msg.c_str());
      return nullptr;
    }
  if (const char* mm = h->option("memtrace.mmap")) opts.mmap = std::strcmp(mm, "0") != 0;
  return &plugin;
}
