#include "core/plugin_host.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "common/signal_names.h"
#include "functracer/schema.h"
#include "core/elf_image.h"
#include "core/log.h"
#include "core/ptrace.h"

namespace ft {
namespace {

PluginHost* g_host = nullptr;

// The plugin call running now (nullptr in functracer's own code). A fault while it is
// set jumps back to the call's start (see PluginHost::guarded and doc/internals.md).
struct PluginCall {
  sigjmp_buf env;
};
PluginCall* volatile g_call = nullptr;
volatile sig_atomic_t g_fault_sig = 0;
void* volatile g_fault_addr = nullptr;
void (*g_engine_fault)(int sig, void* addr) = nullptr;

void on_fault(int sig, siginfo_t* si, void*) {
  PluginCall* c = g_call;
  if (c) {
    g_call = nullptr;
    g_fault_sig = sig;
    // abort() and kill() carry no faulting address.
    g_fault_addr = si && si->si_code > 0 ? si->si_addr : nullptr;
    siglongjmp(c->env, 1);
  }
  if (g_engine_fault) g_engine_fault(sig, si && si->si_code > 0 ? si->si_addr : nullptr);
  // Not handled: the default action, with the signal's own core dump.
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

const char* host_option(const char* name) { return plugin_host().option(name); }
void host_warn(const char* message) { log::warn("{}", message); }
int host_pid(ft_ctx* c) { return c->process->pid(); }
int host_tid(ft_ctx* c) {
  if (c->stream_tid) return c->stream_tid;
  return c->thread ? c->thread->tid : c->process->pid();
}
int host_thread_pid(ft_ctx* c) { return c->thread ? c->thread->process->pid() : c->process->pid(); }
uint64_t host_time(ft_ctx* c) { return c->now_ns; }
unsigned host_depth(ft_ctx* c) { return c->depth; }
uint64_t host_arg(ft_ctx* c, unsigned i) {
  if (c->syscall) return i < 6 ? c->syscall->args[i] : 0;
  if (!c->regs) return 0;
  if (c->go_abi) {
    auto go = ft::arch::host().go_args;
    return i < go.size() ? c->regs->get(go[i]) : 0;
  }
  return c->regs->arg(i);
}
uint64_t host_retval(ft_ctx* c) {
  if (c->syscall) return static_cast<uint64_t>(c->syscall->ret);
  return c->regs ? c->regs->ret() : 0;
}

long host_read_memory(ft_ctx* c, ft_addr addr, void* buf, size_t n) {
  if (c->deferred) return -1;
  auto r = c->process->mem().read(RemoteAddr(addr), {static_cast<uint8_t*>(buf), n});
  return r ? static_cast<long>(*r) : -1;
}

long host_read_string(ft_ctx* c, ft_addr addr, char* buf, size_t n) {
  if (n == 0) return -1;
  if (c->deferred) {
    buf[0] = 0;
    return -1;
  }
  auto r = c->process->mem().read_string(RemoteAddr(addr), n - 1);
  if (!r) {
    buf[0] = 0;
    return -1;
  }
  std::memcpy(buf, r->data(), r->size());
  buf[r->size()] = 0;
  return static_cast<long>(r->size());
}

void host_record(ft_ctx* c, const char* type, const ft_field* fields, size_t n) {
  plugin_host().record(*c, type, fields, n);
}

void host_print(ft_ctx* c, const char* line) { plugin_host().print(*c, line); }

uint64_t host_fp_arg(ft_ctx* c, unsigned i) {
  if (i >= 8 || !c->thread) return 0;
  if (c->deferred) return i == 0 ? c->deferred_xmm0 : 0;  // only what was recorded
  if (!c->fp_valid) {
    auto fp = ptrace::get_fp_regs(c->thread->tid);
    if (!fp) return 0;
    c->fp = *fp;
    c->fp_valid = true;
  }
  uint64_t v = 0;
  std::memcpy(&v, reinterpret_cast<const uint8_t*>(c->fp.xmm_space) + 16 * i, sizeof v);
  return v;
}

int host_backtrace(ft_ctx* c, ft_addr* frames, int max) {
  if (!c->thread || max <= 0 || !frames) return 0;
  if (c->deferred) {
    if (!c->recorded_frames.empty()) {
      size_t n = std::min(c->recorded_frames.size(), static_cast<size_t>(max));
      std::copy_n(c->recorded_frames.begin(), n, frames);
      return static_cast<int>(n);
    }
    if (c->recorded_caller.null()) return 0;
    frames[0] = c->recorded_caller.value();
    return 1;
  }
  if (max == 1 && !c->call_pc.null() && c->regs && !c->thread->stack.frames().empty()) {
    // The call site alone (calltrace asks at every call): the frame pushed at this
    // very stop for the return of the function has it, with no stack to read.
    const ShadowFrame& f = c->thread->stack.frames().back();
    if (f.slot == c->regs->sp() && f.entry_ns == c->now_ns && !f.real_ret.null()) {
      frames[0] = f.real_ret.value();
      return 1;
    }
  }
  Registers regs;
  if (c->regs) {
    regs = *c->regs;
  } else {
    auto r = ptrace::get_regs(c->thread->tid);  // a lifecycle event: the thread is stopped, or gone
    if (!r) return 0;
    regs = *r;
  }
  bool skip_first = false;
  if (!c->call_pc.null()) {
    regs.set_ip(c->call_pc);
    skip_first = true;
  } else if (!c->return_to.null()) {
    regs.set_ip(c->return_to);
  }
  Process& p = *c->process;
  if (!p.space.unwinder) p.space.unwinder = std::make_unique<Backtracer>();
  static_assert(sizeof(ft_addr) == sizeof(uint64_t));
  if (!c->unwound_ret.null()) {
    // The function a return address lies in (addresses are looked up at ret - 1).
    auto function_of = [&](RemoteAddr ret) -> const ElfSymbol* {
      const Module* m = p.space.module_at(ret - 1);
      return m && m->elf ? m->elf->function_at((ret - 1).value() - m->bias) : nullptr;
    };
    frames[0] = c->unwound_ret.value();
    int n = 1;
    const ElfSymbol* caller = function_of(c->unwound_ret);
    if (!caller || max == 1) return n;
    std::vector<uint64_t> now(static_cast<size_t>(max) + 64);
    size_t got = p.space.unwinder->capture(p, *c->thread, regs, false, now);
    for (size_t j = 0; j < got; ++j) {
      if (function_of(RemoteAddr(now[j]) + (j == 0 ? 1 : 0)) != caller) continue;
      for (size_t k = j + 1; k < got && n < max; ++k) frames[n++] = now[k];
      break;
    }
    return n;
  }
  return static_cast<int>(
      p.space.unwinder->capture(p, *c->thread, regs, skip_first, {reinterpret_cast<uint64_t*>(frames), static_cast<size_t>(max)}));
}

const ft_host_api kHostApi = {
    FT_HOST_API_VERSION, sizeof(ft_host_api), host_option, host_warn, host_pid, host_tid, host_time,
    host_depth, host_arg, host_retval, host_read_memory, host_read_string, host_record, host_print,
    host_fp_arg, host_backtrace, host_thread_pid, sizeof(ft_function),
};

std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = 0;
  std::string p(buf);
  return p.substr(0, p.rfind('/'));
}

}  // namespace

PluginHost& plugin_host() { return *g_host; }

void PluginHost::install_fault_handlers(void (*engine_fault)(int sig, void* addr)) {
  g_engine_fault = engine_fault;
  // On a stack of their own: a plugin that overflows its stack is caught too.
  static constexpr size_t kStack = 64 * 1024;
  static char* stack = new char[kStack];
  stack_t ss{};
  ss.ss_sp = stack;
  ss.ss_size = kStack;
  (void)sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(s, &sa, nullptr);
}

void PluginHost::after_fault() {
  // The jump left the handler without sigreturn: the signal is still blocked.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, g_fault_sig);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

std::string PluginHost::fault_message(const std::string& name, const char* where) {
  std::string at = g_fault_addr || g_fault_sig != SIGABRT
                       ? fmt::format(" at {:#x}", reinterpret_cast<uintptr_t>(g_fault_addr))
                       : std::string();
  return fmt::format("plugin {} crashed ({}{} in {})", name, signal_name(g_fault_sig), at, where);
}

template <class F>
void PluginHost::guarded(size_t i, const char* callback, F&& f) {
  if (plugins_[i].dead) return;
  PluginCall call;
  PluginCall* outer = g_call;
  if (sigsetjmp(call.env, 0) != 0) {
    g_call = outer;
    after_fault();
    plugins_[i].dead = true;
    crashed_ = true;
    const ft_plugin* p = plugins_[i].plugin;
    std::string name = p->name ? p->name : plugins_[i].path;
    bool at_end = std::strcmp(callback, "finish") == 0;
    log::error("{}{}", fault_message(name, callback),
               at_end ? "" : "; detaching, the program runs on untraced");
    return;
  }
  g_call = &call;
  f();
  g_call = outer;
}

PluginHost::PluginHost() { g_host = this; }

PluginHost::~PluginHost() {
  // Plugins stay loaded until exit: their strings may still be referenced.
  if (g_host == this) g_host = nullptr;
}

std::vector<std::string> PluginHost::plugin_dirs() {
  std::string bin = self_dir();
  return {bin + "/" FT_PLUGIN_DIR_FROM_BIN,
          // Running from the build tree: build/core/functracer, build/plugins/NAME/NAME.so.
          bin + "/../plugins/*"};
}

std::vector<std::string> PluginHost::available() {
  std::set<std::string> names;
  for (const auto& d : plugin_dirs()) {
    bool per_plugin = d.ends_with("/*");
    std::string dir = per_plugin ? d.substr(0, d.size() - 2) : d;
    DIR* dp = ::opendir(dir.c_str());
    if (!dp) continue;
    while (dirent* e = ::readdir(dp)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      if (per_plugin) {
        if (::access((dir + "/" + n + "/" + n + ".so").c_str(), R_OK) == 0) names.insert(n);
      } else if (n.ends_with(".so")) {
        names.insert(n.substr(0, n.size() - 3));
      }
    }
    ::closedir(dp);
  }
  return {names.begin(), names.end()};
}

Status PluginHost::load(const std::string& spec) {
  // NAME:OPTS or PATH:OPTS (a path that exists as given is taken whole).
  std::string name_or_path = spec, opts;
  if (auto colon = spec.find(':'); colon != std::string::npos && ::access(spec.c_str(), F_OK) != 0) {
    name_or_path = spec.substr(0, colon);
    opts = spec.substr(colon + 1);
  }
  std::string path;
  bool by_path = name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".so");
  if (by_path) {
    if (::access(name_or_path.c_str(), R_OK) != 0)
      return Error::from_errno(errno, "cannot load plugin " + name_or_path);
    path = name_or_path;
  } else {
    for (const auto& d : plugin_dirs()) {
      std::string cand = d.ends_with("/*") ? d.substr(0, d.size() - 1) + name_or_path + "/" + name_or_path + ".so"
                                           : d + "/" + name_or_path + ".so";
      if (::access(cand.c_str(), R_OK) == 0) {
        path = cand;
        break;
      }
    }
    if (path.empty()) {
      std::string list;
      for (const auto& n : available()) list += (list.empty() ? "" : ", ") + n;
      return Error::msg("unknown plugin '" + name_or_path + "' (available: " +
                        (list.empty() ? std::string("none found") : list) + ")");
    }
  }
  for (const auto& l : plugins_)
    if (l.path == path) return {};
  // The plugin's options are "NAME.KEY" for host->option, NAME being the plugin's
  // file name without ".so"; a key without a value is "1".
  std::string prefix = path.substr(path.rfind('/') + 1);
  if (prefix.ends_with(".so")) prefix.resize(prefix.size() - 3);
  for (size_t start = 0; start < opts.size();) {
    size_t comma = opts.find(',', start);
    if (comma == std::string::npos) comma = opts.size();
    std::string item = opts.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == 0) return Error::msg("bad option '" + item + "' for plugin " + prefix);
    if (eq == std::string::npos) options_[prefix + "." + item] = "1";
    else options_[prefix + "." + item.substr(0, eq)] = item.substr(eq + 1);
  }
  // dlopen maps the segments as the program headers describe them: a file cut short
  // inside them loads, and the first touch of a page past its end is a SIGBUS in
  // functracer. ElfImage refuses such a file (and a corrupt one) with a message.
  if (auto image = ElfImage::open(path); !image)
    return Error::msg("cannot load plugin " + image.error().message);
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return Error::msg("cannot load plugin " + path + ": " + ::dlerror());
  auto init = reinterpret_cast<ft_plugin_init_fn>(::dlsym(h, FT_PLUGIN_INIT_SYMBOL));
  if (!init) {
    ::dlclose(h);
    return Error::msg("plugin " + path + " has no " FT_PLUGIN_INIT_SYMBOL " function");
  }
  const ft_plugin* p = nullptr;
  {
    PluginCall call;
    if (sigsetjmp(call.env, 0) != 0) {
      after_fault();
      return Error::msg(fault_message(prefix, FT_PLUGIN_INIT_SYMBOL));
    }
    g_call = &call;
    p = init(&kHostApi);
    g_call = nullptr;
  }
  if (!p) {
    ::dlclose(h);
    return Error::msg("plugin " + path + " refused to start");
  }
  if (p->api_version < FT_PLUGIN_API_MIN_VERSION || p->api_version > FT_PLUGIN_API_VERSION) {
    uint32_t v = p->api_version;
    ::dlclose(h);
    return Error::msg("plugin " + path + " was built for plugin API version " + std::to_string(v) +
                      ", this functracer speaks versions " + std::to_string(FT_PLUGIN_API_MIN_VERSION) + " to " +
                      std::to_string(FT_PLUGIN_API_VERSION));
  }
  // Its options must all be known to it: it looks every one up in its init.
  for (auto it = options_.lower_bound(prefix + "."); it != options_.end() && it->first.starts_with(prefix + ".");
       ++it)
    if (!asked_.count(it->first)) {
      ::dlclose(h);
      return Error::msg("plugin " + prefix + " has no option '" + it->first.substr(prefix.size() + 1) + "'");
    }
  if (p->size < FT_PLUGIN_MIN_SIZE) {
    uint32_t size = p->size;  // p points into the library
    ::dlclose(h);
    return Error::msg("plugin " + path + " has a plugin table of " + std::to_string(size) +
                      " bytes, API version " + std::to_string(FT_PLUGIN_API_VERSION) + " needs " +
                      std::to_string(FT_PLUGIN_MIN_SIZE));
  }
  if (plugins_.size() >= 64) return Error::msg("too many plugins (at most 64)");
  // Members past the table's own size are not there: a table made before `snapshot`.
  auto snapshot = p->size >= offsetof(ft_plugin, snapshot) + sizeof p->snapshot ? p->snapshot : nullptr;
  auto capture = p->api_version >= 3 && p->size >= offsetof(ft_plugin, capture) + sizeof p->capture ? p->capture
                                                                                                    : nullptr;
  plugins_.push_back({h, p, path, false, snapshot, capture});
  if (p->syscall) wants_syscalls_ = true;
  if (snapshot) wants_snapshots_ = true;
  return {};
}

