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
#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "functracer/heap_model.h"
#include "functracer/leak_scan.h"
#include "functracer/plugin.h"
#include "functracer/schema.h"
#include "functracer/sdk.h"

namespace {

namespace schema = ft::schema;
namespace sdk = ft::sdk;
using Heap = ft::heap::HeapModel<>;
using ft::heap::Outcome;

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
  bool streaming = false;  // no -o: stderr is the only output
  bool log = false;        // and every allocation and release is printed (--log, memtrace:log)
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
  sdk::PendingCalls<Pending> open;  // open.size() allocator calls are under way
};

struct Mapping {
  uint64_t base = 0, end = 0;
  std::string path;
};

struct ProcessState {
  Heap heap{/*remember_releases=*/true};
  std::vector<Mapping> modules;  // mapped executables and libraries
  bool attached = false;
  uint64_t failed = 0, bad_unknown = 0, bad_double = 0, by_allocator = 0;
  // Allocations that returned an address still live here: the release of the block
  // there was not seen (a path memtrace does not trace, tracing switched off).
  uint64_t unseen_releases = 0;
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

// Call stack vectors of finished calls, kept for the next calls: an allocation and a
// release of the plugin's own per traced allocation otherwise.
std::vector<std::vector<ft_addr>> spare_frames;

std::vector<ft_addr> frames_buffer() {
  if (spare_frames.empty()) return {};
  std::vector<ft_addr> v = std::move(spare_frames.back());
  spare_frames.pop_back();
  return v;
}

void recycle(Pending& p) {
  if (p.frames.capacity() && spare_frames.size() < 256) spare_frames.push_back(std::move(p.frames));
}

bool monitored(uint64_t size) {
  if (opts.monitor.empty()) return true;
  for (auto [lo, hi] : opts.monitor)
    if (size >= lo && size <= hi) return true;
  return false;
}

// The call stack for a record, when wanted: the one the returning call's entry took,
// or the current one. Valid until the next call.
schema::HexSpan frames(ft_ctx* ctx, bool want) {
  static constexpr unsigned kMaxDepth = 1024;
  static ft_addr buf[kMaxDepth];
  if (!want || opts.depth == 0) return {};
  int n;
  if (g_returning && g_returning->have_frames) {
    n = static_cast<int>(std::min<size_t>(g_returning->frames.size(), kMaxDepth));
    std::copy_n(g_returning->frames.begin(), n, buf);
  } else {
    n = host->backtrace(ctx, buf, static_cast<int>(opts.depth));
  }
  if (n <= 0) return {};
  return schema::HexSpan{buf, static_cast<size_t>(n)};
}

void print(ft_ctx* ctx, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void print(ft_ctx* ctx, const char* fmt, ...) {
  if (!opts.log) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  host->print(ctx, line);
}

void record_alloc(ft_ctx* ctx, const char* fn, uint64_t addr, uint64_t size, uint64_t align) {
  // A block still live for us is replaced: its release went by a path memtrace does
  // not see. Counted, and said at the end (note_unseen_releases).
  if (process_of(ctx).heap.alloc(addr, size)) ++process_of(ctx).unseen_releases;
  sdk::record(host, ctx, schema::AllocRecord{fn, size, addr, align, frames(ctx, monitored(size))});
}

void record_failed(ft_ctx* ctx, const char* fn, uint64_t size) {
  ++process_of(ctx).failed;
  sdk::record(host, ctx, schema::AllocFailedRecord{fn, size, frames(ctx, true)});
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
  auto released = ps.heap.release(addr);
  if (released.kind == Heap::Release::kFreed) {
    sdk::record(host, ctx, schema::FreeRecord{fn, addr, frames(ctx, opts.frames_for_releases)});
    return true;
  }
  if (called_by_allocator(ctx, ps, entry)) {
    // Not the program's doing: recorded for what it is, and not counted as a bad free.
    ++ps.by_allocator;
    sdk::record(host, ctx, schema::BadFreeRecord{fn, addr, schema::reason::kAllocator, frames(ctx, true)});
    return false;
  }
  bool twice = released.kind == Heap::Release::kDouble;
  (twice ? ps.bad_double : ps.bad_unknown)++;
  sdk::record(host, ctx,
              schema::BadFreeRecord{fn, addr, twice ? schema::reason::kDouble : schema::reason::kUnknown,
                                    frames(ctx, true)});
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
      sdk::record(host, ctx, schema::type::kMap, schema::MappingRecord{fn, ret, p.len, frames(ctx, true)});
      print(ctx, "%s(%" PRIu64 ") = %#" PRIx64, fn, p.len, ret);
      return;
    case kMunmap:
      if (ret != 0) return;
      sdk::record(host, ctx, schema::type::kUnmap, schema::MappingRecord{fn, p.ptr, p.len, {}});
      print(ctx, "%s(%#" PRIx64 ", %" PRIu64 ")", fn, p.ptr, p.len);
      return;
    case kMremap:
      if (ret == kMapFailed) return;
      sdk::record(host, ctx, schema::type::kUnmap, schema::MappingRecord{fn, p.ptr, p.len, {}});
      sdk::record(host, ctx, schema::type::kMap, schema::MappingRecord{fn, ret, p.size, frames(ctx, true)});
      return;
    default:
      return;
  }
}

// Go allocates from its own heap (new, make, append: runtime.mallocgc), which is not
// malloc's: said once, when the first symbol of a Go program is offered.
bool go_noted = false;

unsigned on_symbol(void*, const ft_symbol* sym, uint64_t* tag) {
  if (sym->is_main_program && !go_noted) {
    go_noted = true;
    if (const char* go = host->option("main_go")) {
      std::string msg = std::string("memtrace: ") + go +
                        " is a Go program: Go's own heap (new, make, append) is not malloc's and is not traced;"
                        " only C allocations (cgo) are";
      host->warn(msg.c_str());
    }
  }
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

// What on_call reads: the first three integer arguments and a backtrace of -b frames
// (one, the caller, for releases made by the allocator itself).
int on_capture(void*, const ft_function*, ft_capture* out) {
  out->int_args = 3;
  out->backtrace = std::max(opts.depth, 1u);
  return 1;
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
      if (!outer) ts.open.outermost().inner.push_back(Inner{false, fn->name, ptr, 0, 0});
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
    p.frames = frames_buffer();
    sdk::backtrace_into(host, ctx, std::min(opts.depth, 1024u), p.frames);
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
  ts.open.push(std::move(p));
}

// The pending call of this return or unwinding (frames whose end was never seen are
// dropped).
bool take_pending(ft_ctx* ctx, Pending* out) {
  auto it = threads.find(host->tid(ctx));
  if (it == threads.end()) return false;
  auto call = it->second.open.take(host->depth(ctx));
  if (!call) return false;
  *out = std::move(*call);
  return true;
}

Outcome outcome_of(ft_ctx* ctx, const Pending& p, uint64_t ret) {
  switch (p.kind) {
    case kDelete:
      return Outcome{};  // released at entry
    case kPosixMemalign: {
      std::optional<uint64_t> block;
      uint64_t stored = 0;
      if (static_cast<int>(ret) == 0 &&
          host->read_memory(ctx, p.memptr, &stored, sizeof stored) == static_cast<long>(sizeof stored))
        block = stored;
      return ft::heap::posix_memalign_outcome(static_cast<int>(ret), block);
    }
    case kRealloc:
    case kReallocArray:
      return ft::heap::realloc_outcome(p.ptr, p.size, p.size_overflow, ret);
    default:
      return ft::heap::allocation_outcome(ret);
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

// While the outermost call being ended makes its records: its call stack is theirs.
// Its vector is kept for later calls afterwards.
class Returning {
 public:
  explicit Returning(Pending& p) : p_(p) { g_returning = &p; }
  ~Returning() {
    g_returning = nullptr;
    recycle(p_);
  }
  Returning(const Returning&) = delete;
  Returning& operator=(const Returning&) = delete;

 private:
  Pending& p_;
};

bool is_aligned_kind(Kind k) { return k == kMemalign || k == kNewAligned || k == kNewAlignedNothrow || k == kPosixMemalign; }

void on_return(void*, ft_ctx* ctx, const ft_function* fn) {
  Pending p;
  if (!take_pending(ctx, &p)) return;
  Returning returning(p);
  uint64_t ret = host->retval(ctx);
  if (is_mapping(p.kind)) {
    if (p.outer) on_mapping_return(ctx, p, ret);  // inside malloc: the heap's own pages
    return;
  }
  Outcome o = outcome_of(ctx, p, ret);
  uint64_t align = is_aligned_kind(p.kind) ? p.align : 0;
  if (!p.outer) {
    auto& outer = threads[host->tid(ctx)].open.outermost().inner;
    if (o.released) outer.push_back(Inner{false, p.function, o.released, 0, 0});
    if (o.allocated) outer.push_back(Inner{true, p.function, o.allocated, p.size, align});
    return;
  }
  settle_inner(ctx, p, o);
  const char* name = p.function.c_str();
  if (o.released) record_release(ctx, name, o.released);
  if (o.allocated) record_alloc(ctx, name, o.allocated, p.size, align);
  if (o.failed) record_failed(ctx, name, p.size);
  if (!opts.log || p.kind == kDelete || o.failed) return;
  if (p.kind == kRealloc || p.kind == kReallocArray)
    print(ctx, "%s(%#" PRIx64 ", %" PRIu64 ") = %#" PRIx64, fn->demangled, p.ptr, p.size, o.allocated);
  else if (align)
    print(ctx, "%s(%" PRIu64 ", align %" PRIu64 ") = %#" PRIx64, fn->demangled, p.size, align, o.allocated);
  else
    print(ctx, "%s(%" PRIu64 ") = %#" PRIx64, fn->demangled, p.size, o.allocated);
}

// An allocator call left without a return. Only an exception (operator new throwing
// std::bad_alloc) is a failed allocation; a call cut off by the process's end ("exit":
// it exited or was killed while the call ran), by a detach (the call goes on
// untraced) or by a longjmp out of it gave no answer, and is no failure. Either way
// what it allocated or released inside (the exception object) stands.
void on_unwound(void*, ft_ctx* ctx, const ft_function*, const char* reason) {
  Pending p;
  if (!take_pending(ctx, &p) || !p.outer) return;
  Returning returning(p);
  settle_inner(ctx, p, Outcome{});
  bool thrown = reason && std::strcmp(reason, "exception") == 0;
  if (thrown && p.kind != kDelete && !is_mapping(p.kind)) record_failed(ctx, p.function.c_str(), p.size);
}

void summary(ft_ctx* ctx, const ProcessState& ps) {
  if (!opts.streaming) return;
  const Heap& h = ps.heap;
  std::string line = sdk::format("memtrace: %zu block%s (%" PRIu64 " bytes) still allocated; %" PRIu64
                                 " allocations, %" PRIu64 " releases, %" PRIu64 " failed, peak %" PRIu64 " bytes",
                                 h.blocks(), h.blocks() == 1 ? "" : "s", h.live_bytes(), h.allocations(),
                                 h.releases(), ps.failed, h.peak_bytes());
  host->print(ctx, line.c_str());
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
        fresh->heap = parent->heap.fork_copy();
        fresh->modules = parent->modules;
      }
      // A child of an attached process inherits its history: blocks the parent
      // allocated before the attach are as unknown to it as to the parent.
      fresh->attached = ev->address == 1 || (parent && parent->attached);
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
      if (ps.unseen_releases > 0) {
        // Not silent: the trace says its heap figures miss releases (an untraced
        // record, which every report warns about), and so does stderr.
        std::string why = sdk::format("%" PRIu64 " allocation%s returned an address still live in the trace: the "
                                      "release of the block there was not seen",
                                      ps.unseen_releases, ps.unseen_releases == 1 ? "" : "s");
        sdk::record(host, ctx, schema::UntracedRecord{"free", 0, why});
        char msg[320];
        std::snprintf(msg, sizeof msg, "memtrace: process %d: %s", pid, why.c_str());
        host->warn(msg);
      }
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

// The leak scan (functracer/leak_scan.h) at the process's end and before a detach.
// Roots: every readable and writable mapping except the allocator's heap (the
// [heap], glibc's per-thread arenas: released blocks there keep stale pointers),
// the live blocks themselves, and the stacks, which are scanned from each thread's
// stack pointer up; plus every thread's registers. Thread-local storage lies in those mappings (the main
// thread's in an anonymous one, the others' at the top of their stacks). After an
// attach, blocks allocated before it are unknown and may hold the only pointer to
// a block made since: the heap outside the known blocks is then a root too (so
// stale pointers in released memory can only make a lost block look reachable).
constexpr uint64_t kArenaAlign = 64ull << 20;  // glibc's HEAP_MAX_SIZE on 64-bit

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool is_arena(const ft_snapshot* snap, size_t i) {
  const ft_snapshot_region& r = snap->regions[i];
  if (r.path[0] != 0 || r.start % kArenaAlign != 0) return false;
  if (r.end - r.start == kArenaAlign) return true;
  // The rest of the arena's 64 MiB is reserved, without access.
  if (i + 1 >= snap->nregions) return false;
  const ft_snapshot_region& next = snap->regions[i + 1];
  return next.start == r.end && next.path[0] == 0 && !next.readable && !next.writable &&
         next.end - r.start <= kArenaAlign;
}

void on_snapshot(void*, ft_ctx* ctx, const ft_snapshot* snap) {
  auto it = processes.find(host->pid(ctx));
  // A vfork child ending on its parent's memory: the blocks are the parent's, which
  // its own end scans.
  if (it == processes.end() || !it->second || it->second.use_count() > 1) return;
  ProcessState& ps = *it->second;
  uint64_t start = now_ns();
  using Scanner = ft::heap::LeakScanner;
  std::vector<Scanner::Block> blocks;
  blocks.reserve(ps.heap.blocks());
  uint64_t bytes = 0;
  for (const auto& b : ps.heap.sorted_blocks()) {
    blocks.push_back({b.address, b.size});
    bytes += b.size;
  }
  auto read = [ctx](uint64_t addr, void* buf, size_t n) { return host->read_memory(ctx, addr, buf, n); };
  Scanner scan(blocks, read);
  auto holds_sp = [&](const ft_snapshot_region& r) {
    for (size_t t = 0; t < snap->nthreads; ++t)
      if (snap->threads[t].sp >= r.start && snap->threads[t].sp < r.end) return true;
    return false;
  };
  for (size_t i = 0; i < snap->nregions; ++i) {
    const ft_snapshot_region& r = snap->regions[i];
    if (!r.readable || !r.writable || holds_sp(r)) continue;
    auto first = std::lower_bound(blocks.begin(), blocks.end(), r.start,
                                  [](const Scanner::Block& b, uint64_t a) { return b.address < a; });
    if ((std::strcmp(r.path, "[heap]") == 0 || is_arena(snap, i)) && !ps.attached) continue;
    // Around the blocks: a block is scanned when it is reached. (A block the
    // allocator mapped on its own shares its region with the mappings next to it.)
    uint64_t at = r.start;
    for (auto b = first; b != blocks.end() && b->address < r.end; ++b) {
      if (b->address > at) scan.scan_range(at, b->address, read);
      at = std::max(at, b->address + b->size);
    }
    if (at < r.end) scan.scan_range(at, r.end, read);
  }
  for (size_t t = 0; t < snap->nthreads; ++t) {
    const ft_snapshot_thread& th = snap->threads[t];
    if (th.stack_end > th.sp) scan.scan_range(th.sp, th.stack_end, read);
    if (th.regs) scan.scan_words({th.regs, th.nregs});
  }
  scan.finish();
  uint64_t count[4] = {}, sum[4] = {};
  for (size_t i = 0; i < scan.size(); ++i) {
    auto k = static_cast<size_t>(scan.kind(i));
    ++count[k];
    sum[k] += scan.block(i).size;
  }
  sdk::record(host, ctx, schema::LeakScanRecord{snap->reason, blocks.size(), bytes, scan.roots_bytes(), now_ns() - start});
  for (size_t i = 0; i < scan.size(); ++i)
    if (auto k = scan.kind(i); k != ft::heap::LeakKind::kReachable)
      sdk::record(host, ctx, schema::LeakRecord{scan.block(i).address, ft::heap::leak_kind_name(k)});
  using ft::heap::LeakKind;
  auto at = [&](LeakKind k) { return static_cast<size_t>(k); };
  print(ctx,
        "memtrace: at %s, definitely lost %" PRIu64 " bytes in %" PRIu64 " blocks, indirectly lost %" PRIu64
        " in %" PRIu64 ", possibly lost %" PRIu64 " in %" PRIu64 ", still reachable %" PRIu64 " in %" PRIu64,
        snap->reason, sum[at(LeakKind::kDefinite)], count[at(LeakKind::kDefinite)], sum[at(LeakKind::kIndirect)],
        count[at(LeakKind::kIndirect)], sum[at(LeakKind::kPossible)], count[at(LeakKind::kPossible)],
        sum[at(LeakKind::kReachable)], count[at(LeakKind::kReachable)]);
}

void on_module(void*, ft_ctx* ctx, const ft_module* m) {
  ProcessState& ps = process_of(ctx);
  std::erase_if(ps.modules, [&](const Mapping& x) { return x.base < m->end && m->base < x.end; });
  if (m->loaded) ps.modules.push_back(Mapping{m->base, m->end, m->path ? m->path : ""});
}

const ft_plugin kPlugin = ft::sdk::table(
    schema::plugin::kMemtrace, {.module = on_module, .symbol = on_symbol, .call = on_call, .ret = on_return, .unwound = on_unwound, .event = on_event,
                             .snapshot = on_snapshot, .capture = on_capture});

const ft_plugin* setup(const ft_host_api* h) {
  host = h;
  opts = Options{};
  opts.streaming = sdk::streaming(h);
  // Read both, so that memtrace:log is never refused as unknown.
  bool log_flag = sdk::option_is_one(h, "memtrace.log");
  opts.log = opts.streaming && (log_flag || sdk::option_is_one(h, "log"));
  if (!sdk::backtrace_depth_option(h, schema::plugin::kMemtrace, &opts.depth)) return nullptr;
  opts.frames_for_releases = sdk::option_is_one(h, "backtrace_all");
  if (const char* m = h->option("monitor")) {
    auto ranges = sdk::parse_ranges(m);
    if (!ranges) {
      std::string msg = std::string("memtrace: bad size list for -M: '") + m + "' (expected SIZE or LOW-HIGH, comma-separated)";
      h->warn(msg.c_str());
      return nullptr;
    }
    opts.monitor = std::move(*ranges);
  }
  if (const char* mm = h->option("memtrace.mmap")) opts.mmap = std::strcmp(mm, "0") != 0;
  return &kPlugin;
}

}  // namespace

FT_SDK_PLUGIN_INIT(setup, kPlugin)
