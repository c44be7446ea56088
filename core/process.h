// Process and Thread: the tracer's model of a traced thread group.
//
// A Process owns its address-space state: the mapped modules and their symbols, the
// entry breakpoints planted in its text, the out-of-line (SSOL) areas, the remote
// memory handle and its trace file. It owns its threads; each Thread owns its shadow
// call stack. The Tracer owns the processes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "arch/arch.h"
#include "core/backtracer.h"
#include "core/call_stack.h"
#include "core/dwarf_params.h"
#include "core/elf_image.h"
#include "core/fast_return.h"
#include "core/module_map.h"
#include "common/remote_addr.h"
#include "core/remote_memory.h"
#include "core/ssol_area.h"
#include "core/symbol_policy.h"
#include "core/trace_writer.h"
#include "functracer/plugin.h"

namespace ft {

struct Module {
  MappedModule map;
  std::shared_ptr<const ElfImage> elf;
  uint64_t bias = 0;  // run-time address = link-time address + bias
  bool is_main = false;
  std::unique_ptr<DwarfParams> dwarf;  // opened on first use
  bool dwarf_tried = false;
  bool init_hooked = false;  // its .init carries a kHookModuleInit breakpoint (or cannot)
  bool data_file = false;    // a mapped file that is not ELF (/etc/ld.so.cache, a locale archive)
};

// What the plugins want of a function: bit i of a mask stands for the i-th plugin;
// tags are (plugin index, the tag its symbol callback chose), for the plugins that
// chose one.
struct Interest {
  uint64_t entry_mask = 0, return_mask = 0;
  uint64_t value_only_mask = 0;  // plugins whose returns need only the return registers
  bool params = false;
  std::vector<std::pair<uint32_t, uint64_t>> tags;
  bool any() const { return entry_mask || return_mask; }
  void merge(const Interest& o) {
    entry_mask |= o.entry_mask;
    return_mask |= o.return_mask;
    value_only_mask |= o.value_only_mask;
    params = params || o.params;
    for (const auto& t : o.tags)
      if (tag_of(t.first) == 0) tags.push_back(t);
  }
  uint64_t tag_of(uint32_t plugin) const {
    for (const auto& [i, tag] : tags)
      if (i == plugin) return tag;
    return 0;
  }
};

// An IFUNC a plugin wants traced: its resolver is called in the process once the
// modules are relocated, and the implementation it returns gets the breakpoint.
struct PendingIfunc {
  const Module* module = nullptr;
  ElfSymbol sym;
  std::string demangled;
  Interest interest;
};

// A function the tracer has a breakpoint on, or had (ids stay valid for the shadow
// stacks after the module is gone).
struct FunctionInfo {
  std::string name;       // as in the symbol table
  std::string demangled;
  std::string module;
  RemoteAddr address;
  uint64_t entry_mask = 0;   // plugins that want calls
  uint64_t return_mask = 0;  // plugins that want returns
  uint64_t value_only_mask = 0;  // of those, the ones that need only the return registers
  // Its returns may be handled in the process (see fast_return.h).
  bool fast_return() const { return return_mask && (return_mask & ~value_only_mask) == 0; }
  std::vector<std::pair<uint32_t, uint64_t>> tags;  // as in Interest
  uint64_t tag_of(uint32_t plugin) const {
    for (const auto& [i, tag] : tags)
      if (i == plugin) return tag;
    return 0;
  }
  std::vector<ft_param_kind> params;  // integer-register order (see ft_function)
  std::vector<uint8_t> param_sizes;
  std::vector<int8_t> param_regs;
  int nparams = -1;
  int ret_kind = -1;
  unsigned ret_size = 8;
  ft_function view() const {
    return ft_function{name.c_str(), demangled.c_str(), module.c_str(), address.value(), 0, nparams,
                       params.empty() ? nullptr : params.data(),
                       param_sizes.empty() ? nullptr : param_sizes.data(),
                       param_regs.empty() ? nullptr : param_regs.data(), ret_kind, ret_size};
  }

};

struct Breakpoint {
  RemoteAddr addr;
  uint8_t orig_byte = 0;
  arch::Relocation reloc;
  RemoteAddr slot;
  uint32_t fn = 0;              // FunctionInfo id (valid when traced)
  bool traced = false;
  unsigned hooks = kHookNone;
  const Module* module = nullptr;
};

class Process;

struct Thread {
  pid_t tid = 0;
  Process* process = nullptr;
  CallStack stack;
  bool awaiting_initial_stop = false;  // new thread: its first stop is ours, not the program's
  int held_signal = 0;                 // a signal to deliver at the next resume
  // Attaching and detaching: the thread is in a ptrace-stop functracer has not resumed
  // yet (stopped), possibly a group-stop (the program was stopped by SIGSTOP & co.).
  bool stopped = false;
  bool group_stop = false;
  long syscall_nr = -1;  // the system call between its entry and exit stops
  // Where _Unwind_Backtrace returns to (ip, sp after the return): rearm there.
  uint64_t rearm_ip = 0, rearm_sp = 0;
  // Returns handled in the process (fast_return.h): the thread's block, -1 if none,
  // and the records functracer wrote there (slot, real return address), outermost
  // first, as it last knew them: the fast frames of `stack`, in order.
  int fast_slot = -1;
  std::vector<std::pair<uint64_t, uint64_t>> fast_records;
  // The word at sp_word_at (the thread's sp at this stop), read with the records.
  bool sp_word_valid = false;
  uint64_t sp_word_at = 0, sp_word = 0;
};

class Process {
 public:
  explicit Process(pid_t pid) : pid_(pid), mem_(pid) {}