std::string PluginHost::names() const {
  std::string s;
  for (const auto& l : plugins_) s += (s.empty() ? "" : ",") + std::string(l.plugin->name ? l.plugin->name : "?");
  return s;
}

const char* PluginHost::option(const char* key) const {
  asked_.insert(key);
  auto it = options_.find(key);
  return it == options_.end() ? nullptr : it->second.c_str();
}

PluginHost::Interest PluginHost::offer(const ft_symbol& sym) {
  Interest in;
  for (size_t i = 0; i < plugins_.size(); ++i) {
    const ft_plugin* p = plugins_[i].plugin;
    if (!p->symbol || plugins_[i].dead) continue;
    uint64_t tag = 0;
    unsigned f = 0;
    guarded(i, "symbol", [&] { f = p->symbol(p->data, &sym, &tag); });
    if (f & FT_TRACE_ENTRY) in.entry_mask |= 1ull << i;
    if (f & FT_TRACE_RETURN) in.return_mask |= 1ull << i;
    if ((f & FT_TRACE_RETURN) && (f & FT_TRACE_RETURN_VALUE)) in.value_only_mask |= 1ull << i;
    if (f & FT_TRACE_PARAMS) in.params = true;
    if ((f & (FT_TRACE_ENTRY | FT_TRACE_RETURN)) && tag != 0) in.tags.emplace_back(static_cast<uint32_t>(i), tag);
  }
  return in;
}

