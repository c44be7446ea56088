// IFUNCs. An STT_GNU_IFUNC symbol (strlen, memcpy in glibc) is a
// resolver: the dynamic linker calls it while relocating and binds the name to the
// implementation it returns (__strlen_avx2 on one machine, __strlen_sse2 on another).
// The implementation is what runs, for calls through the PLT and for the library's
// own internal calls alike, so that is where the breakpoint goes, under the IFUNC's
// name.
//
// functracer asks the resolver itself: it calls it in a stopped thread of the process
// (Injector::call) and plants a breakpoint at the address it returns. Resolvers read
// the CPU description through relocated pointers (glibc: _rtld_global_ro), so they can
// only be asked once their module is relocated. The dynamic linker relocates every
// module of a load (start-up, or one dlopen) before it runs the first .init function
// of that load; a breakpoint on the .init of each module (kHookModuleInit; the
// executable's entry point if it has no .init) is therefore a moment where every
// module loaded so far is relocated. A static executable applies its IRELATIVE
// relocations in __libc_start_main, also before its .init. An attached process is
// relocated already: its IFUNCs are resolved at once.
#include <fcntl.h>
#include <elf.h>
#include <unistd.h>

#include <map>

#include "core/log.h"
#include "core/plant_pass.h"
#include "core/symbol_policy.h"
#include "core/tracer.h"
#include "core/untraced.h"
#include "core/survival.h"

namespace ft {
namespace {

uint64_t hwcap_of(pid_t pid) {
  int fd = ::open(("/proc/" + std::to_string(pid) + "/auxv").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  uint64_t entry[2];
  uint64_t value = 0;
  while (::read(fd, entry, sizeof entry) == static_cast<ssize_t>(sizeof entry) && entry[0] != AT_NULL)
    if (entry[0] == AT_HWCAP) value = entry[1];
  ::close(fd);
  return value;
}

}  // namespace

void Tracer::plan_ifunc_resolution(Process& p, Thread& t, Registers& regs) {
  if (p.space.ifuncs.empty() || p.silent) return;
  for (auto& m : p.space.modules) {
    if (m->init_hooked || !m->elf) continue;
    m->init_hooked = true;
    RemoteAddr at;
    if (m->elf->init() != 0) at = m->runtime(m->elf->init());
    else if (m->is_main && !m->elf->is_static()) at = m->runtime(m->elf->entry());
    if (at.null()) continue;
    if (Breakpoint* bp = plant_raw(p, t, regs, at, m->map.path + " .init")) bp->hooks |= kHookModuleInit;
  }
}

void Tracer::resolve_ifuncs(Process& p, Thread& t, Registers& regs) {
  PassScope pass(p.space.pass, p.mem());  // every write in one pass (plant_pass.h)
  if (p.space.ifuncs.empty() || p.silent) return;
  std::vector<PendingIfunc> pending;
  pending.swap(p.space.ifuncs);
  uint64_t hwcap = hwcap_of(p.pid());
  std::unordered_map<RemoteAddr, RemoteAddr> answers;  // resolver -> implementation (aliases share one)
  // (module, where its code is) -> IFUNCs whose resolvers chose code no module holds
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> elsewhere;
  for (const PendingIfunc& f : pending) {
    RemoteAddr resolver = f.module->runtime(f.sym.value);
    Result<RemoteAddr> impl = Error::msg("");
    if (auto a = answers.find(resolver); a != answers.end()) {
      impl = a->second;
    } else if (auto v = injector_.call(t, regs, resolver, hwcap)) {
      impl = RemoteAddr(*v);
    } else {
      impl = v.error();
    }
    if (impl) answers[resolver] = *impl;
    if (!impl) {
      ++stats_.refused;
      report_untraced(p, f.demangled, resolver.value(),
                      "its IFUNC resolver in " + f.module->map.path + " failed: " + impl.error().message);
      continue;
    }
    Module* home = p.space.module_at(*impl);
    if (!home || !home->elf) {
      ++stats_.refused;
      std::string where = "code outside every module";
      if (auto maps = read_maps(p.pid()))
        for (const auto& e : *maps)
          if (impl->value() >= e.start && impl->value() < e.end && e.path == "[vdso]") where = "code in the vDSO";
      if (first_telling(f.demangled)) elsewhere[{f.module->map.path, where}].push_back(f.demangled);
      record_untraced(p, f.demangled, impl->value(), "its IFUNC resolver chose " + where);
      continue;
    }
    if (auto it = p.space.breakpoints.find(*impl); it != p.space.breakpoints.end() && it->second.traced) {
      // Another IFUNC (not an alias: that has the same resolver) picked this code.
      const FunctionInfo& other = p.space.functions[it->second.fn];
      if (auto r = p.space.ifunc_impls.find(*impl); r != p.space.ifunc_impls.end() && r->second != resolver)
        log::info("{} and {} run the same code ({:#x} in {}): calls of both are reported as {}", f.demangled,
                  other.demangled, impl->value(), home->map.path, other.demangled);
    }
    p.space.ifunc_impls.emplace(*impl, resolver);
    ElfSymbol impl_sym = f.sym;
    impl_sym.value = impl->value() - home->bias;
    impl_sym.ifunc = false;
    FT_DEBUG("IFUNC {} resolved to {:#x}", f.sym.name, impl->value());
    plant(p, t, regs, *home, *impl, impl_sym, f.demangled, f.interest,
          kHookNone);
  }
  survival::sync_traps(p);
  for (const auto& [key, names] : elsewhere) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    log::gap("cannot trace {} (IFUNC{} of {}): the resolver{} chose {}; {} calls are missing from the trace", list,
             names.size() == 1 ? "" : "s", key.first, names.size() == 1 ? "" : "s", key.second,
             names.size() == 1 ? "its" : "their");
  }
}

}  // namespace ft
