#include "core/address_space.h"

namespace ft {

AddressSpace AddressSpace::clone(bool shares_memory) const {
  AddressSpace c;
  for (const auto& m : modules) {
    auto copy = std::make_unique<Module>();
    copy->map = m->map;
    copy->elf = m->elf;
    copy->bias = m->bias;
    copy->is_main = m->is_main;
    copy->data_file = m->data_file;
    c.modules.push_back(std::move(copy));
  }
  c.breakpoints = breakpoints;
  for (auto& [a, bp] : c.breakpoints) bp.module = c.module_at(bp.addr);
  c.functions = functions;
  for (const auto& a : areas) c.areas.push_back(std::make_unique<SsolArea>(*a));
  c.trampoline = trampoline;
  c.resume_code = resume_code;
  c.r_debug = r_debug;
  c.shadow_stack = shadow_stack;
  c.return_addresses = return_addresses;
  // The stubs are in the copy too.
  c.fast_stubs = fast_stubs;
  c.fast_stub_slot = fast_stub_slot;
  // The recorder's code and trampolines are in the copy; its region is not (fork) or
  // is the parent's (vfork), whose rings are not the child's.
  const RecorderSpace& r = recorder;
  c.recorder.patches = r.patches;
  for (auto& s : c.recorder.patches) s.module = c.module_at(s.at);
  c.recorder.reindex();
  c.recorder.region = r.region;
  c.recorder.region_size = r.region_size;
  c.recorder.own = r.own;  // a fork copies it; a vfork child shares it
  if (r.guard_installed && r.rings) c.recorder.inherited_action = ft_rec_guard_of(r.header())->old_action;
  else c.recorder.inherited_action = r.inherited_action;
  c.recorder.code = r.code;
  c.recorder.entry_fn = r.entry_fn;
  c.recorder.return_fn = r.return_fn;
  c.recorder.return_stub = r.return_stub;
  c.recorder.return_trap = r.return_trap;
  c.recorder.code_size = r.code_size;
  c.recorder.return_after_call = r.return_after_call;
  c.recorder.entry_after_call = r.entry_after_call;
  c.recorder.signal_trap = r.signal_trap;
  c.recorder.trap_handler = r.trap_handler;
  c.recorder.trap_restorer = r.trap_restorer;
  c.recorder.walks = r.walks;
  c.recorder.ready = r.ready && shares_memory;
  c.recorder.borrowed = shares_memory;
  c.recorder.needs_region = r.ready && !shares_memory;
  c.recorder.unavailable = r.unavailable || shares_memory;
  if (shares_memory) {
    c.fast_unavailable = true;  // the parent's blocks: not the child's to use
  } else {
    c.fast_data = fast_data;
    c.fast_unavailable = fast_unavailable;
    if (!fast_owner.empty()) c.fast_owner.assign(fast_owner.size(), 0);
  }
  return c;
}

void AddressSpace::reset() {
  modules.clear();
  unwinder.reset();
  breakpoints.clear();
  areas.clear();
  ifuncs.clear();
  ifunc_impls.clear();
  trampoline = RemoteAddr();
  r_debug = RemoteAddr();
  shadow_stack = false;
  scratch = RemoteAddr();
  resume_code = RemoteAddr();
  return_addresses.clear();
  go_stacks = GoStacks();
  fast_data = RemoteAddr();
  fast_unavailable = false;
  fast_owner.clear();
  fast_stubs.clear();
  fast_stub_slot.clear();
  recorder = RecorderSpace{};
}

const Module* AddressSpace::module_at(RemoteAddr a) const {
  for (const auto& m : modules)
    if (a.value() >= m->map.base && a.value() < m->map.end) return m.get();
  return nullptr;
}

}  // namespace ft
