// fileops: follows file descriptors and FILE * streams for fd-leak reports. The
// functions that create, duplicate and release descriptors (open ... close_range)
// and streams (fopen ... pclose) are traced at entry and return in every module
// that defines them; successful calls become fd_open / fd_close / file_open /
// file_close records (doc/trace-format.md §3.6). Calls made inside another traced
// call on the same thread (the open inside fopen) are not recorded. Without -o,
// one ltrace-like line is printed per call, and a summary of what is still open
// when a process ends.
//
// Cost: one ptrace stop per call for the functions whose result is their return
// value (the call stack is taken at the entry, the return is handled in the process:
// FT_TRACE_RETURN_VALUE); two for those whose result is in memory at the return
// (pipe's descriptors, a new stream's descriptor).
#include <algorithm>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "functracer/sdk.h"

namespace {

const ft_host_api* host = nullptr;

namespace schema = ft::schema;
namespace key = ft::schema::key;
using ft::sdk::hex;
using ft::sdk::quote;

// What a function does: the tag of each of its names. Aliases (open and open64 in
// glibc) share one address, and the function is reported under whichever name came
// first; the tag tells what it does, and records carry the plain name of the kind,
// whatever the alias.
enum Kind : uint64_t {
  kNone,
  kOpen,
  kOpenat,
  kCreat,
  kClose,
  kCloseRange,
  kDup,
  kDup2,
  kDup3,
  kFcntl,
  kPipe,
  kPipe2,
  kSocket,
  kSocketpair,
  kAccept,
  kAccept4,
  kEventfd,
  kTimerfdCreate,
  kSignalfd,
  kEpollCreate,
  kEpollCreate1,
  kInotifyInit,
  kInotifyInit1,
  kMemfdCreate,
  kFopen,
  kFdopen,
  kFreopen,
  kTmpfile,
  kPopen,
  kFclose,
  kPclose,
  kKinds,
};

constexpr const char* kKindName[kKinds] = {
    "",         "open",         "openat",        "creat",        "close",         "close_range",
    "dup",      "dup2",         "dup3",          "fcntl",        "pipe",          "pipe2",
    "socket",   "socketpair",   "accept",        "accept4",      "eventfd",       "timerfd_create",
    "signalfd", "epoll_create", "epoll_create1", "inotify_init", "inotify_init1", "memfd_create",
    "fopen",    "fdopen",       "freopen",       "tmpfile",      "popen",         "fclose",
    "pclose",
};

const std::unordered_map<std::string_view, Kind> kSymbols = {
    {"open", kOpen},
    {"open64", kOpen},
    {"openat", kOpenat},
    {"openat64", kOpenat},
    {"creat", kCreat},
    {"creat64", kCreat},
    {"close", kClose},
    {"close_range", kCloseRange},
    {"dup", kDup},
    {"dup2", kDup2},
    {"dup3", kDup3},
    {"fcntl", kFcntl},
    {"fcntl64", kFcntl},
    {"pipe", kPipe},
    {"pipe2", kPipe2},
    {"socket", kSocket},
    {"socketpair", kSocketpair},
    {"accept", kAccept},
    {"accept4", kAccept4},
    {"eventfd", kEventfd},
    {"timerfd_create", kTimerfdCreate},
    {"signalfd", kSignalfd},
    {"epoll_create", kEpollCreate},
    {"epoll_create1", kEpollCreate1},
    {"inotify_init", kInotifyInit},
    {"inotify_init1", kInotifyInit1},
    {"memfd_create", kMemfdCreate},
    {"fopen", kFopen},
    {"fopen64", kFopen},
    {"fdopen", kFdopen},
    {"freopen", kFreopen},
    {"freopen64", kFreopen},
    {"tmpfile", kTmpfile},
    {"tmpfile64", kTmpfile},
    {"popen", kPopen},
    {"fclose", kFclose},
    {"pclose", kPclose},
};

// Flag values of the Linux x86-64 ABI, as the traced program passes them. The
// *_CLOEXEC flags of sockets, eventfd, timerfd, signalfd, epoll and inotify are
// all O_CLOEXEC; memfd_create's is its own.
constexpr uint64_t kOCloexec = 02000000;
constexpr uint64_t kMfdCloexec = 1;
constexpr int kFDupfd = 0;
constexpr int kFSetfd = 2;
constexpr int kFDupfdCloexec = 1030;
constexpr uint64_t kFdCloexec = 1;
constexpr uint64_t kCloseRangeCloexec = 1u << 2;

// Where glibc keeps a stream's descriptor: struct _IO_FILE's _fileno (x86-64).
constexpr uint64_t kFilenoOffset = 112;
#ifdef __GLIBC__
static_assert(offsetof(FILE, _fileno) == kFilenoOffset);
#endif

constexpr size_t kMaxString = 4096;  // PATH_MAX

struct OpenFd {
  Kind kind = kNone;  // the function that opened it
  bool cloexec = false;
  std::string path;
};

struct Stream {
  Kind kind = kNone;
  int fd = -1;           // -1: unknown, or closed underneath the stream
  bool owns_fd = false;  // fdopen: the stream took over an fd we follow as such
  bool cloexec = false;
  std::string path;
};

struct ProcessState {
  std::map<int, OpenFd> fds;
  std::map<uint64_t, Stream> streams;
};

// A traced call between its entry and its return.
struct Pending {
  unsigned depth = 0;
  Kind kind = kNone;
  bool nested = false;  // inside another traced call of this plugin: not recorded
  uint64_t args[4] = {};
  std::string path, mode;
  bool has_path = false, has_mode = false;
  // The call stack, taken at the entry when the return comes without it (the same
  // stack as at the return).
  std::vector<ft_addr> stack;
  bool have_stack = false;
};

struct ThreadState {
  int pid = 0;
  ft::sdk::PendingCalls<Pending> open;  // its size is the thread's nesting level
};

struct State {
  bool streaming = false;
  unsigned depth = 10;  // frames per backtrace
  bool release_frames = false;
  std::unordered_map<int, ProcessState> processes;
  std::unordered_map<int, ThreadState> threads;  // by tid
};

State state;

int as_int(uint64_t v) { return static_cast<int>(static_cast<uint32_t>(v)); }

std::vector<ft_addr> backtrace(ft_ctx* ctx, bool release) {
  if (state.depth == 0 || (release && !state.release_frames)) return {};
  return ft::sdk::backtrace(host, ctx, state.depth);
}

// Frames are taken once per call and shared by its records: at the return, or the
// ones the call's entry took.
class Frames {
 public:
  Frames(ft_ctx* ctx, bool release, const Pending& call) : ctx_(ctx), release_(release), call_(call) {}
  const std::vector<ft_addr>& get() {
    if (!taken_) {
      if (!call_.have_stack)
        list_ = backtrace(ctx_, release_);
      else if (!release_ || state.release_frames)
        list_ = call_.stack;
    }
    taken_ = true;
    return list_;
  }