void PluginHost::module(ft_ctx& ctx, const ft_module& m) {
  for (size_t i = 0; i < plugins_.size(); ++i)
    if (const ft_plugin* p = plugins_[i].plugin; p->module)
      guarded(i, "module", [&] { p->module(p->data, &ctx, &m); });
}

void PluginHost::syscall(ft_ctx& ctx, const ft_syscall& sc) {
  ctx.syscall = &sc;
  for (size_t i = 0; i < plugins_.size(); ++i)
    if (const ft_plugin* p = plugins_[i].plugin; p->syscall)
      guarded(i, "syscall", [&] { p->syscall(p->data, &ctx, &sc); });
  ctx.syscall = nullptr;
}

void PluginHost::call(ft_ctx& ctx, const FunctionInfo& fn) {
  ft_function v = fn.view();
  for (size_t i = 0; i < plugins_.size(); ++i)
    if ((fn.entry_mask >> i) & 1) {
      const ft_plugin* p = plugins_[i].plugin;
      v.tag = fn.tag_of(static_cast<uint32_t>(i));
      if (p->call) guarded(i, "call", [&] { p->call(p->data, &ctx, &v); });
    }
}

void PluginHost::ret(ft_ctx& ctx, const FunctionInfo& fn) {
  ft_function v = fn.view();
  for (size_t i = 0; i < plugins_.size(); ++i)
    if ((fn.return_mask >> i) & 1) {
      const ft_plugin* p = plugins_[i].plugin;
      v.tag = fn.tag_of(static_cast<uint32_t>(i));
      if (p->ret) guarded(i, "ret", [&] { p->ret(p->data, &ctx, &v); });
    }
}

