// PluginHost: loads plugins (dlopen by name from the plugin directory, or by path),
// checks their API version, offers them every function symbol and dispatches events.
// It also implements the helper table (ft_host_api) plugins call back into; the event
// context handed to them (ft_ctx) is defined here.
#pragma once

#include <sys/types.h>
#include <sys/user.h>

#include <cstdint>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "core/process.h"
#include "arch/registers.h"
#include "common/result.h"
#include "functracer/plugin.h"

struct ft_ctx {
  ft::Process* process = nullptr;
  ft::Thread* thread = nullptr;
  const ft::Registers* regs = nullptr;
  uint64_t now_ns = 0;
  unsigned depth = 0;
  user_fpregs_struct fp;  // fetched on first use (ft_host_api.fp_arg); not cleared: 512 bytes per event
  bool fp_valid = false;
  // Where a backtrace starts: at a call, the traced function's entry (its own frame is
  // left out); at a return, the real return address (regs->ip is the trampoline).
  ft::RemoteAddr call_pc;
  ft::RemoteAddr return_to;
  // At an unwound frame: the return address it would have returned to. Its caller may
  // be gone too; the backtrace is that address, then the frames of the thread's
  // present stack above that caller's frame, if it is still there.
  ft::RemoteAddr unwound_ret;
  const ft_syscall* syscall = nullptr;  // at a system call stop
  bool go_abi = false;  // a call of a Go function: its arguments are in Go's registers
  // Not 0: the event is a goroutine's, whose records have this TID (-goroutine) and
  // the thread in a `thread` field (EventReporter::OfGoroutine).
  int stream_tid = 0;
  // A return handled in the process, reported later (fast_return.h): only the return
  // registers are known; memory and the stack have moved on.
  bool deferred = false;
  uint64_t deferred_xmm0 = 0;  // a deferred return's xmm0 (its other registers read as zeros)
  // A call recorded in the process: the return address it was called with (the one
  // frame a backtrace of it can have).
  ft::RemoteAddr recorded_caller;
  std::span<const uint64_t> recorded_frames;  // its call stack, when recorded (innermost first)
};

namespace ft {

class PluginHost {
 public:
  PluginHost();
  ~PluginHost();

  // NAME (looked up in the plugin directories) or a path to a .so.
  // NAME or PATH, optionally followed by ":OPTS" (the plugin's own options).
  Status load(const std::string& spec);
  size_t count() const { return plugins_.size(); }
  std::string names() const;  // comma-separated

  void set_option(const std::string& key, const std::string& value) { options_[key] = value; }
  const char* option(const char* key) const;
  void set_streaming(bool s) { streaming_ = s; }
  bool streaming() const { return streaming_; }

  using Interest = ft::Interest;
  Interest offer(const ft_symbol& sym);
  void module(ft_ctx& ctx, const ft_module& m);
  // Some plugin wants system call stops.
  bool wants_syscalls() const { return wants_syscalls_; }
  void syscall(ft_ctx& ctx, const ft_syscall& sc);

  void call(ft_ctx& ctx, const FunctionInfo& fn);
  void ret(ft_ctx& ctx, const FunctionInfo& fn);
  void unwound(ft_ctx& ctx, const FunctionInfo& fn, const char* reason);
  void event(ft_ctx& ctx, const ft_event& ev);
  // Some plugin wants the process's memory at its end and before a detach.
  bool wants_snapshots() const { return wants_snapshots_; }
  void snapshot(ft_ctx& ctx, const ft_snapshot& snap);
  // What the plugins wanting fn's calls read at them (ft_capture, merged): nullopt
  // when one of them needs the stopped thread (or does not say).
  std::optional<ft_capture> capture(const FunctionInfo& fn);
  void finish();

  // Writes a record to ctx's process trace (or nothing when streaming).
  void record(ft_ctx& ctx, TraceRecord& r);
  // The same for a plugin's record (ft_host_api.record), written as it is given.
  void record(ft_ctx& ctx, const char* type, const ft_field* fields, size_t n);
  // A line on stderr when streaming: "[pid tid] text".
  void print(ft_ctx& ctx, const std::string& text);

  // Handlers for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT on an alternate stack. A
  // fault in a plugin's code disables that plugin, says so in one line and sets
  // crashed(); a fault elsewhere calls engine_fault (which does not return).
  static void install_fault_handlers(void (*engine_fault)(int sig, void* addr));
  // A plugin crashed: the tracer lets go of the processes.
  bool crashed() const { return crashed_; }

  // Directories searched for plugins by name, in order.
  static std::vector<std::string> plugin_dirs();
  static std::vector<std::string> available();

 private:
  struct Loaded {
    void* handle = nullptr;
    const ft_plugin* plugin = nullptr;
    std::string path;
    bool dead = false;  // crashed: not called again
    decltype(ft_plugin::snapshot) snapshot = nullptr;  // NULL too when the table predates it
    decltype(ft_plugin::capture) capture = nullptr;    // NULL for a version-2 plugin
  };
  template <class F>
  void guarded(size_t i, const char* callback, F&& f);
  static void after_fault();
  static std::string fault_message(const std::string& name, const char* where);
  bool crashed_ = false;
  std::vector<Loaded> plugins_;
  std::map<std::string, std::string> options_;
  mutable std::set<std::string> asked_;  // options some plugin looked up
  bool streaming_ = false;
  bool wants_syscalls_ = false;
  bool wants_snapshots_ = false;
};

// The host of the running session (the C callbacks find it here).
PluginHost& plugin_host();

}  // namespace ft
