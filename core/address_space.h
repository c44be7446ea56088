// AddressSpace: what functracer keeps about one traced address space — the mapped
// modules and their symbols, the entry breakpoints planted in their code and the
// functions they stand for, the out-of-line (SSOL) areas, the return hooks (the
// trampoline, the threads' stubs and their records), the IFUNCs still to resolve, the
// dynamic linker's r_debug, and the call stack unwinder with its cached frame rules.
//
// Its life follows the kernel's (fork(2), execve(2)):
//  - fork: the child gets a copy of the parent's memory, our breakpoints, areas and
//    stubs included: clone() copies the bookkeeping to match (module pointers of the
//    copy's breakpoints point at the copy's modules). vfork (a shared address space)
//    clones too, but the parent's return records are not the child's to use.
//  - exec: the old image is gone with everything in it: reset().
// Pure bookkeeping: nothing here touches the tracee (the Tracer and its parts do).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/backtracer.h"
#include "core/breakpoint.h"
#include "core/dwarf_params.h"
#include "core/elf_image.h"
#include "core/fast_return.h"
#include "core/go_stacks.h"
#include "core/module_map.h"
#include "core/plant_pass.h"
#include "core/recorder_space.h"
#include "core/register_signature.h"
#include "common/remote_addr.h"
#include "core/ssol_area.h"
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
  // Where a link-time address of the module is in the process.
  RemoteAddr runtime(uint64_t link_addr) const { return RemoteAddr(link_addr + bias); }
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
  // Its returns are caught by breakpoints on its exits, the stack never written
  // (--returns=ret-sites, Go code; doc/internals.md section 8c).
  bool ret_sites = false;
  bool go = false;  // Go code: frames keyed by goroutine (go_stacks.h)
  // Its arguments are in the registers of Go's internal ABI (Traits::go_args), not the
  // C convention's: a Go function's DWARF says so, else any function of a Go module.
  bool go_abi = false;
  bool exits_planted = false;
  // A ret-sites function whose exits could not be found (no size, code not in the
  // file): its returns are caught at the return address instead, which leaves the
  // stack alone too.
  bool exits_unknown = false;
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
  std::vector<const char*> param_labels, param_formats;  // static strings (RegisterArg)
  // RegisterArg::members, kept where moving the FunctionInfo does not move them.
  std::vector<std::shared_ptr<const std::string>> member_texts;
  std::vector<const char*> param_members;
  // RegisterSignature::ret_members ("S": a Go string result), kept as member_texts.
  std::shared_ptr<const std::string> ret_members = std::make_shared<const std::string>();
  // A function whose return is a string has its returns stop, so the plugins' ret
  // callbacks can read the string (FT_TRACE_RETURN_VALUE, plugin.h).
  void set_signature(const RegisterSignature& rs) {
    for (const auto& a : rs.args) {
      params.push_back(a.kind);
      param_sizes.push_back(a.size);
      param_regs.push_back(a.reg);
      param_labels.push_back(a.label);
      param_formats.push_back(a.format);
      member_texts.push_back(std::make_shared<const std::string>(a.members));
      param_members.push_back(member_texts.back()->c_str());
    }
    nparams = static_cast<int>(params.size());
    ret_kind = rs.ret_kind;
    ret_size = rs.ret_size;
    ret_members = std::make_shared<const std::string>(rs.ret_members);
    if (ret_kind == FT_PARAM_STRING || !rs.ret_members.empty()) value_only_mask = 0;
  }
  ft_function view() const {
    return ft_function{name.c_str(), demangled.c_str(), module.c_str(), address.value(), 0, nparams,
                       params.empty() ? nullptr : params.data(),
                       param_sizes.empty() ? nullptr : param_sizes.data(),
                       param_regs.empty() ? nullptr : param_regs.data(), ret_kind, ret_size,
                       param_labels.empty() ? nullptr : param_labels.data(),
                       param_formats.empty() ? nullptr : param_formats.data(),
                       param_members.empty() ? nullptr : param_members.data(), ret_members->c_str()};
  }

};