void PluginHost::unwound(ft_ctx& ctx, const FunctionInfo& fn, const char* reason) {
  ft_function v = fn.view();
  for (size_t i = 0; i < plugins_.size(); ++i)
    if ((fn.return_mask >> i) & 1) {
      const ft_plugin* p = plugins_[i].plugin;
      v.tag = fn.tag_of(static_cast<uint32_t>(i));
      if (p->unwound) guarded(i, "unwound", [&] { p->unwound(p->data, &ctx, &v, reason); });
    }
}

void PluginHost::event(ft_ctx& ctx, const ft_event& ev) {
  for (size_t i = 0; i < plugins_.size(); ++i)
    if (const ft_plugin* p = plugins_[i].plugin; p->event) guarded(i, "event", [&] { p->event(p->data, &ctx, &ev); });
}

std::optional<ft_capture> PluginHost::capture(const FunctionInfo& fn) {
  ft_capture all{};
  ft_function v = fn.view();
  for (size_t i = 0; i < plugins_.size(); ++i) {
    if (!((fn.entry_mask >> i) & 1)) continue;
    auto cap = plugins_[i].capture;
    if (!cap || plugins_[i].dead) return std::nullopt;
    v.tag = fn.tag_of(static_cast<uint32_t>(i));
    ft_capture c{};
    int ok = 0;
    guarded(i, "capture", [&] { ok = cap(plugins_[i].plugin->data, &v, &c); });
    if (!ok || plugins_[i].dead) return std::nullopt;
    all.int_args = std::max(all.int_args, std::min(c.int_args, 6u));
    all.fp_args = std::max(all.fp_args, std::min(c.fp_args, 8u));
    all.strings |= c.strings;
    all.backtrace = std::max(all.backtrace, c.backtrace);
  }
  return all;
}