  pid_t pid() const { return pid_; }
  RemoteMemory& mem() { return mem_; }

  std::string exe;
  std::string cmdline;
  std::vector<std::unique_ptr<Module>> modules;
  std::unordered_map<uint64_t, Breakpoint> breakpoints;  // by address
  std::vector<FunctionInfo> functions;                   // by id
  std::vector<std::unique_ptr<SsolArea>> areas;
  std::vector<PendingIfunc> ifuncs;  // not resolved yet
  std::unordered_map<uint64_t, uint64_t> ifunc_impls;  // implementation -> resolver, once resolved
  RemoteAddr trampoline;
  // Returns handled in the process (fast_return.h): the mapping (null: not mapped
  // yet), whether it cannot be (no fast returns in this process), which thread has
  // each block (0: free) and each block's stub (null: not written yet).
  RemoteAddr fast_data;
  bool fast_unavailable = false;
  std::vector<pid_t> fast_owner;
  std::vector<RemoteAddr> fast_stubs;
  std::unordered_map<uint64_t, int> fast_stub_slot;  // stub address -> block
  // A hijacked return address: the trampoline or a thread's stub.
  bool is_return_hook(uint64_t v) const { return (!trampoline.null() && v == trampoline.value()) || fast_stub_slot.count(v); }
  // The stub whose slow path stopped at `at` (the int3), or -1.
  int fast_slow_stop(RemoteAddr at) const {
    if (fast_stub_slot.empty()) return -1;
    auto it = fast_stub_slot.find(at.value() - fastret::kSlowTrapOffset);
    return it == fast_stub_slot.end() ? -1 : it->second;
  }
  RemoteAddr r_debug;
  std::unique_ptr<Backtracer> unwinder;  // created at the first backtrace  // the dynamic linker's struct r_debug, if known
  std::map<pid_t, std::unique_ptr<Thread>> threads;
  std::unique_ptr<TraceWriter> trace;
  bool silent = false;        // a child kept under control only until it execs (not reported)
  pid_t reports_to = 0;       // silent vfork child: its calls are reported as this process's
  bool started = false;       // the first exec of a launched program has been seen
  bool release_pending = false;  // an unfollowed fork child: clean up and detach at its first stop
  int fatal_signal = 0;       // the last fatal signal delivered, with its faulting address
  uint64_t fault_addr = 0;
  bool fault_addr_valid = false;
  int exit_code = -1;         // set once it exited
  bool attached = false;      // running before functracer came (-p): it is detached, not killed
  // Where functracer may write temporary code while every thread is stopped (the
  // first out-of-line area is mapped by a system call injected there); null: at the
  // stopped thread's own ip.
  RemoteAddr scratch;

  Thread* add_thread(pid_t tid) {
    auto t = std::make_unique<Thread>();
    t->tid = tid;
    t->process = this;
    Thread* raw = t.get();
    threads[tid] = std::move(t);
    return raw;
  }
  bool is_trampoline(RemoteAddr ip) const { return !trampoline.null() && ip == trampoline; }
  const Module* module_at(RemoteAddr a) const {
    for (const auto& m : modules)
      if (a.value() >= m->map.base && a.value() < m->map.end) return m.get();
    return nullptr;
  }
  Module* module_at(RemoteAddr a) { return const_cast<Module*>(std::as_const(*this).module_at(a)); }

 private:
  pid_t pid_;
  RemoteMemory mem_;
};

}  // namespace ft