class AddressSpace {
 public:
  AddressSpace() = default;
  AddressSpace(AddressSpace&&) = default;
  AddressSpace& operator=(AddressSpace&&) = default;

  // A fork child's copy (see above). shares_memory: vfork or clone(CLONE_VM).
  AddressSpace clone(bool shares_memory) const;
  // exec: a new image with nothing of ours in it. Function ids stay valid.
  void reset();

  std::vector<std::unique_ptr<Module>> modules;
  std::unordered_map<RemoteAddr, Breakpoint> breakpoints;  // by address
  std::vector<FunctionInfo> functions;                   // by id
  std::vector<std::unique_ptr<SsolArea>> areas;
  std::vector<PendingIfunc> ifuncs;  // not resolved yet
  std::unordered_map<RemoteAddr, RemoteAddr> ifunc_impls;  // implementation -> resolver, once resolved
  RemoteAddr trampoline;
  // Returns handled in the process (fast_return.h): the mapping (null: not mapped
  // yet), whether it cannot be (no fast returns in this process), which thread has
  // each block (0: free) and each block's stub (null: not written yet).
  RemoteAddr fast_data;
  bool fast_unavailable = false;
  std::vector<pid_t> fast_owner;
  std::vector<RemoteAddr> fast_stubs;
  std::unordered_map<RemoteAddr, int> fast_stub_slot;  // stub address -> block
  RecorderSpace recorder;                // the in-process recorder (fast_path.h)
  RemoteAddr r_debug;                    // the dynamic linker's struct r_debug, if known
  // The process runs, or may run, with a shadow stack (x86 CET): a return address
  // written on its stack would end it, so returns are caught at their sites.
  bool shadow_stack = false;
  std::unique_ptr<Backtracer> unwinder;  // created at the first backtrace
  // Words at an entry's [sp] found to be return addresses (the bytes before them are a
  // call, arch/call_sites.h); forgotten when a module goes away.
  std::unordered_set<RemoteAddr> return_addresses;
  GoStacks go_stacks;  // where Go frames are (shadow stack keys)
  // Where functracer may write temporary code while every thread is stopped (the
  // first out-of-line area is mapped by a system call injected there); null: at the
  // stopped thread's own ip.
  RemoteAddr scratch;
  // Attached: where system calls functracer injects run, followed by the code that
  // puts the thread's registers back should functracer die meanwhile
  // (Injector::syscall); null: the area's stub (or the scratch address).
  RemoteAddr resume_code;
  // The planting pass open on this address space, if any (plant_pass.h): planting
  // queues its writes there.
  PlantPass* pass = nullptr;

  bool is_trampoline(RemoteAddr ip) const { return !trampoline.null() && ip == trampoline; }
  // A hijacked return address: the trampoline or a thread's stub.
  bool is_return_hook(RemoteAddr v) const {
    return (!trampoline.null() && v == trampoline) || fast_stub_slot.count(v) || recorder.is_return_stub(v);
  }
  // A trap of functracer's own at `at`: a breakpoint (an entry's, a trampoline's stop
  // path), the return trampoline, a return stub's slow path.
  bool is_our_trap(RemoteAddr at) const {
    return breakpoints.count(at) || is_trampoline(at) || fast_slow_stop(at) >= 0 ||
           (!recorder.return_trap.null() && at == recorder.return_trap);
  }
  // The stub whose slow path stopped at `at` (the int3), or -1.
  int fast_slow_stop(RemoteAddr at) const {
    if (fast_stub_slot.empty()) return -1;
    auto it = fast_stub_slot.find(at - fastret::kSlowTrapOffset);
    return it == fast_stub_slot.end() ? -1 : it->second;
  }
  const Module* module_at(RemoteAddr a) const;
  Module* module_at(RemoteAddr a) { return const_cast<Module*>(std::as_const(*this).module_at(a)); }
};

}  // namespace ft