void PluginHost::snapshot(ft_ctx& ctx, const ft_snapshot& snap) {
  for (size_t i = 0; i < plugins_.size(); ++i)
    if (auto fn = plugins_[i].snapshot) guarded(i, "snapshot", [&] { fn(plugins_[i].plugin->data, &ctx, &snap); });
}

void PluginHost::finish() {
  for (size_t i = 0; i < plugins_.size(); ++i)
    if (const ft_plugin* p = plugins_[i].plugin; p->finish) guarded(i, "finish", [&] { p->finish(p->data); });
}

void PluginHost::record(ft_ctx& ctx, TraceRecord& r) {
  Process* p = ctx.process;
  if (!p || !p->trace) return;
  r.tid = ctx.thread ? ctx.thread->tid : p->pid();
  if (ctx.stream_tid) {
    r.add(schema::key::kThread, static_cast<int64_t>(r.tid));
    r.tid = ctx.stream_tid;
  }
  r.ts_ns = ctx.now_ns;
  p->trace->write(r);
}

void PluginHost::record(ft_ctx& ctx, const char* type, const ft_field* fields, size_t n) {
  Process* p = ctx.process;
  if (!p || !p->trace) return;
  int tid = ctx.thread ? ctx.thread->tid : p->pid();
  int64_t line_tid = ctx.stream_tid ? ctx.stream_tid : tid;
  // A backtrace is written once, as a `stack` record before this one, and referred to.
  size_t frames_at = n;
  uint64_t stack = 0;
  for (size_t i = 0; i < n; ++i) {
    if (fields[i].kind == FT_FIELD_HEX_LIST && std::strcmp(fields[i].key, schema::key::kFrames) == 0) {
      stack = p->trace->stack_ref(line_tid, ctx.now_ns, fields[i].list, fields[i].list_len);
      frames_at = i;
      break;
    }
  }
  p->trace->write_line(line_tid, ctx.now_ns, type, [&](LineAppender& line) {
    if (ctx.stream_tid) line.integer(schema::key::kThread, tid);
    for (size_t i = 0; i < n; ++i) {
      const ft_field& f = fields[i];
      if (i == frames_at && stack != 0) {
        line.integer(schema::key::kStack, static_cast<int64_t>(stack));
        continue;
      }
      switch (f.kind) {
        case FT_FIELD_INT: line.integer(f.key, static_cast<int64_t>(f.i)); break;
        case FT_FIELD_HEX: line.hex(f.key, f.u); break;
        case FT_FIELD_STRING: line.str(f.key, f.s ? f.s : ""); break;
        case FT_FIELD_HEX_LIST: line.list(f.key, f.list, f.list_len); break;
      }
    }
  });
}

void PluginHost::print(ft_ctx& ctx, const std::string& text) {
  if (!streaming_) return;
  int tid = ctx.thread ? ctx.thread->tid : ctx.process->pid();
  if (ctx.stream_tid) {
    log::write_line("", fmt::format("[pid {} goroutine {}] {}", tid, -ctx.stream_tid, text));
    return;
  }
  log::write_line("", fmt::format("[pid {}] {}", tid, text));
}

}  // namespace ft
