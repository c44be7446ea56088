// The Tracer and the address space it instruments: out-of-line areas (mapped through
// the Injector), modules and their symbols offered to the plugins, planting
// breakpoints. The bookkeeping itself is AddressSpace's (address_space.h).
#include <signal.h>
#include <elf.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "core/tracer.h"
#include "arch/arch.h"
#include "core/register_signature.h"
#include "common/check.h"
#include "common/demangle.h"
#include "common/load_bias.h"
#include "core/log.h"
#include "core/plant_pass.h"
#include "core/untraced.h"
#include "core/procfs.h"
#include "core/recorder.h"
#include "core/ptrace.h"
#include "core/symbol_policy.h"
#include "core/tracee_guards.h"
#include "core/survival.h"

namespace ft {

namespace {

// kResumeBytes of executable memory in p that nothing runs: the end of the last page
// of a module's code segment, past the segment (the kernel maps whole pages; those
// bytes are padding or the file's next bytes, never reached at those addresses).
struct ResumeRoom {
  RemoteAddr at;
  std::vector<uint8_t> file_bytes;  // what the file has there, put back afterwards
};

// The room, or nothing when no module loaded so far has that much. The bytes put back
// are the file's, so that a block a functracer that died left there goes too.
std::optional<ResumeRoom> resume_room(const Process& p, const std::vector<MapsEntry>& maps) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  for (const auto& m : p.space.modules) {
    if (!m->elf) continue;
    for (const ElfSegment& seg : m->elf->segments()) {
      if (!(seg.flags & PF_X) || seg.memsz == 0) continue;
      uint64_t end = m->bias + seg.vaddr + seg.memsz;
      uint64_t start = (end + 15) & ~uint64_t{15};
      uint64_t page_end = (end + page - 1) & ~(page - 1);
      if (page_end < start || page_end - start < Injector::kResumeBytes) continue;
      for (const MapsEntry& e : maps) {
        if (!e.x || e.start > start || page_end > e.end || e.path.empty()) continue;
        std::string file = e.path.ends_with(" (deleted)")
                               ? fmt::format("/proc/{}/map_files/{:x}-{:x}", p.pid(), e.start, e.end)
                               : e.path;
        int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        ResumeRoom room{RemoteAddr(start), std::vector<uint8_t>(Injector::kResumeBytes, 0)};
        // Past the end of the file the kernel maps zeros.
        ssize_t n = ::pread(fd, room.file_bytes.data(), room.file_bytes.size(),
                            static_cast<off_t>(e.offset + (start - e.start)));
        ::close(fd);
        if (n >= 0) return room;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

SsolArea* Tracer::area_near(Process& p, Thread& t, Registers& regs, RemoteAddr addr) {
  for (auto& a : p.space.areas)
    if (a->near(addr) && a->has_room()) return a.get();
  auto maps = read_maps(p.pid());
  if (!maps) return nullptr;
  const Module* m = p.space.module_at(addr);
  uint64_t lo = m ? m->map.base : addr.value(), hi = m ? m->map.end : addr.value() + 1;
  uint64_t hint = find_free_range(*maps, lo, hi, SsolArea::kSize);
  if (hint == 0) {
    log::warn("no room for an out-of-line area near {:#x} in process {}", addr.value(), p.pid());
    return nullptr;
  }
  // The first area is mapped with temporary code. An attached process runs the system
  // call from a resume block (Injector::syscall) in the padding after a module's code,
  // which gives the thread its registers back should functracer die meanwhile;
  // otherwise (or without such room) a `syscall; int3` written at the thread's ip or
  // the process's scratch address. That only happens while no other thread can run
  // there (right after exec, or with every thread stopped at attach).
  RemoteAddr stub, room;
  std::optional<CodePatch> temp;
  if (p.space.areas.empty()) {
    std::optional<ResumeRoom> rr;
    if (p.attached && arch::host().recorder) rr = resume_room(p, *maps);
    if (rr) {
      room = rr->at;
      FT_DEBUG("process {}: its first out-of-line area mapped from {:#x}", p.pid(), room.value());
    }
    stub = !room.null() ? room : p.space.scratch.null() ? regs.ip() : p.space.scratch;
    std::vector<uint8_t> code(arch::host().syscall.stub.begin(), arch::host().syscall.stub.end());
    auto patch = rr ? CodePatch::apply_restoring(p.mem(), stub, code, std::move(rr->file_bytes))
                    : CodePatch::apply(p.mem(), stub, code);
    if (!patch) return nullptr;
    temp.emplace(std::move(*patch));
  } else {
    stub = p.space.areas.front()->syscall_stub();
  }
  auto rc = injector_.syscall(t, regs, stub, SYS_mmap,
                              {hint, SsolArea::kSize, PROT_READ | PROT_EXEC,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, static_cast<uint64_t>(-1), 0},
                              room);
  temp.reset();
  if (!rc) {
    log::warn("cannot map an out-of-line area in process {}: {}", p.pid(), rc.error().message);
    return nullptr;
  }
  if (*rc > static_cast<uint64_t>(-4096)) {
    log::warn("cannot map an out-of-line area in process {}: {}", p.pid(),
              std::strerror(static_cast<int>(-static_cast<int64_t>(*rc))));
    return nullptr;
  }
  auto area = std::make_unique<SsolArea>(RemoteAddr(*rc));
  auto header = arch::host().area_header(SsolArea::kSyscallOffset);
  if (auto s = p.mem().write(area->base(), header); !s) {
    log::warn("{}", s.error().message);
    return nullptr;
  }
  FT_DEBUG("process {}: out-of-line area at {:#x}", p.pid(), area->base().value());
  if (p.space.trampoline.null()) p.space.trampoline = area->trampoline();
  p.space.areas.push_back(std::move(area));
  survival::note_areas(p);
  return p.space.areas.back().get();
}

Status Tracer::setup_address_space(Process& p, Thread& t, Registers& regs) {
  if (auto s = p.mem().open(); !s) return s;  // the old file was bound to the old image
  if (auto s = injector_.settle_after_exec(t, regs); !s) return s;
  auto maps = read_maps(p.pid());
  if (!maps) return maps.error();
  return load_modules(p, t, regs, *maps);
}

Status Tracer::load_modules(Process& p, Thread& t, Registers& regs, const std::vector<MapsEntry>& maps) {
  auto mods = modules_from_maps(maps);
  const MappedModule* main = nullptr;
  for (const auto& m : mods)
    if (m.path == p.exe) main = &m;
  if (!main) return Error::msg("cannot find " + p.exe + " in the process's memory map");
  check_shadow_stack(p, main->path);
  // The first area goes next to the executable; it holds the trampoline.
  auto main_copy = *main;
  load_module(p, t, regs, main_copy, true);
  for (const auto& m : mods)
    if (m.path != p.exe) load_module(p, t, regs, m, false);
  report_.write_modules(p);
  plan_ifunc_resolution(p, t, regs);
  fast_path_.update_unwind(p);
  survival::sync_traps(p);
  return {};
}

void Tracer::rescan_modules(Process& p, Thread& t, Registers& regs) {
  PassScope pass(p.space.pass, p.mem());  // every write in one pass (plant_pass.h)
  auto maps = read_maps(p.pid());
  if (!maps) return;
  check_shadow_stack(p, p.exe);  // the dynamic linker may have turned it on since
  auto now = modules_from_maps(*maps);
  // Gone: forget their breakpoints without touching their memory.
  for (auto it = p.space.modules.begin(); it != p.space.modules.end();) {
    const Module& m = **it;
    bool present = std::any_of(now.begin(), now.end(), [&](const MappedModule& n) {
      return n.path == m.map.path && n.base == m.map.base && n.inode == m.map.inode;
    });
    if (present) {
      ++it;
      continue;
    }
    FT_DEBUG("process {}: module {} unloaded", p.pid(), m.map.path);
    if (m.elf && !p.silent) report_.module(p, t, m, false);
    if (p.space.unwinder) p.space.unwinder->flush();
    std::erase_if(p.space.ifuncs, [&](const PendingIfunc& f) { return f.module == &m; });
    for (auto b = p.space.breakpoints.begin(); b != p.space.breakpoints.end();)
      b = b->second.module == &m ? p.space.breakpoints.erase(b) : std::next(b);
    p.space.recorder.forget_module(&m);
    p.space.return_addresses.clear();
    it = p.space.modules.erase(it);
  }
  size_t before = p.space.modules.size();
  for (const auto& n : now) {
    bool known = std::any_of(p.space.modules.begin(), p.space.modules.end(), [&](const auto& m) {
      return n.path == m->map.path && n.base == m->map.base && n.inode == m->map.inode;
    });
    if (!known) load_module(p, t, regs, n, n.path == p.exe);
  }
  if (p.trace)
    for (size_t i = before; i < p.space.modules.size(); ++i) report_.write_module(p, *p.space.modules[i]);
  plan_ifunc_resolution(p, t, regs);
  fast_path_.update_unwind(p);
  survival::sync_traps(p);
}

void Tracer::load_module(Process& p, Thread& t, Registers& regs, const MappedModule& mm, bool is_main) {
  // A file removed or replaced since it was mapped is read through /proc: its path
  // names another file now, or none.
  std::string source = mm.path;
  if (mm.deleted)
    source = is_main ? fmt::format("/proc/{}/exe", p.pid())
                     : fmt::format("/proc/{}/map_files/{:x}-{:x}", p.pid(), mm.base, mm.base_end);
  auto elf = elf_cache_.open(source);
  auto m = std::make_unique<Module>();
  m->map = mm;
  m->is_main = is_main;
  if (!elf) {
    if (elf.error().message.ends_with("not an ELF file")) {  // shared memory, data files
      FT_DEBUG("{}", elf.error().message);
      m->data_file = true;  // kept to follow the map, not a module of the trace
    } else {
      // A file replaced on disk, or a truncated or corrupt one the kernel still ran: none
      // of its functions can be traced, and the trace says so (the module's path stands
      // for its functions, unknown without its symbols).
      report_untraced_module(p, mm.path, mm.base,
                             (mm.deleted ? "removed or replaced on disk since the process loaded it, and unreadable: "
                                         : "its file cannot be read: ") + elf.error().message);
    }
    p.space.modules.push_back(std::move(m));
    return;
  }
  std::shared_ptr<const ElfImage> img = std::move(*elf);
  if (img->machine() != arch::host().elf_machine) {
    if (is_main)
      report_untraced_module(p, mm.path, mm.base, fmt::format("not an {} program", arch::host().title));
    p.space.modules.push_back(std::move(m));
    return;
  }
  m->elf = img;
  // No segment at the mapping's offset: nothing can be placed, the base will do.
  m->bias = load_bias(img->is_dyn(), img->segments(), mm.base, mm.offset).value_or(mm.base);
  // Plugins explain unmatched patterns better when they know the program is stripped.
  if (is_main && !img->has_symtab()) host_.set_option("main_stripped", mm.path);
  if (is_main && img->is_go()) host_.set_option("main_go", mm.path);
  Module& mod = *m;
  p.space.modules.push_back(std::move(m));
  FT_DEBUG("process {}: module {} at {:#x} (bias {:#x}, {} functions)", p.pid(), mm.path, mm.base, mod.bias,
           img->functions().size());
  if (!p.silent) report_.module(p, t, mod, true);
  const std::vector<std::string>& demangled = img->demangled_names();
  for (size_t i = 0; i < img->functions().size(); ++i) {
    const ElfSymbol& sym = img->functions()[i];
    if (is_fragment(sym.name)) continue;
    if (not_a_called_function(sym.name) || sym.value == img->entry()) {
      FT_DEBUG("not tracing {}: not entered by a call", sym.name);
      continue;
    }
    RemoteAddr addr = mod.runtime(sym.value);
    unsigned hooks = hooks_for(sym.name);
    if (hooks == kHookLinker && mod.is_main && !img->is_static()) hooks = kHookNone;
    const std::string& dem = demangled[i];
    ft_symbol s{sym.name.c_str(), dem.c_str(), mm.path.c_str(), addr.value(), sym.size, sym.plt ? 1 : 0, is_main ? 1 : 0};
    auto in = host_.offer(s);
    if (sym.ifunc) {
      // The symbol is the resolver; the implementation it picks is what the program
      // calls. It is asked once the module is relocated (tracer_ifunc.cc).
      if (in.any()) p.space.ifuncs.push_back(PendingIfunc{&mod, sym, dem, in});
      continue;
    }
    if (hooks == kHookLinker)
      if (const ElfSymbol* rd = img->find("_r_debug")) p.space.r_debug = mod.runtime(rd->value);
    if (in.any() || hooks != kHookNone) plant(p, t, regs, mod, addr, sym, dem, in, hooks);
    if (in.return_mask) plant_exits(p, t, regs, mod, addr, sym);
  }
}

bool Tracer::walks_stacks(Module& m) {
  if (!m.elf || m.elf->stack_walker() == ElfImage::StackWalker::None) return false;
  if (walkers_told_.insert(m.map.path).second) {
    if (opts_.returns != Options::Returns::ReturnSites)
      log::info("{} holds {}, which walks its threads' stacks itself: returns of its functions are caught at their "
                "return instructions (a stop each) and their calls are not recorded in the process",
                m.map.path, ElfImage::stack_walker_name(m.elf->stack_walker()));
  }
  return true;
}

void Tracer::check_shadow_stack(Process& p, const std::string& exe) {
  if (p.space.shadow_stack || p.silent) return;
  bool on = shadow_stack_on(p.pid());
  bool may = false;
  if (!on && !p.attached && kernel_offers_shadow_stacks())
    if (auto img = elf_cache_.open(exe)) may = (*img)->shadow_stack();
  if (!on && !may) return;
  p.space.shadow_stack = true;
  if (opts_.returns != Options::Returns::ReturnSites)
    log::info("process {} {} with a shadow stack (x86 CET{}): returns of traced functions are caught at their "
              "return instructions (a stop each) and the stack is never written",
              p.pid(), on ? "runs" : "will run", on ? "" : ": its executable is marked for one and the kernel offers them");
}

bool Tracer::returns_at_sites(Process& p, Module& m) {
  return walks_stacks(m) || opts_.returns == Options::Returns::ReturnSites || p.space.shadow_stack;
}

void Tracer::plant(Process& p, Thread& t, Registers& regs, Module& m, RemoteAddr addr, const ElfSymbol& sym,
                   const std::string& demangled, const Interest& in, unsigned hooks) {
  auto make_function = [&]() {
    FunctionInfo fi;
    fi.name = sym.name;
    fi.demangled = demangled;
    fi.module = m.map.path;
    fi.address = addr;
    fi.entry_mask = in.entry_mask;
    fi.return_mask = in.return_mask;
    fi.value_only_mask = in.value_only_mask;
    fi.tags = in.tags;
    fi.go = m.elf && m.elf->is_go();
    fi.go_abi = fi.go;
    fi.ret_sites = returns_at_sites(p, m);
    if (in.params && m.elf && signatures_)
      if (auto found = signatures_->find(m, sym, demangled)) {
        FT_DEBUG("parameters of {} from {}", demangled, origin_name(found->origin));
        // DWARF tells Go's code from the C code cgo links in; a prototype does not.
        if (found->origin == SignatureSources::Origin::Dwarf) fi.go_abi = found->sig.go_abi;
        fi.set_signature(register_signature(arch::host(), found->sig));
      }
    return fi;
  };
  auto add_function = [&](Breakpoint& bp, FunctionInfo fi) {
    bp.traced = true;
    bp.fn = static_cast<uint32_t>(p.space.functions.size());
    p.space.functions.push_back(std::move(fi));
  };

  // An attached program gets the recorder, and with it the SIGTRAP handler that lets it
  // outlive functracer (survival.h), before the first trap of ours is in its code.
  if (p.attached && !p.space.recorder.ready && !p.space.recorder.unavailable &&
      area_near(p, t, regs, addr))
    fast_path_.prepare(p, t, regs);
  auto existing = p.space.breakpoints.find(addr);
  // Another symbol of a function whose entry is patched (an alias: C1/C2 constructors).
  if (const EntryPatchSite* s = p.space.recorder.patch_at_entry(addr)) existing = p.space.breakpoints.find(s->slow_trap);
  if (auto it = existing; it != p.space.breakpoints.end()) {
    Breakpoint& bp = it->second;
    bp.hooks |= hooks;
    if (in.any()) {
      if (!bp.traced) {
        add_function(bp, make_function());
      } else {
        FunctionInfo& fi = p.space.functions[bp.fn];
        fi.entry_mask |= in.entry_mask;
        fi.return_mask |= in.return_mask;
        if (fi.ret_kind != FT_PARAM_STRING) fi.value_only_mask |= in.value_only_mask;
        for (const auto& tag : in.tags)
          if (fi.tag_of(tag.first) == 0) fi.tags.push_back(tag);
      }
    }
    return;
  }
  bool ret_sites = returns_at_sites(p, m);
  if (in.any() && hooks == kHookNone && fast_path_.wanted() && in.entry_mask && !p.silent && !ret_sites) {
    // The entry may reach the in-process recorder instead of a breakpoint.
    FunctionInfo fi = make_function();
    std::string reason;
    if (auto cap = host_.capture(fi); !cap) {
      reason = "a plugin needs the stopped thread at its calls";
    } else if (cap->fp_args || cap->strings || cap->backtrace > FT_REC_MAX_STACK) {
      reason = cap->backtrace > FT_REC_MAX_STACK ? "a plugin takes deeper backtraces at its calls"
                                                 : "a plugin reads floating-point arguments or strings at its calls";
    } else if (SsolArea* area = area_near(p, t, regs, addr)) {
      uint32_t id = static_cast<uint32_t>(p.space.functions.size());
      p.space.functions.push_back(fi);
      // A one-frame backtrace is the call's return address, which every record has.
      unsigned frames = cap->backtrace > 1 ? cap->backtrace : 0;
      if (fast_path_.patch(p, t, regs, m, sym, addr, id, cap->int_args, frames, *area, reason)) {
        const EntryPatchSite& site = p.space.recorder.patches.back();
        Breakpoint bp;  // the trampoline's trap stands for the entry on the stop path
        bp.addr = site.slow_trap;
        bp.entry = addr;
        bp.orig_byte = arch::host().trap[0];
        bp.reloc.kind = arch::Relocation::Kind::OutOfLine;
        bp.slot = site.stop_resume;
        bp.fn = id;
        bp.traced = true;
        bp.module = &m;
        p.space.breakpoints.emplace(bp.addr, std::move(bp));  // in the guard's table already
        return;
      }
      p.space.functions.pop_back();
    } else {
      reason = "no out-of-line area near it";
    }
    ++stats_.patch_refused;
    FT_DEBUG("{}: entry not patched ({}): a breakpoint instead", demangled, reason);
    Breakpoint* bp = plant_raw(p, t, regs, addr, demangled);
    if (!bp) return;
    bp->hooks = hooks;
    bp->module = &m;
    add_function(*bp, std::move(fi));
    return;
  }
  Breakpoint* bp = plant_raw(p, t, regs, addr, demangled);
  if (!bp) return;
  bp->hooks = hooks;
  bp->module = &m;
  if (in.any()) add_function(*bp, make_function());
}

void Tracer::plant_exits(Process& p, Thread& t, Registers& regs, Module& m, RemoteAddr addr, const ElfSymbol& sym) {
  auto it = p.space.breakpoints.find(addr);
  if (it == p.space.breakpoints.end() || !it->second.traced) return;
  uint32_t fn_id = it->second.fn;
  if (!p.space.functions[fn_id].ret_sites || p.space.functions[fn_id].exits_planted) return;
  p.space.functions[fn_id].exits_planted = true;
  std::string name = p.space.functions[fn_id].demangled;
  std::span<const uint8_t> body = m.elf ? m.elf->read_only_bytes(sym.value, sym.size) : std::span<const uint8_t>();
  if (body.empty()) {
    // No extent (an assembler label of size 0, _init) or not in the file's code.
    FT_DEBUG("{}: its returns are not known: caught at the return address", name);
    p.space.functions[fn_id].exits_unknown = true;
    return;
  }
  arch::FunctionExits exits = arch::host().function_exits(body, addr.value());
  if (!exits.complete)
    log::warn("{}: undecodable bytes in its code; returns after them are seen only when the stack goes past them", name);
  auto plant_exit = [&](uint64_t at, const char* what) {
    if (Breakpoint* bp = plant_raw(p, t, regs, RemoteAddr(at), name + " " + what)) {
      bp->hooks |= kHookFunctionExit;
      bp->exit_of = fn_id;
      if (!bp->module) bp->module = &m;
    }
  };
  for (uint64_t at : exits.returns) plant_exit(at, "return");
  for (uint64_t at : exits.tail_jumps) plant_exit(at, "tail jump");
  FT_DEBUG("{}: {} returns, {} tail jumps", name, exits.returns.size(), exits.tail_jumps.size());
}

void Tracer::verify_breakpoints(Process& p, bool replant) {
  const auto trap = arch::host().trap;
  // The trap bytes of every breakpoint in a file's code (a trampoline's trap, entry set,
  // is in functracer's own area), read a batch per system call.
  constexpr size_t kBatch = 512;
  std::vector<Breakpoint*> bps;
  for (auto& [addr, bp] : p.space.breakpoints)
    if (bp.entry.null() && bp.module) bps.push_back(&bp);
  std::vector<uint8_t> bytes(bps.size() * trap.size());
  std::vector<RemoteMemory::Piece> pieces;
  for (size_t first = 0; first < bps.size(); first += kBatch) {
    const size_t last = std::min(bps.size(), first + kBatch);
    pieces.clear();
    for (size_t i = first; i < last; ++i) pieces.push_back({bps[i]->addr, &bytes[i * trap.size()], trap.size()});
    if (p.mem().read_pieces(pieces).ok()) continue;
    // One of them unmapped (a dlclose in progress): one by one, the unreadable ones
    // taken as they should be.
    for (size_t i = first; i < last; ++i) {
      std::span<uint8_t> one(&bytes[i * trap.size()], trap.size());
      if (!p.mem().read_exact(bps[i]->addr, one)) std::copy(trap.begin(), trap.end(), one.begin());
    }
  }
  for (size_t i = 0; i < bps.size(); ++i) {
    Breakpoint& bp = *bps[i];
    const uint8_t* now = &bytes[i * trap.size()];
    if (std::equal(trap.begin(), trap.end(), now)) continue;
    const RemoteAddr addr = bp.addr;
    const bool original = now[0] == bp.orig_byte;
    const std::string what = bp.traced ? p.space.functions[bp.fn].demangled : fmt::format("{:#x}", addr.value());
    const uint64_t now_ns = monotonic_ns();
    auto secs = [&](uint64_t ns) { return static_cast<double>(ns - std::min(ns, start_ns_)) / 1e9; };
    std::string since = bp.last_hit_ns ? fmt::format("after its last call at {:.3f} s", secs(bp.last_hit_ns))
                                       : std::string("since it was planted");
    bool again = replant && original && p.mem().write(addr, trap).ok();
    report_untraced(p, what, addr.value(),
                    fmt::format("breakpoint taken away: another tool's breakpoint (most likely a uprobe of "
                                "bpftrace or perf, put on and taken off again) took its calls past functracer's; "
                                "the calls {} and before {:.3f} s may be missing{}",
                                since, secs(now_ns), again ? ", traced again from then on" : ""));
    if (!again) {
      // Not ours any more (the code was rewritten, or the process is ending): forget it
      // rather than write its old byte back at the detach.
      bp.orig_byte = now[0];
    }
    bp.last_hit_ns = now_ns;
  }
}

Breakpoint* Tracer::plant_raw(Process& p, Thread& t, Registers& regs, RemoteAddr addr, const std::string& what) {
  if (auto it = p.space.breakpoints.find(addr); it != p.space.breakpoints.end()) return &it->second;
  {
    // Written at once, or with the rest of the pass open on the process (plant_pass.h).
    PassScope scope(p.space.pass, p.mem());
    if (!queue_breakpoint(p, t, regs, addr, what)) return nullptr;
  }
  auto it = p.space.breakpoints.find(addr);  // gone if its writes failed
  return it == p.space.breakpoints.end() ? nullptr : &it->second;
}

bool Tracer::queue_breakpoint(Process& p, Thread& t, Registers& regs, RemoteAddr addr, const std::string& what) {
  auto refuse = [&](const std::string& reason) {
    ++stats_.refused;
    report_untraced(p, what, addr.value(), reason);
    return false;
  };
  if (const EntryPatchSite* s = p.space.recorder.patch_over(addr, arch::host().trap.size()))
    return refuse("inside the first instructions of " + p.space.functions[s->fn].demangled +
                  ", which jump to its trampoline");
  SsolArea* area = area_near(p, t, regs, addr);
  if (!area) return refuse("no out-of-line area could be mapped near it");
  RemoteAddr slot = area->allocate_slot();
  uint8_t code[arch::kMaxInsnBytes] = {};
  auto got = p.mem().read(addr, code);
  if (!got) return refuse("its code cannot be read: " + got.error().message);
  auto rel = arch::host().relocate_at({code, *got}, addr, slot);
  if (rel.kind == arch::Relocation::Kind::Refuse) {
    std::string reason = rel.reason + " (" + (rel.text.empty() ? "undecodable" : rel.text) + ")";
    // A trap the file itself has there (V8's DebugBreak, builtins that must never be
    // reached) is the program's own, not another tool's breakpoint.
    if (const Module* m = p.space.module_at(addr); m && m->elf && rel.reason.starts_with("int3")) {
      auto file = m->elf->read_from_disk(addr.value() - m->bias, 1);
      if (!file.empty() && file[0] == code[0])
        reason = "its first instruction is a trap in the file itself (int3): the code stops the program on purpose";
    }
    return refuse(reason);
  }
  FT_DEBUG("breakpoint {} at {:#x}: {} -> {}", what, addr.value(), rel.text,
           rel.kind == arch::Relocation::Kind::Emulate ? "emulated" : "out of line");
  // The slot is complete before the breakpoint exists, so no thread can reach an
  // empty slot.
  if (rel.kind == arch::Relocation::Kind::OutOfLine) {
    // The whole slot (its tail never runs): the slots of a pass then go in one write.
    std::vector<uint8_t> whole = rel.slot_code;
    if (whole.size() < SsolArea::kSlotSize) whole.resize(SsolArea::kSlotSize, arch::host().trap[0]);
    p.space.pass->outline(slot, whole);
  }
  Breakpoint bp;
  bp.addr = addr;
  bp.orig_byte = code[0];
  bp.reloc = std::move(rel);
  bp.slot = slot;
  bp.module = p.space.module_at(bp.addr);
  // In the guard's table before it is in the code (survival.h).
  survival::note_trap(p, bp);
  p.space.pass->code(addr, arch::host().trap, [this, &p, addr, what](const std::string& why) {
    p.space.breakpoints.erase(addr);
    --stats_.breakpoints;
    ++stats_.refused;
    report_untraced(p, what, addr.value(), why);
  });
  ++stats_.breakpoints;
  p.space.breakpoints.emplace(addr, std::move(bp));
  return true;
}

}  // namespace ft