 private:
  ft_ctx* ctx_;
  bool release_;
  const Pending& call_;
  bool taken_ = false;
  std::vector<ft_addr> list_;
};

ProcessState& process_of(ft_ctx* ctx) { return state.processes[host->pid(ctx)]; }

void fd_open(ft_ctx* ctx, Kind kind, int fd, bool cloexec, const Pending* p, Frames& frames) {
  ProcessState& ps = process_of(ctx);
  // The number was free: a stream that held it lost it unseen (to a function
  // not traced, such as the system call itself).
  for (auto& [addr, s] : ps.streams)
    if (s.fd == fd) {
      s.fd = -1;
      s.owns_fd = false;
    }
  OpenFd& o = ps.fds[fd];
  o.kind = kind;
  o.cloexec = cloexec;
  o.path = p && p->has_path ? p->path : std::string();
  if (state.streaming) return;
  schema::FdRecord rec{kKindName[kind], fd, kind == kMemfdCreate ? key::kName : key::kPath, std::nullopt, {}};
  if (p && p->has_path) rec.path = p->path;
  rec.frames = ft::sdk::span(frames.get());
  ft::sdk::record(host, ctx, schema::type::kFdOpen, rec);
}

// fd is no longer open: forget it, and the stream that held it loses it.
void fd_close(ft_ctx* ctx, const char* function, int fd, Frames* frames) {
  ProcessState& ps = process_of(ctx);
  ps.fds.erase(fd);
  for (auto& [addr, s] : ps.streams)
    if (s.fd == fd) {
      s.fd = -1;
      s.owns_fd = false;
    }
  if (state.streaming) return;
  schema::FdRecord rec{function, fd, key::kPath, std::nullopt, {}};
  if (frames) rec.frames = ft::sdk::span(frames->get());
  ft::sdk::record(host, ctx, schema::type::kFdClose, rec);
}

bool fd_known_open(const ProcessState& ps, int fd) {
  if (ps.fds.count(fd)) return true;
  for (const auto& [addr, s] : ps.streams)
    if (s.fd == fd) return true;
  return false;
}

int fileno_of(ft_ctx* ctx, uint64_t stream) {
  int32_t fd = -1;
  if (host->read_memory(ctx, stream + kFilenoOffset, &fd, sizeof fd) != static_cast<long>(sizeof fd)) return -1;
  return fd >= 0 ? fd : -1;
}

void file_open(ft_ctx* ctx, Kind kind, uint64_t stream, int fd, bool owns_fd, bool cloexec, const Pending& p,
               Frames& frames) {
  ProcessState& ps = process_of(ctx);
  Stream& s = ps.streams[stream];
  s.kind = kind;
  s.fd = fd;
  s.owns_fd = owns_fd;
  s.cloexec = cloexec;
  s.path = p.has_path ? p.path : std::string();
  if (state.streaming) return;
  schema::StreamRecord rec{kKindName[kind], stream, fd, kind == kPopen ? key::kCommand : key::kPath,
                           std::nullopt, std::nullopt, {}};
  if (p.has_path) rec.path = p.path;
  if (p.has_mode) rec.mode = p.mode;
  rec.frames = ft::sdk::span(frames.get());
  ft::sdk::record(host, ctx, schema::type::kFileOpen, rec);
}

void file_close(ft_ctx* ctx, const char* function, uint64_t stream, Frames* frames) {
  process_of(ctx).streams.erase(stream);
  if (state.streaming) return;
  schema::StreamRecord rec{function, stream, std::nullopt, key::kPath, std::nullopt, std::nullopt, {}};
  if (frames) rec.frames = ft::sdk::span(frames->get());
  ft::sdk::record(host, ctx, schema::type::kFileClose, rec);
}

// A string argument, read at the call: at the return the registers hold other values.
bool read_arg_string(ft_ctx* ctx, uint64_t addr, std::string* out) {
  auto s = ft::sdk::read_string(host, ctx, addr, kMaxString);
  if (!s) return false;
  *out = std::move(*s);
  return true;
}

// The calls whose result is in memory at the return: the descriptors pipe and
// socketpair store, the descriptor inside a new stream. The others are known from
// the arguments and the return value.
bool reads_memory_at_return(Kind k) {
  return k == kPipe || k == kPipe2 || k == kSocketpair || k == kFopen || k == kTmpfile || k == kPopen ||
         k == kFreopen;
}

// The calls that can only release: their call stack is wanted only with -A.
bool only_releases(Kind k) { return k == kClose || k == kCloseRange || k == kFclose || k == kPclose; }

unsigned on_symbol(void*, const ft_symbol* sym, uint64_t* tag) {
  if (sym->is_plt) return 0;
  auto it = kSymbols.find(sym->name);
  if (it == kSymbols.end()) return 0;
  *tag = it->second;
  if (reads_memory_at_return(it->second)) return FT_TRACE_ENTRY | FT_TRACE_RETURN;
  return FT_TRACE_ENTRY | FT_TRACE_RETURN | FT_TRACE_RETURN_VALUE;
}

Kind kind_of(const ft_function* fn) { return fn->tag > kNone && fn->tag < kKinds ? static_cast<Kind>(fn->tag) : kNone; }

// The thread that made the call, or NULL when it is not one of the process's own:
// a vfork child that functracer does not follow runs on its parent's memory and
// its calls come as the parent's, but it has a descriptor table of its own (the
// dup2 calls of posix_spawn's child are not the parent's), so they are not
// followed.
ThreadState* thread_of(ft_ctx* ctx) {
  int tid = host->tid(ctx), pid = host->pid(ctx);
  if (host->thread_pid(ctx) != pid) return nullptr;
  if (auto it = state.threads.find(tid); it != state.threads.end() && it->second.pid == pid) return &it->second;
  ThreadState& ts = state.threads[tid];
  ts = ThreadState{};
  ts.pid = pid;
  return &ts;
}

void on_call(void*, ft_ctx* ctx, const ft_function* fn) {
  Kind kind = kind_of(fn);
  if (kind == kNone) return;
  ThreadState* thread = thread_of(ctx);
  if (!thread) return;
  ThreadState& ts = *thread;
  unsigned depth = host->depth(ctx);
  ts.open.drop_from(depth);  // a return went unseen
  Pending p;
  p.depth = depth;
  p.kind = kind;
  p.nested = !ts.open.empty();
  for (unsigned i = 0; i < 4; ++i) p.args[i] = host->arg(ctx, i);
  if (!p.nested) {
    switch (kind) {
      case kOpen:
      case kCreat: p.has_path = read_arg_string(ctx, p.args[0], &p.path); break;
      case kOpenat: p.has_path = read_arg_string(ctx, p.args[1], &p.path); break;
      case kMemfdCreate: p.has_path = read_arg_string(ctx, p.args[0], &p.path); break;
      case kFopen:
      case kFreopen:
      case kPopen:
        p.has_path = read_arg_string(ctx, p.args[0], &p.path);
        p.has_mode = read_arg_string(ctx, p.args[1], &p.mode);
        break;
      case kFdopen: p.has_mode = read_arg_string(ctx, p.args[1], &p.mode); break;
      default: break;
    }
    // The return may come without memory or stack (FT_TRACE_RETURN_VALUE): the
    // records it makes take the stack taken here. fcntl records only F_DUPFD*.
    bool records_stack = only_releases(kind) ? state.release_frames
                         : kind == kFcntl   ? as_int(p.args[1]) == kFDupfd || as_int(p.args[1]) == kFDupfdCloexec
                                            : true;
    if (!reads_memory_at_return(kind)) {
      p.have_stack = true;
      if (records_stack) p.stack = backtrace(ctx, false);
    }
  }
  ts.open.push(std::move(p));
}

std::string fd_list(const std::vector<int>& fds) {
  std::string s;
  for (int fd : fds) s += (s.empty() ? "" : " ") + std::to_string(fd);
  return s;
}

std::string str_arg(bool has, const std::string& value, uint64_t raw) {
  if (has) return quote(value);
  return raw ? hex(raw) : std::string("NULL");
}

// The call as ltrace would show it: "open("/etc/passwd", 0x0)".
std::string call_text(const Pending& p) {
  const uint64_t* a = p.args;
  auto num = [](uint64_t v) { return std::to_string(as_int(v)); };
  std::string args;
  switch (p.kind) {
    case kOpen: args = str_arg(p.has_path, p.path, a[0]) + ", " + hex(a[1]); break;
    case kOpenat: args = num(a[0]) + ", " + str_arg(p.has_path, p.path, a[1]) + ", " + hex(a[2]); break;
    case kCreat: {
      char mode[24];
      std::snprintf(mode, sizeof mode, "0%" PRIo64, a[1] & 07777);
      args = str_arg(p.has_path, p.path, a[0]) + ", " + mode;
      break;
    }
    case kMemfdCreate: args = str_arg(p.has_path, p.path, a[0]) + ", " + hex(a[1]); break;
    case kClose:
    case kDup:
    case kAccept:
    case kEpollCreate: args = num(a[0]); break;
    case kDup2: args = num(a[0]) + ", " + num(a[1]); break;
    case kDup3: args = num(a[0]) + ", " + num(a[1]) + ", " + hex(a[2]); break;
    case kCloseRange:
      args = std::to_string(static_cast<uint32_t>(a[0])) + ", " + std::to_string(static_cast<uint32_t>(a[1])) + ", " +
             hex(a[2]);
      break;
    case kFcntl: {
      int cmd = as_int(a[1]);
      const char* c = cmd == kFDupfd          ? "F_DUPFD"
                      : cmd == kFDupfdCloexec ? "F_DUPFD_CLOEXEC"
                      : cmd == kFSetfd        ? "F_SETFD"
                                              : nullptr;
      args = num(a[0]) + ", " + (c ? std::string(c) : num(a[1])) + ", " + num(a[2]);
      break;
    }
    case kPipe: args = hex(a[0]); break;
    case kPipe2: args = hex(a[0]) + ", " + hex(a[1]); break;
    case kSocket: args = num(a[0]) + ", " + hex(a[1]) + ", " + num(a[2]); break;
    case kSocketpair: args = num(a[0]) + ", " + hex(a[1]) + ", " + num(a[2]) + ", " + hex(a[3]); break;
    case kAccept4: args = num(a[0]) + ", " + hex(a[3]); break;
    case kEventfd:
    case kTimerfdCreate: args = num(a[0]) + ", " + hex(a[1]); break;
    case kSignalfd: args = num(a[0]) + ", " + hex(a[1]) + ", " + hex(a[2]); break;
    case kEpollCreate1:
    case kInotifyInit1: args = hex(a[0]); break;
    case kInotifyInit:
    case kTmpfile: break;
    case kFopen:
    case kPopen: args = str_arg(p.has_path, p.path, a[0]) + ", " + str_arg(p.has_mode, p.mode, a[1]); break;
    case kFreopen:
      args = str_arg(p.has_path, p.path, a[0]) + ", " + str_arg(p.has_mode, p.mode, a[1]) + ", " + hex(a[2]);
      break;
    case kFdopen: args = num(a[0]) + ", " + str_arg(p.has_mode, p.mode, a[1]); break;
    case kFclose:
    case kPclose: args = hex(a[0]); break;
    default: break;
  }
  return std::string(kKindName[p.kind]) + "(" + args + ")";
}

bool mode_cloexec(const Pending& p) { return p.has_mode && p.mode.find('e') != std::string::npos; }

// A successful call, outside any other traced call: its records, and its line when
// streaming. Failed calls record nothing.
void completed(ft_ctx* ctx, const Pending& p, uint64_t rv) {
  const Kind kind = p.kind;
  const char* name = kKindName[kind];
  const int r = as_int(rv);
  const uint64_t* a = p.args;
  Frames opened(ctx, false, p);
  Frames released(ctx, true, p);
  ProcessState& ps = process_of(ctx);
  std::string result = " = " + std::to_string(r);
  std::vector<int> closed;  // descriptors released on the side

  switch (kind) {
    case kOpen:
    case kOpenat:
    case kCreat:
    case kDup:
    case kSocket:
    case kAccept:
    case kAccept4:
    case kEventfd:
    case kTimerfdCreate:
    case kSignalfd:
    case kEpollCreate:
    case kEpollCreate1:
    case kInotifyInit:
    case kInotifyInit1:
    case kMemfdCreate: {
      if (r < 0) return;
      if (kind == kSignalfd && as_int(a[0]) != -1) return;  // a new mask for an existing one
      bool cloexec = false;
      switch (kind) {
        case kOpen:
        case kSocket:
        case kEventfd:
        case kTimerfdCreate: cloexec = a[1] & kOCloexec; break;
        case kOpenat:
        case kSignalfd: cloexec = a[2] & kOCloexec; break;
        case kAccept4: cloexec = a[3] & kOCloexec; break;
        case kEpollCreate1:
        case kInotifyInit1: cloexec = a[0] & kOCloexec; break;
        case kMemfdCreate: cloexec = a[1] & kMfdCloexec; break;
        default: break;
      }
      fd_open(ctx, kind, r, cloexec, &p, opened);
      break;
    }
    case kDup2:
    case kDup3: {
      if (r < 0) return;
      int from = as_int(a[0]), to = as_int(a[1]);
      if (from == to) break;  // dup2(fd, fd) does nothing
      if (fd_known_open(ps, to)) {
        fd_close(ctx, name, to, &released);
        closed.push_back(to);
      }
      fd_open(ctx, kind, to, kind == kDup3 && (a[2] & kOCloexec), &p, opened);
      break;
    }
    case kFcntl: {
      if (r < 0) return;
      int fd = as_int(a[0]), cmd = as_int(a[1]);
      if (cmd == kFDupfd || cmd == kFDupfdCloexec) {
        fd_open(ctx, kind, r, cmd == kFDupfdCloexec, &p, opened);
      } else if (cmd == kFSetfd) {
        bool cloexec = a[2] & kFdCloexec;
        if (auto it = ps.fds.find(fd); it != ps.fds.end()) it->second.cloexec = cloexec;
        for (auto& [addr, s] : ps.streams)
          if (s.fd == fd) s.cloexec = cloexec;
        if (!state.streaming) return;
      } else {
        return;  // other commands change nothing followed here
      }
      break;
    }
    case kPipe:
    case kPipe2:
    case kSocketpair: {
      if (r != 0) return;
      int32_t fds[2];
      uint64_t where = kind == kSocketpair ? a[3] : a[0];
      if (host->read_memory(ctx, where, fds, sizeof fds) != static_cast<long>(sizeof fds)) return;
      bool cloexec = kind == kPipe2 || kind == kSocketpair ? (a[1] & kOCloexec) != 0 : false;
      fd_open(ctx, kind, fds[0], cloexec, &p, opened);
      fd_open(ctx, kind, fds[1], cloexec, &p, opened);
      result += "  [" + std::to_string(fds[0]) + ", " + std::to_string(fds[1]) + "]";
      break;
    }
    case kClose:
      if (r != 0) return;
      fd_close(ctx, name, as_int(a[0]), &released);
      break;
    case kCloseRange: {
      if (r != 0) return;
      uint32_t first = static_cast<uint32_t>(a[0]), last = static_cast<uint32_t>(a[1]);
      auto in_range = [&](int fd) {
        return fd >= 0 && static_cast<uint32_t>(fd) >= first && static_cast<uint32_t>(fd) <= last;
      };
      if (a[2] & kCloseRangeCloexec) {
        for (auto& [fd, o] : ps.fds)
          if (in_range(fd)) o.cloexec = true;
        for (auto& [addr, s] : ps.streams)
          if (in_range(s.fd)) s.cloexec = true;
        break;
      }
      for (const auto& [fd, o] : ps.fds)
        if (in_range(fd)) closed.push_back(fd);
      for (const auto& [addr, s] : ps.streams)
        if (in_range(s.fd)) closed.push_back(s.fd);
      std::sort(closed.begin(), closed.end());
      closed.erase(std::unique(closed.begin(), closed.end()), closed.end());
      for (int fd : closed) fd_close(ctx, name, fd, &released);
      break;
    }
    case kFopen:
    case kTmpfile:
    case kPopen:
    case kFreopen: {
      if (rv == 0) return;
      int fd = fileno_of(ctx, rv);
      bool owns = false, cloexec = mode_cloexec(p);
      if (kind == kFreopen) {
        // The old stream is closed, and a descriptor it had taken over with it, unless
        // freopen(NULL, ...) kept the number for the new stream.
        uint64_t old = a[2];
        auto it = ps.streams.find(old);
        int old_fd = it != ps.streams.end() && it->second.owns_fd ? it->second.fd : -1;
        file_close(ctx, name, old, &released);
        if (old_fd >= 0 && a[0] == 0 && old_fd == fd) {
          owns = true;
          auto o = ps.fds.find(fd);
          cloexec = o != ps.fds.end() && o->second.cloexec;
        } else if (old_fd >= 0) {
          fd_close(ctx, name, old_fd, &released);
          closed.push_back(old_fd);
        }
      }
      file_open(ctx, kind, rv, fd, owns, cloexec, p, opened);
      result = " = " + hex(rv) + "  [fd " + std::to_string(fd) + "]";
      break;
    }
    case kFdopen: {
      if (rv == 0) return;
      int fd = as_int(a[0]);
      auto it = ps.fds.find(fd);
      file_open(ctx, kind, rv, fd, true, it != ps.fds.end() && it->second.cloexec, p, opened);
      result = " = " + hex(rv);
      break;
    }
    case kFclose:
    case kPclose: {
      if (kind == kFclose ? r != 0 : r == -1) return;
      uint64_t stream = a[0];
      auto it = ps.streams.find(stream);
      int owned = it != ps.streams.end() && it->second.owns_fd ? it->second.fd : -1;
      file_close(ctx, name, stream, &released);
      if (owned >= 0) {
        fd_close(ctx, name, owned, &released);
        closed.push_back(owned);
      }
      break;
    }
    default: return;
  }
  if (!state.streaming) return;
  std::string line = call_text(p) + result;
  if (!closed.empty()) line += "  [closed " + fd_list(closed) + "]";
  host->print(ctx, line.c_str());
}

void on_return(void*, ft_ctx* ctx, const ft_function* fn) {
  if (kind_of(fn) == kNone) return;
  auto it = state.threads.find(host->tid(ctx));
  if (it == state.threads.end() || it->second.pid != host->pid(ctx)) return;
  auto p = it->second.open.take(host->depth(ctx));
  if (p && !p->nested) completed(ctx, *p, host->retval(ctx));
}

void on_unwound(void*, ft_ctx* ctx, const ft_function* fn, const char*) {
  if (kind_of(fn) == kNone) return;
  auto it = state.threads.find(host->tid(ctx));
  if (it == state.threads.end() || it->second.pid != host->pid(ctx)) return;
  it->second.open.drop_from(host->depth(ctx));
}

std::string opener(const char* function, const std::string& path) {
  return std::string(function) + (path.empty() ? "" : "(" + quote(path) + ")");
}

void summary(ft_ctx* ctx, const ProcessState& ps) {
  if (!state.streaming) return;
  size_t nfds = ps.fds.size(), nstreams = ps.streams.size();
  std::string head = "fileops: " + std::to_string(nfds) + (nfds == 1 ? " fd" : " fds") + " and " +
                     std::to_string(nstreams) + (nstreams == 1 ? " stream" : " streams") + " still open";
  host->print(ctx, head.c_str());
  for (const auto& [fd, o] : ps.fds) {
    std::string line = "fileops:   fd " + std::to_string(fd) + " " + opener(kKindName[o.kind], o.path);
    host->print(ctx, line.c_str());
  }
  for (const auto& [addr, s] : ps.streams) {
    std::string line =
        "fileops:   stream " + hex(addr) + " fd " + std::to_string(s.fd) + " " + opener(kKindName[s.kind], s.path);
    host->print(ctx, line.c_str());
  }
}

void forget_threads(int pid) {
  for (auto it = state.threads.begin(); it != state.threads.end();)
    if (it->second.pid == pid)
      it = state.threads.erase(it);
    else
      ++it;
}

// The image is replaced: close-on-exec descriptors are closed by the kernel, and
// streams go with the memory that held them. A stream whose descriptor survives
// stays open: the descriptor it holds leaks into the new image.
void exec(ft_ctx* ctx, int pid) {
  ProcessState& ps = state.processes[pid];
  std::vector<int> closed;
  for (const auto& [fd, o] : ps.fds)
    if (o.cloexec) closed.push_back(fd);
  std::vector<uint64_t> gone;
  for (const auto& [addr, s] : ps.streams)
    if (s.cloexec || s.fd < 0) gone.push_back(addr);
  for (int fd : closed) fd_close(ctx, "exec", fd, nullptr);
  for (uint64_t addr : gone) file_close(ctx, "exec", addr, nullptr);
  if (state.streaming && (!closed.empty() || !gone.empty())) {
    std::string line = "exec: closed " + std::to_string(closed.size()) + " close-on-exec fd" +
                       (closed.size() == 1 ? "" : "s") + (closed.empty() ? "" : " (" + fd_list(closed) + ")");
    for (uint64_t addr : gone) line += ", stream " + hex(addr);
    host->print(ctx, line.c_str());
  }
  forget_threads(pid);
}

void on_event(void*, ft_ctx* ctx, const ft_event* ev) {
  int pid = host->pid(ctx);
  switch (ev->kind) {
    case FT_EVENT_PROCESS_CREATED: {
      ProcessState fresh;
      int parent = static_cast<int>(ev->value);
      if (parent != 0)
        if (auto it = state.processes.find(parent); it != state.processes.end()) fresh = it->second;
      state.processes[pid] = std::move(fresh);
      if (parent == 0) break;
      // The child's thread continues the calls the forking thread had open. That
      // thread is the parent's only one with calls open, or else its main thread.
      const ThreadState* from = nullptr;
      int busy = 0;
      for (const auto& [tid, ts] : state.threads)
        if (ts.pid == parent && !ts.open.empty()) {
          from = &ts;
          ++busy;
        }
      if (busy != 1) {
        auto it = state.threads.find(parent);
        from = it != state.threads.end() ? &it->second : nullptr;
      }
      if (from) {
        ThreadState copy = *from;
        copy.pid = pid;
        state.threads[host->tid(ctx)] = std::move(copy);
      }
      break;
    }
    case FT_EVENT_THREAD_EXITED: state.threads.erase(host->tid(ctx)); break;
    case FT_EVENT_EXEC: exec(ctx, pid); break;
    case FT_EVENT_EXITED:
    case FT_EVENT_KILLED:
    case FT_EVENT_DETACHED:
      if (auto it = state.processes.find(pid); it != state.processes.end()) {
        summary(ctx, it->second);
        state.processes.erase(it);
      }
      forget_threads(pid);
      break;
    default: break;
  }
}

const ft_plugin kPlugin = ft::sdk::table(
    schema::plugin::kFileops, {.symbol = on_symbol, .call = on_call, .ret = on_return, .unwound = on_unwound, .event = on_event});

const ft_plugin* setup(const ft_host_api* h) {
  host = h;
  state = State{};
  state.streaming = ft::sdk::streaming(h);
  if (!ft::sdk::backtrace_depth_option(h, schema::plugin::kFileops, &state.depth)) return nullptr;
  state.release_frames = ft::sdk::option_is_one(h, "backtrace_all");
  return &kPlugin;
}

}  // namespace

FT_SDK_PLUGIN_INIT(setup, kPlugin)
