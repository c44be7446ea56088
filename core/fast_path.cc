#include "core/fast_path.h"

#include <fcntl.h>
#include <sys/auxv.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <cstring>
#include <optional>
#include <span>
#include <system_error>
#include <thread>
#include <unordered_set>
#include <utility>

#include "arch/arch.h"
#include "common/check.h"
#include "common/clock.h"
#include "common/signal_names.h"
#include "core/backtracer.h"
#include "core/log.h"
#include "core/plant_pass.h"
#include "core/procfs.h"
#include "core/ptrace.h"
#include "core/recorder.h"
#include "core/recorder_image.h"
#include "core/survival.h"
#include "core/untraced.h"
#include "core/unwind_index.h"
#include "core/wait_status.h"

namespace ft {
namespace {

constexpr uint64_t kRingBytes = 1ull << 20;  // per thread; only touched pages are backed
constexpr uint64_t kNameOffset = 48;         // in the first area: the memfd's name
constexpr char kName[] = "functracer";
constexpr uint64_t kHwcap2Fsgsbase = 2;
constexpr uint64_t kTrampolineBytes = 4 * SsolArea::kSlotSize;
// How far up the stack hold_signal looks for the recorder's return address (its frame
// is about 1 KiB).
constexpr size_t kHoldScanBytes = 8192;
// Past the entry, how far a patch's window can reach (an endbr64, and whole
// instructions over an absolute jump).
constexpr uint64_t kWindowReach = 64;
// Instructions a thread is stepped through at most to leave the recorder's code at a
// detach (a walk of 48 frames: a few thousand).
constexpr uint64_t kMaxSettleSteps = 200000;

bool failed(const Result<uint64_t>& rc) { return !rc || *rc > static_cast<uint64_t>(-4096); }

uint64_t round_page(uint64_t n) { return (n + 4095) & ~uint64_t{4095}; }

// The soft RLIMIT_FSIZE of process pid (/proc/PID/limits), UINT64_MAX when unlimited or
// unknown.
uint64_t file_size_limit(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/limits", pid));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t at = text.find("Max file size");
  if (at == std::string::npos) return UINT64_MAX;
  const char* v = text.c_str() + at + std::strlen("Max file size");
  while (*v == ' ') ++v;
  if (std::strncmp(v, "unlimited", 9) == 0) return UINT64_MAX;
  return std::strtoull(v, nullptr, 10);
}

// Once per process, and not only under -d: without the recorder every traced call
// is a stop (ten times slower and more), and an attached program does not outlive
// functracer.
void say_no_recorder(const Process& p, std::string_view why) {
  log::warn("process {}: no in-process recorder ({}): every traced call takes a ptrace stop{}", p.pid(), why,
            p.attached ? ", and the program does not outlive functracer" : "");
}

}  // namespace

RegionMapping::~RegionMapping() { ::munmap(base_, size_); }

FastPath::FastPath(Injector& injector, EventReporter& report, TracerStats& stats)
    : injector_(injector), report_(report), stats_(stats) {
  // On by default; FT_FAST_PATH=0 keeps a stop per entry, FT_FAST_PATH=1 insists
  // (a warning when the machine cannot do it).
  const char* v = std::getenv("FT_FAST_PATH");
  if (v && std::strcmp(v, "0") == 0) {
    why_not_ = "turned off (FT_FAST_PATH=0)";
    return;
  }
  if (!arch::host().recorder) {
    why_not_ = "no in-process recorder for this architecture";
  } else {
    wanted_ = true;
    // Without FSGSBASE (kernels before 5.9, CPUs and hypervisors without it), the
    // thread pointer is read where the TLS ABI has the thread control block point to
    // itself.
    const char* tp = std::getenv("FT_THREAD_POINTER");
    const bool fs0 = tp && std::strcmp(tp, "fs0") == 0;
    if (tp && *tp && !fs0) log::warn("FT_THREAD_POINTER={}: unknown value (fs0 is the one known); ignored", tp);
    if (!(::getauxval(AT_HWCAP2) & kHwcap2Fsgsbase) || fs0) tp_read_ = arch::ThreadPointerRead::kSelfWord;
  }
  if (wanted_) return;
  if (v && std::strcmp(v, "1") == 0)
    log::warn("calls are recorded with a stop each: {}", why_not_);
  else
    FT_DEBUG("calls are recorded with a stop each: {}", why_not_);
}

bool FastPath::map_code(Process& p, Thread& t, Registers& regs) {
  RecorderSpace& rs = p.space.recorder;
  RemoteAddr stub = p.space.areas.front()->syscall_stub();
  const uint64_t null_tcb = (sizeof recorder_image::kCode + 7) & ~uint64_t{7};
  uint64_t image = round_page(null_tcb + 8);
  auto ret = arch::host().recorder->return_stub(rs.region.value(), 0, tp_read_);
  auto handler = arch::host().recorder->trap_handler(0, 0);
  uint64_t size = image + round_page(ret.code.size() + 3 * arch::host().trap.size() + handler.code.size());
  auto rc = injector_.syscall(t, regs, stub, SYS_mmap,
                              {0, size, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, static_cast<uint64_t>(-1), 0});
  if (failed(rc)) return false;
  rs.code = RemoteAddr(*rc);
  rs.entry_fn = rs.code + static_cast<int64_t>(recorder_image::kEntryOffset);
  rs.return_fn = rs.code + static_cast<int64_t>(recorder_image::kReturnOffset);
  rs.return_stub = rs.code + static_cast<int64_t>(image);
  rs.null_tcb = rs.code + static_cast<int64_t>(null_tcb);  // zeros: the mapping is new
  ret = arch::host().recorder->return_stub(rs.region.value(), rs.return_fn.value(), tp_read_);
  rs.return_trap = rs.return_stub + static_cast<int64_t>(ret.slow_trap);
  rs.return_after_call = rs.return_stub + static_cast<int64_t>(ret.after_call);
  rs.entry_after_call = trampoline_layout().after_call;
  rs.code_size = sizeof recorder_image::kCode;
  // After the return stub: the trap a held signal waits at (hold_signal). Each trap
  // here is followed by another, which a thread meets when functracer dies after
  // taking in its stop (recorder.c, ft_recorder_trap).
  const auto& trap = arch::host().trap;
  std::vector<uint8_t> code = ret.code;
  code.insert(code.end(), trap.begin(), trap.end());
  rs.signal_trap = rs.return_stub + static_cast<int64_t>(code.size());
  code.insert(code.end(), trap.begin(), trap.end());
  code.insert(code.end(), trap.begin(), trap.end());
  // After it: the SIGTRAP handler's entry while attached (survival.h).
  rs.trap_handler = rs.return_stub + static_cast<int64_t>(code.size());
  handler = arch::host().recorder->trap_handler(rs.region.value(), (rs.code + static_cast<int64_t>(recorder_image::kTrapOffset)).value());
  rs.trap_restorer = rs.trap_handler + static_cast<int64_t>(handler.restorer);
  code.insert(code.end(), handler.code.begin(), handler.code.end());
  if (!p.mem().write(rs.code, {recorder_image::kCode, sizeof recorder_image::kCode})) return false;
  return static_cast<bool>(p.mem().write(rs.return_stub, code));
}

bool FastPath::set_up(Process& p, Thread& t, Registers& regs, RemoteAddr fixed) {
  RecorderSpace& rs = p.space.recorder;
  if (p.space.areas.empty()) return false;
  const SsolArea& area = *p.space.areas.front();
  RemoteAddr stub = area.syscall_stub();
  if (!p.mem().write(area.base() + kNameOffset, {reinterpret_cast<const uint8_t*>(kName), sizeof kName}))
    return false;
  uint64_t size = RecorderRegion::region_size(kRingBytes);
  // Growing the memfd past the process's RLIMIT_FSIZE would raise SIGXFSZ in it
  // (killing it) before failing.
  if (uint64_t limit = file_size_limit(p.pid()); limit < size) {
    say_no_recorder(p, fmt::format("its file size limit (RLIMIT_FSIZE, {} bytes) is below the region's {} MiB", limit,
                                   size >> 20));
    return false;
  }
  auto fd = injector_.syscall(t, regs, stub, SYS_memfd_create, {(area.base() + kNameOffset).value(), MFD_CLOEXEC});
  if (failed(fd)) {
    say_no_recorder(p, "memfd_create failed in it");
    return false;
  }
  bool ok = false;
  std::string why = "the memfd could not be sized in it";
  void* local = MAP_FAILED;
  RemoteAddr region;
  // Mapped where the kernel likes first, and only moved to `fixed` (a fork child's:
  // where its parent's is, which the stubs it inherited name) once it is complete: the
  // child never runs on a region that is half set up, whenever functracer dies.
  if (!failed(injector_.syscall(t, regs, stub, SYS_ftruncate, {*fd, size}))) {
    auto m = injector_.syscall(t, regs, stub, SYS_mmap, {0, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0});
    why = fmt::format("it cannot map {} MiB more (a limit on its address space, RLIMIT_AS?)", size >> 20);
    if (!failed(m)) {
      region = RemoteAddr(*m);
      std::string path = fmt::format("/proc/{}/fd/{}", p.pid(), *fd);
      int lfd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
      if (lfd >= 0) {
        local = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, lfd, 0);
        why = fmt::format("functracer cannot map its {} MiB: {}{}", size >> 20, std::strerror(errno),
                          errno == ENOMEM ? " (a limit on functracer's address space, RLIMIT_AS?)" : "");
        ::close(lfd);
      } else {
        why = fmt::format("functracer cannot open its memfd: {}", std::strerror(errno));
      }
      ok = local != MAP_FAILED;
    }
  }
  (void)injector_.syscall(t, regs, stub, SYS_close, {*fd});
  // The own part (recorder_abi.h): a fork child's copy of the hooked frames, and the
  // word that tells it the region is not its own. A followed child has its parent's
  // copy at the same address, with that word wiped.
  if (ok && rs.own.null()) {
    auto own = injector_.syscall(t, regs, stub, SYS_mmap,
                                 {0, FT_REC_OWN_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                                  static_cast<uint64_t>(-1), 0});
    if (!failed(own) && failed(injector_.syscall(t, regs, stub, SYS_madvise, {*own, FT_REC_OWN_WIPED, MADV_WIPEONFORK}))) {
      (void)injector_.syscall(t, regs, stub, SYS_munmap, {*own, FT_REC_OWN_BYTES});
      FT_DEBUG("process {}: MADV_WIPEONFORK refused (a kernel before 4.14)", p.pid());
    } else if (!failed(own)) {
      rs.own = RemoteAddr(*own);
    }
  }
  if (ok && rs.own.null()) why = "its own part could not be mapped (MADV_WIPEONFORK needs Linux 4.14)";
  ok = ok && !rs.own.null();
  auto give_up = [&](std::string_view reason) {
    if (!region.null()) (void)injector_.syscall(t, regs, stub, SYS_munmap, {region.value(), size});
    if (local != MAP_FAILED) ::munmap(local, size);
    rs.rings.reset();
    rs.mapping.reset();
    say_no_recorder(p, reason);
    return false;
  };
  if (!ok) return give_up(why);
  rs.region = fixed.null() ? region : fixed;
  rs.region_size = size;
  rs.mapping = std::make_shared<RegionMapping>(local, size);
  local = MAP_FAILED;  // the mapping's now
  rs.rings = RecorderRegion::create(rs.mapping->base(), kRingBytes, rs.own.value());
  rs.owners.clear();
  if (rs.code.null() && !map_code(p, t, regs)) return give_up("no room for the recorder's code");
  rs.header()->return_stub = rs.return_stub.value();
  rs.header()->verify_walks = Backtracer::verify_requested() ? 1 : 0;
  rs.header()->tp_self_word = tp_read_ == arch::ThreadPointerRead::kSelfWord ? 1 : 0;
  // A fork child's SIGTRAP action is its parent's handler, at the same address, which
  // reads the region there: its tables are filled before the region is (survival.h).
  bool installed = p.attached && !fixed.null() && survival::install_inherited(p, wanted_);
  if (!fixed.null()) {
    auto moved = injector_.syscall(t, regs, stub, SYS_mremap,
                                   {region.value(), size, size, MREMAP_MAYMOVE | MREMAP_FIXED, fixed.value()});
    if (failed(moved)) {
      rs.region = region;
      return give_up("the region could not be moved where the parent's is");
    }
  }
  if (!p.mem().write_u64(rs.own + static_cast<int64_t>(offsetof(ft_rec_own, owner)), 1)) {
    region = rs.region;
    return give_up("the own part cannot be written");
  }
  rs.ready = true;
  rs.needs_region = false;
  // An attached program outlives functracer: the SIGTRAP handler (survival.h).
  if (p.attached && !installed) (void)survival::install(injector_, p, t, regs, wanted_);
  FT_DEBUG("process {}: recorder region at {:#x}, code at {:#x}", p.pid(), rs.region.value(), rs.code.value());
  return true;
}

bool FastPath::patch(Process& p, Thread& t, Registers& regs, const Module& m, const ElfSymbol& sym, RemoteAddr addr,
                     uint32_t fn_id, unsigned nargs, unsigned frames, SsolArea& area, std::string& reason) {
  const bool alone = p.space.pass == nullptr;
  {
    // Written at once, or with the rest of the pass open on the process (plant_pass.h).
    PassScope scope(p.space.pass, p.mem());
    if (!queue_patch(p, t, regs, m, sym, addr, fn_id, nargs, frames, area, reason, !alone)) return false;
  }
  if (p.space.recorder.patch_at_entry(addr)) return true;
  reason = "its code cannot be written";  // undone: a breakpoint may do
  return false;
}

bool FastPath::queue_patch(Process& p, Thread& t, Registers& regs, const Module& m, const ElfSymbol& sym,
                           RemoteAddr addr, uint32_t fn_id, unsigned nargs, unsigned frames, SsolArea& area,
                           std::string& reason, bool report_undone) {
  RecorderSpace& rs = p.space.recorder;
  PlantPass& pass = *p.space.pass;
  const FunctionInfo& fn = p.space.functions[fn_id];
  if (rs.borrowed || rs.needs_region) {
    reason = "the process runs on memory that is not its own";
    return false;
  }
  // Every other thread must be held where it is (attach stops them all); one inside
  // the bytes the jump replaces is moved to the same instruction in the relocated copy
  // (below).
  std::vector<std::pair<pid_t, Registers>> others;
  for (const auto& [tid, other] : p.threads()) {
    if (other.get() == &t) continue;
    if (!other->stopped || other->awaiting_initial_stop) {
      reason = "other threads are running";
      return false;
    }
    const Registers* r = pass.regs_of(tid);
    if (!r) {
      reason = "another thread's registers cannot be read";
      return false;
    }
    others.emplace_back(tid, *r);
  }
  if (sym.size == 0 || sym.size > (1u << 20)) {
    reason = "its size is unknown";
    return false;
  }
  if (fn.return_mask && !fn.fast_return()) {
    reason = "a plugin reads memory at its return";
    return false;
  }
  if (!rs.ready) {
    if (rs.unavailable) {
      reason = "no recorder in this process";
      return false;
    }
    if (!set_up(p, t, regs, RemoteAddr())) {
      rs.unavailable = true;
      reason = "no recorder in this process";
      return false;
    }
  }
  if (!give_thread_pointers(p, t, regs, reason)) return false;
  std::vector<uint8_t> body(sym.size);
  if (!p.mem().read_exact(addr, body)) {
    reason = "its code cannot be read";
    return false;
  }
  std::vector<uint8_t> cold_bytes;
  std::vector<arch::CodeRange> parts;
  if (const ElfSymbol* cold = m.elf ? m.elf->find(sym.name + ".cold") : nullptr; cold && cold->size > 0 &&
                                                                                cold->size <= (1u << 20)) {
    cold_bytes.resize(cold->size);
    if (p.mem().read_exact(m.runtime(cold->value), cold_bytes))
      parts.push_back({cold_bytes, m.runtime(cold->value).value()});
  }
  if (area.next_offset() + kTrampolineBytes > SsolArea::kSize) {
    reason = "no room near it";
    return false;
  }
  const arch::RecorderStubs& stubs = *arch::host().recorder;
  RemoteAddr tramp = area.base() + static_cast<int64_t>(area.next_offset());
  size_t body_offset = trampoline_layout().body;
  arch::EntryPatchRequest req;
  req.function = body;
  req.entry = addr.value();
  req.trampoline = tramp.value();
  req.copy = tramp.value() + body_offset;
  req.other_parts = parts;
  req.kept_copy_gap = stubs.kept_copy_gap;
  // Branches from elsewhere in the module that land near the entry.
  std::vector<uint64_t> foreign;
  if (m.elf) {
    const std::vector<uint64_t>& all = image_targets(m);
    for (auto it = std::upper_bound(all.begin(), all.end(), sym.value); it != all.end() && *it < sym.value + kWindowReach;
         ++it)
      foreign.push_back(m.runtime(*it).value());
  }
  req.branch_targets = foreign;
  arch::EntryPatch plan = arch::host().plan_entry_patch(req);
  if (!plan.ok) {
    reason = plan.reason;
    return false;
  }
  RemoteAddr at = RemoteAddr(plan.patch_addr(addr.value()));
  RemoteAddr resume = addr + static_cast<int64_t>(plan.window_length);
  // One trap or jump never covers another: a breakpoint or a patch of another symbol
  // inside the window.
  for (RemoteAddr a = at; a < resume; a = a + 1)
    if (p.space.breakpoints.count(a)) {
      reason = fmt::format("a breakpoint inside its first instructions at {:#x}", a.value());
      return false;
    }
  if (const EntryPatchSite* other = rs.patch_over(at, static_cast<size_t>(resume - at))) {
    reason = "its first instructions overlap those of " + p.space.functions[other->fn].demangled;
    return false;
  }
  // The thread functracer works with keeps its pc (its registers may be restored from
  // a copy taken before); the others are moved.
  if (regs.ip() > at && regs.ip() < resume) {
    reason = "the stopped thread is inside its first instructions";
    return false;
  }
  struct Move {
    pid_t tid;
    Registers regs;
    RemoteAddr from;
  };
  std::vector<Move> moves;
  for (auto& [tid, r] : others) {
    RemoteAddr pc = r.ip();
    if (pc <= at || pc >= resume) continue;
    auto mp = std::find_if(plan.moved_pcs.begin(), plan.moved_pcs.end(),
                           [&](const arch::MovedPc& m) { return addr + static_cast<int64_t>(m.from) == pc; });
    if (mp == plan.moved_pcs.end()) {
      reason = "a thread is stopped inside its first instructions, not at one of them";
      return false;
    }
    r.set_ip(RemoteAddr(req.copy) + static_cast<int64_t>(mp->to));
    moves.push_back({tid, r, pc});
  }
  uint64_t site = fn_id | uint64_t{std::min(nargs, FT_REC_MAX_ARGS)} << FT_REC_SITE_NARGS_SHIFT |
                  uint64_t{std::min(frames, FT_REC_MAX_STACK)} << FT_REC_SITE_FRAMES_SHIFT;
  if (fn.return_mask) site |= FT_REC_SITE_RETURN;
  auto code = stubs.entry_trampoline(tramp.value(), rs.region.value(), site, rs.entry_fn.value(), plan.relocated,
                                     resume.value(), plan.stack_delta, plan.kept_relocated, tp_read_);
  FT_CHECK(code.body == body_offset, "entry trampoline layout changed (%zu, %zu)", code.body, body_offset);
  // At least one trap after the code (a trap there follows the slow path's, see
  // map_code).
  if (code.code.size() >= kTrampolineBytes) {
    reason = "its first instructions do not fit a trampoline";
    return false;
  }
  RemoteAddr allocated = area.allocate(kTrampolineBytes);
  FT_CHECK(allocated == tramp, "out-of-line area moved on");
  // The trampoline is complete before the jump to it exists, and the threads inside
  // the window are in the copy before they could run into the jump's bytes (the pass
  // writes in that order).
  std::vector<uint8_t> whole = code.code;  // all of its room: the trampolines of a pass go in one write
  whole.resize(kTrampolineBytes, arch::host().trap[0]);
  pass.outline(tramp, whole);
  for (const Move& mv : moves) {
    pass.move(mv.tid, mv.regs, at);
    FT_DEBUG("thread {}: moved from {:#x} inside {}'s first instructions to its copy at {:#x}", mv.tid,
             mv.from.value(), sym.name, mv.regs.ip().value());
  }
  // The stop path's trap is in the guard's table before anything can reach it.
  survival::note_resume(p, tramp + static_cast<int64_t>(code.slow_trap), tramp + static_cast<int64_t>(code.stop_resume));
  bool kept_first = plan.patch_offset > 0;
  pass.code(at, plan.patch, [this, &p, at, addr, fn_id, report_undone, kept_first](const std::string& why) {
    RecorderSpace& space = p.space.recorder;
    if (const EntryPatchSite* s = space.patch_at_entry(addr)) p.space.breakpoints.erase(s->slow_trap);
    space.remove_patch(at);
    --patched_;
    --stats_.patched;
    if (kept_first) --stats_.patched_entry_kept;
    if (report_undone) report_untraced(p, p.space.functions[fn_id].demangled, addr.value(), why);
  });
  EntryPatchSite s;
  s.entry = addr;
  s.at = at;
  s.original = plan.original;
  s.trampoline = tramp;
  s.slow_trap = tramp + static_cast<int64_t>(code.slow_trap);
  s.stop_resume = tramp + static_cast<int64_t>(code.stop_resume);
  s.end = tramp + static_cast<int64_t>(code.code.size());
  s.copy = RemoteAddr(req.copy);
  for (const arch::MovedPc& m : plan.moved_pcs) s.moved_pcs.emplace_back(m.from, m.to);
  s.fn = fn_id;
  s.module = &m;
  if (frames && !rs.walks) {
    rs.walks = true;
    update_unwind(p);
  }
  survival::note_patch(p, s, plan.patch);
  rs.add_patch(std::move(s));
  ++patched_;
  ++stats_.patched;
  if (kept_first) ++stats_.patched_entry_kept;
  return true;
}

const std::vector<uint64_t>& FastPath::image_targets(const std::shared_ptr<const ElfImage>& image) {
  auto it = targets_.find(image.get());
  if (it != targets_.end() && it->second.image.lock() == image) return it->second.targets;
  std::erase_if(targets_, [](const auto& e) { return e.second.image.expired(); });
  ImageTargets& t = targets_[image.get()];
  t.image = image;
  t.targets.clear();
  uint64_t start = monotonic_ns();
  // The functions one after the other, in two halves of about the same code size, the
  // second decoded on a thread of its own (the decoder is per thread; the image's
  // bytes are read only): the program waits for this at its first patch in a module.
  const std::vector<ElfSymbol>& fns = image->functions();
  auto decode = [&image](std::span<const ElfSymbol> part, std::vector<uint64_t>& out) {
    uint64_t last = ~uint64_t{0};
    for (const ElfSymbol& f : part) {
      if (f.size == 0 || f.value == last) continue;  // unknown extent, or an alias
      last = f.value;
      std::span<const uint8_t> bytes = image->read_only_bytes(f.value, f.size);
      if (bytes.empty()) continue;
      arch::host().branch_targets({bytes, f.value}, out);
    }
  };
  uint64_t code = 0;
  for (const ElfSymbol& f : fns) code += f.size;
  size_t half = 0;
  for (uint64_t sum = 0; half < fns.size() && sum < code / 2; ++half) sum += fns[half].size;
  std::vector<uint64_t> second;
  std::optional<std::thread> helper;
  constexpr uint64_t kWorthAThread = 256u << 10;  // bytes of code
  if (code >= kWorthAThread) {
    try {
      helper.emplace([&] { decode(std::span(fns).subspan(half), second); });
    } catch (const std::system_error&) {  // no thread to be had: all on this one
    }
  }
  decode(std::span(fns).first(helper ? half : fns.size()), t.targets);
  if (helper) {
    helper->join();
    t.targets.insert(t.targets.end(), second.begin(), second.end());
  }
  std::sort(t.targets.begin(), t.targets.end());
  t.targets.erase(std::unique(t.targets.begin(), t.targets.end()), t.targets.end());
  FT_DEBUG("{}: {} branch targets in its functions ({:.1f} ms)", image->path(), t.targets.size(),
           static_cast<double>(monotonic_ns() - start) / 1e6);
  return t.targets;
}

void FastPath::decode_ahead(const std::shared_ptr<const ElfImage>& image) {
  // Not for runtimes that walk their stacks (their entries are never patched), nor
  // for images so big that decoding them all would cost more than the few entries
  // patched in them are likely to.
  constexpr uint64_t kMaxCode = 32u << 20;
  if (!wanted_ || image->machine() != arch::host().elf_machine ||
      image->stack_walker() != ElfImage::StackWalker::None)
    return;
  uint64_t code = 0;
  for (const ElfSymbol& f : image->functions()) code += f.size;
  if (code > kMaxCode) return;
  (void)image_targets(image);
  (void)unwind_rows_.rows(image);  // for call stacks walked in the process
}

void FastPath::update_unwind(Process& p) {
  RecorderSpace& rs = p.space.recorder;
  if (!rs.ready || !rs.walks || !rs.rings || rs.borrowed) return;
  UnwindIndexBuilder b;
  for (const auto& m : p.space.modules)
    if (m->elf) b.add_rows(unwind_rows_.rows(m->elf), m->bias, m->map.base, m->map.end);
  std::vector<uint8_t> index = b.build();
  ft_rec_header* h = rs.header();
  uint64_t area = ft_rec_unwind_area_offset(h->ring_bytes);
  if (index.size() > FT_REC_UNWIND_BYTES) {
    log::warn("process {}: the frame rules of its modules take {} bytes, more than {}: call stacks are taken "
              "with a stop", p.pid(), index.size(), FT_REC_UNWIND_BYTES);
    __atomic_store_n(&h->unwind_offset, 0, __ATOMIC_RELEASE);
    return;
  }
  uint64_t now = __atomic_load_n(&h->unwind_offset, __ATOMIC_ACQUIRE);
  uint64_t next = now == area ? area + FT_REC_UNWIND_BYTES : area;
  std::memcpy(static_cast<char*>(rs.mapping->base()) + next, index.data(), index.size());
  __atomic_store_n(&h->unwind_offset, next, __ATOMIC_RELEASE);
  FT_DEBUG("process {}: frame rules for walks in the process: {} modules, {} rows ({} bytes)", p.pid(),
           b.stats().modules, b.stats().rows, index.size());
}

bool FastPath::give_thread_pointers(Process& p, Thread& t, Registers& regs, std::string& reason) {
  if (tp_read_ != arch::ThreadPointerRead::kSelfWord) return true;
  RecorderSpace& rs = p.space.recorder;
  for (const auto& [tid, other] : p.threads()) {
    if (other.get() == &t) continue;
    const Registers* r = p.space.pass ? p.space.pass->regs_of(tid) : nullptr;
    if (!r || r->thread_pointer() == 0) {
      reason = "another thread has no thread pointer yet";
      return false;
    }
  }
  if (regs.thread_pointer() != 0) return true;
  if (rs.null_tcb.null()) {
    reason = "no thread control block for a thread without one";
    return false;
  }
  // The thread's first instructions after an exec: the C library sets its thread
  // pointer before code that reads it runs; until then it points at zeros (no ring: its
  // recorded entries take the stop path).
  Registers given = regs;
  given.set_thread_pointer(rs.null_tcb.value());
  if (!ptrace::set_regs(t.tid, given)) {
    reason = "its thread pointer cannot be set";
    return false;
  }
  regs = given;
  FT_DEBUG("thread {}: no thread pointer yet: given {:#x} (zeros)", t.tid, rs.null_tcb.value());
  return true;
}

void FastPath::note_thread(Thread& t, const Registers& regs) {
  Process& p = *t.process;
  RecorderSpace& rs = p.space.recorder;
  if (!rs.ready || rs.borrowed || !rs.rings) return;
  uint64_t tp = regs.thread_pointer();
  if (tp <= FT_REC_KEY_REMOVED) return;  // not set up yet (before the C library's start)
  if (t.rec_ring >= 0) {
    auto it = rs.owners.find(static_cast<uint32_t>(t.rec_ring));
    if (it != rs.owners.end() && it->second.tp == tp) return;
    release(t);  // its thread pointer changed
  }
  if (tp_read_ == arch::ThreadPointerRead::kSelfWord) {
    // The stubs find the ring by the word the thread pointer points at: a key only where
    // that is the pointer itself (so that no other thread's word can be it).
    auto self = p.mem().read_u64(RemoteAddr(tp));
    if (!self || *self != tp) {
      FT_DEBUG("thread {}: its thread pointer {:#x} does not point to itself: its calls take the stop path", t.tid, tp);
      return;
    }
  }
  if (auto r = rs.rings->ring_of(tp)) {
    // Another thread's key: a thread pointer reused after an exit functracer has not
    // seen yet. Leave it; this thread takes the stop path.
    return;
  }
  auto ring = rs.rings->add_thread(tp);
  if (!ring) return;
  rs.owners[*ring] = {t.tid, tp, 0};
  // The end of the thread's stack: walks in the process read nothing at or above it.
  uint64_t stack_end = 0;
  if (auto maps = read_maps(p.pid()))
    for (const auto& e : *maps)
      if (regs.sp().value() >= e.start && regs.sp().value() < e.end) stack_end = e.end;
  ft_rec_ring_at(rs.header(), *ring)->stack_end = stack_end;
  t.rec_ring = static_cast<int>(*ring);
  sync(t);
}

bool FastPath::short_of_room(const Process& p, const Thread& t) {
  // A call with its return and a deep call stack takes a few KiB at most (1,024
  // frames: 8 KiB).
  constexpr uint64_t kRoom = 64 << 10;
  const RecorderSpace& rs = p.space.recorder;
  if (!rs.ready || rs.borrowed || !rs.rings || t.rec_ring < 0) return false;
  const ft_rec_ring* r = ft_rec_ring_at(rs.rings->header(), static_cast<uint64_t>(t.rec_ring));
  uint64_t used = __atomic_load_n(&r->head, __ATOMIC_RELAXED) - r->tail;
  return used + kRoom > rs.rings->ring_bytes();
}

void FastPath::collect(Process& p, RecordedBatch& out, uint64_t cut, const Thread* whole) {
  RecorderSpace& rs = p.space.recorder;
  if (!rs.ready || rs.borrowed || !rs.rings) return;
  for (auto& [ring, owner] : rs.owners) {
    Thread* t = p.thread(owner.tid);
    if (!t) continue;
    size_t start = out.records.size();
    rs.rings->drain(ring, [&](const RecordedEvent& e) {
      Recorded& r = out.records.emplace_back();
      r.thread = t;
      r.kind = e.kind;
      r.fn = e.fn;
      r.flags = e.flags;
      r.tsc = e.tsc;
      r.nwords = static_cast<uint16_t>(std::min(e.words.size(), kMaxRecordWords));
      r.words_at = static_cast<uint32_t>(out.words.size());
      out.words.insert(out.words.end(), e.words.begin(), e.words.begin() + r.nwords);
      // The fixed words of every kind are there to read, zero when a record (in the
      // program's memory) is short of them.
      if (r.nwords < kMinRecordWords) out.words.resize(out.words.size() + kMinRecordWords - r.nwords, 0);
    }, t == whole ? UINT64_MAX : cut);
    if (out.records.size() > start) out.runs.push_back(start);
  }
}

void FastPath::report_losses(Process& p) {
  RecorderSpace& rs = p.space.recorder;
  if (!rs.ready || rs.borrowed || !rs.rings) return;
  for (auto& [ring, owner] : rs.owners) {
    uint64_t lost = rs.rings->lost(ring);
    if (lost <= owner.lost_seen) continue;
    Thread* t = p.thread(owner.tid);
    if (!t) continue;
    uint64_t n = lost - owner.lost_seen;
    owner.lost_seen = lost;
    stats_.recorded_lost += n;
    report_.record_lost(p, *t, static_cast<int64_t>(n), "the thread's buffer in the process was full");
  }
}

RemoteAddr FastPath::stack_of(const Thread& t) {
  const RecorderSpace& rs = t.process->space.recorder;
  return rs.own + static_cast<int64_t>(ft_rec_stack_offset(static_cast<uint64_t>(t.rec_ring)));
}

bool FastPath::push_frame(Thread& t, RemoteAddr slot, RemoteAddr real_ret, uint32_t fn) {
  Process& p = *t.process;
  RecorderSpace& rs = p.space.recorder;
  if (t.rec_ring < 0 || !rs.rings || t.stack.disarmed()) return false;
  // The frames are the process's own memory (recorder_abi.h): read and written there,
  // the thread being stopped.
  RemoteAddr st = stack_of(t);
  auto depth = p.mem().read_u64(st + static_cast<int64_t>(offsetof(ft_rec_stack, depth)));
  if (!depth || *depth >= FT_REC_MAX_FRAMES) return false;
  ft_rec_frame f{slot.value(), real_ret.value(), fn};
  uint64_t deeper = *depth + 1;
  // The frame and the depth in one system call (private, writable memory).
  const RemoteMemory::Piece pieces[] = {
      {st + static_cast<int64_t>(offsetof(ft_rec_stack, frames) + *depth * sizeof f), &f, sizeof f},
      {st + static_cast<int64_t>(offsetof(ft_rec_stack, depth)), &deeper, sizeof deeper}};
  if (!p.mem().write_pieces(pieces)) return false;
  if (!p.mem().poke(t.tid, slot, rs.return_stub.value())) {
    (void)p.mem().write_u64(st + static_cast<int64_t>(offsetof(ft_rec_stack, depth)), *depth);
    return false;
  }
  return true;
}

void FastPath::sync(Thread& t) {
  Process& p = *t.process;
  RecorderSpace& rs = p.space.recorder;
  if (t.rec_ring < 0 || !rs.rings) return;
  // depth, pad and the frames in use: one write.
  std::vector<uint64_t> words(2);
  uint64_t n = 0;
  for (const ShadowFrame& f : t.stack.frames()) {
    if (!f.recorded || !f.armed) continue;
    if (n == FT_REC_MAX_FRAMES) break;
    words.push_back(f.slot.value());
    words.push_back(f.tail ? rs.return_stub.value() : f.real_ret.value());
    words.push_back(f.fn);
    ++n;
  }
  words[0] = n;
  (void)p.mem().write(stack_of(t), {reinterpret_cast<const uint8_t*>(words.data()), words.size() * 8});
}

std::vector<ft_rec_frame> FastPath::read_frames(Process& p, uint32_t ring) {
  const RecorderSpace& rs = p.space.recorder;
  RemoteAddr st = rs.own + static_cast<int64_t>(ft_rec_stack_offset(ring));
  auto depth = p.mem().read_u64(st + static_cast<int64_t>(offsetof(ft_rec_stack, depth)));
  if (!depth) return {};
  std::vector<ft_rec_frame> frames(std::min<uint64_t>(*depth, FT_REC_MAX_FRAMES));
  if (!frames.empty() && !p.mem().read_exact(st + static_cast<int64_t>(offsetof(ft_rec_stack, frames)),
                                             {reinterpret_cast<uint8_t*>(frames.data()), frames.size() * sizeof(ft_rec_frame)}))
    return {};
  return frames;
}

bool FastPath::hold_signal(Thread& t, int sig) {
  Process& p = *t.process;
  const RecorderSpace& rs = p.space.recorder;
  if (rs.signal_trap.null() || sig == SIGSTOP || sig == SIGTRAP) return false;
  auto info = ptrace::siginfo(t.tid);
  if (!info) return false;
  if (!t.held_at.null()) {  // already holding: this one waits too
    t.held_signals.push_back(*info);
    return true;
  }
  auto regs = ptrace::get_regs(t.tid);
  if (!regs || !rs.in_recorder_code(regs->ip())) return false;
  // A fault of the recorder's own code cannot wait: it would fault again.
  if (is_fault_signal(sig) && info->si_code > 0) return false;
  // The recorder's function returns to its trampoline or to the return stub, just
  // after their call: the first such word up the stack is its return address (the
  // recorder's own frame holds the program's addresses, never these).
  std::vector<uint8_t> window(kHoldScanBytes);
  auto got = p.mem().read(regs->sp(), window);
  if (!got) return false;
  size_t words = *got / 8;
  std::unordered_set<uint64_t> returns{rs.return_after_call.value()};
  for (const EntryPatchSite& s : rs.patches) returns.insert(s.trampoline.value() + rs.entry_after_call);
  for (size_t i = 0; i < words; ++i) {
    uint64_t v;
    std::memcpy(&v, window.data() + 8 * i, 8);
    if (!returns.count(v)) continue;
    RemoteAddr at = regs->sp() + static_cast<int64_t>(8 * i);
    if (!p.mem().poke(t.tid, at, rs.signal_trap.value())) return false;
    t.held_at = at;
    t.held_return = RemoteAddr(v);
    survival::note_return(p, at, RemoteAddr(v));
    t.held_signals.assign(1, *info);
    FT_DEBUG("thread {}: {} held while it records (returning to {:#x})", t.tid, signal_name(sig), v);
    return true;
  }
  return false;
}

std::vector<siginfo_t> FastPath::take_held(Thread& t, Registers& regs) {
  regs.set_ip(t.held_return);
  t.held_at = t.held_return = RemoteAddr();
  return std::exchange(t.held_signals, {});
}

void FastPath::give_back_held(Process& p) {
  for (const auto& [tid, t] : p.threads()) {
    if (t->held_at.null()) continue;
    (void)p.mem().poke(tid, t->held_at, t->held_return.value());
    t->held_at = t->held_return = RemoteAddr();
    for (siginfo_t& si : std::exchange(t->held_signals, {})) requeue_signal(p.pid(), tid, si);
  }
}

void FastPath::requeue_signal(pid_t pid, pid_t tid, siginfo_t si) {
  // With its information when the kernel lets another process queue it so (si_code
  // < 0: sigqueue, timers, ...), else as a plain signal.
  if (si.si_code < 0 && si.si_code != SI_TKILL &&
      ::syscall(SYS_rt_tgsigqueueinfo, pid, tid, si.si_signo, &si) == 0)
    return;
  (void)::syscall(SYS_tgkill, pid, tid, si.si_signo);
}

void FastPath::release(Thread& t) {
  Process& p = *t.process;
  RecorderSpace& rs = p.space.recorder;
  if (t.rec_ring < 0) return;
  auto it = rs.owners.find(static_cast<uint32_t>(t.rec_ring));
  if (rs.rings && it != rs.owners.end()) {
    rs.rings->remove_thread(it->second.tp);
    rs.owners.erase(it);
  }
  t.rec_ring = -1;
}

void FastPath::let_go_child(Process& child, Thread& t) {
  if (child.space.recorder.needs_region) unmap(child, t);
}

void FastPath::unmap_for_detach(Process& p) {
  RecorderSpace& rs = p.space.recorder;
  if (!rs.ready || !rs.rings || rs.borrowed) return;
  for (auto& [tid, t] : p.threads())
    if (t->stopped && !t->group_stop && !t->exit_seen && (t->held_event == PTRACE_EVENT_STOP || t->held_event == 0)) {
      unmap(p, *t);
      return;
    }
  // No thread at a stop a system call can be injected at: the region stays, the
  // handler forwarding every SIGTRAP to the program's action (survival::retire).
  FT_DEBUG("process {}: no thread to unmap the recorder's region with: it stays", p.pid());
}

void FastPath::unmap(Process& p, Thread& t) {
  RecorderSpace& rs = p.space.recorder;
  auto regs = ptrace::get_regs(t.tid);
  if (!regs || p.space.areas.empty() || rs.region.null()) return;
  RemoteAddr stub = p.space.areas.front()->syscall_stub();
  // The SIGTRAP action: the program's own again where it is the handler (survival.h),
  // which has nothing left to answer for. Read into the own part's spare words
  // (nothing else reads them).
  bool ours = false;
  RemoteAddr scratch = rs.own + 8;
  if (!rs.own.null() && !rs.trap_handler.null() &&
      !failed(injector_.syscall(t, *regs, stub, SYS_rt_sigaction, {SIGTRAP, 0, scratch.value(), 8}))) {
    auto h = p.mem().read_u64(scratch);
    ours = !h || *h == rs.trap_handler.value();
    RemoteAddr kept = rs.region + static_cast<int64_t>(ft_rec_guard_offset(kRingBytes) + offsetof(ft_rec_guard, old_action));
    if (ours && !failed(injector_.syscall(t, *regs, stub, SYS_rt_sigaction, {SIGTRAP, kept.value(), 0, 8}))) ours = false;
  }
  if (ours) {
    // The handler stays, and with it the region it reads: it forwards everything to
    // the program's action (the session is marked detached).
    FT_DEBUG("process {}: its SIGTRAP action could not be given back: the recorder's region stays", p.pid());
    (void)ptrace::set_regs(t.tid, *regs);
    return;
  }
  // The region goes, but for its header's pages, which become zeros: a thread that a
  // signal handler took out of a trampoline before the detach, and that goes on in it
  // after, finds recording off there and no own part, and goes straight on into the
  // function. The recorder's code stays for the same reason (a few pages).
  const uint64_t head = round_page(sizeof(ft_rec_header));
  (void)injector_.syscall(t, *regs, stub, SYS_mmap,
                          {rs.region.value(), head, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                           static_cast<uint64_t>(-1), 0});
  (void)injector_.syscall(t, *regs, stub, SYS_munmap, {(rs.region + static_cast<int64_t>(head)).value(), rs.region_size - head});
  if (!rs.own.null()) (void)injector_.syscall(t, *regs, stub, SYS_munmap, {rs.own.value(), FT_REC_OWN_BYTES});
  (void)ptrace::set_regs(t.tid, *regs);
  FT_DEBUG("process {}: recorder region unmapped", p.pid());
  rs.rings.reset();
  rs.mapping.reset();
  rs.ready = false;
  rs.needs_region = false;
  rs.region = rs.own = RemoteAddr();
}

void FastPath::set_up_child(Process& child, Thread& t, Registers& regs) {
  RecorderSpace& rs = child.space.recorder;
  if (!rs.needs_region) return;
  if (!set_up(child, t, regs, rs.region)) {
    // Without a region the trampolines and the return stub cannot run: every patch and
    // hooked return goes, and those functions are not traced in this child.
    log::gap("process {}: no recorder region for the forked child: {} functions are not traced in it", child.pid(),
             rs.patches.size());
    for (const auto& [tid, th] : child.threads())
      for (const ShadowFrame& f : th->stack.frames())
        if (f.recorded && f.armed && !f.tail) (void)child.mem().write_u64(f.slot, f.real_ret.value());
    for (const EntryPatchSite& s : rs.patches) {
      record_untraced(child, child.space.functions[s.fn].demangled, s.entry.value(), "no recorder in the forked child");
      (void)child.mem().write(s.at, s.original);
      child.space.breakpoints.erase(s.slow_trap);
    }
    rs.clear_patches();
    let_go_child(child, t);
    rs.needs_region = false;
    rs.unavailable = true;
    return;
  }
  update_unwind(child);
}

void FastPath::settle_for_detach(Process& p) {
  RecorderSpace& rs = p.space.recorder;
  if (!rs.ready || !rs.rings || rs.borrowed) return;
  ft_rec_header* h = rs.header();
  // New entries pass from now on; a thread that decided otherwise before is stepped.
  __atomic_store_n(&h->enabled, 0, __ATOMIC_RELEASE);
  auto site_of = [&](RemoteAddr pc) -> const EntryPatchSite* {
    for (const EntryPatchSite& s : rs.patches)
      if (pc >= s.trampoline && pc < s.end) return &s;
    return nullptr;
  };
  for (auto& [tid, t] : p.threads()) {
    if (!t->stopped || t->group_stop || t->exit_seen) continue;
    auto regs = ptrace::get_regs(tid);
    uint64_t steps = 0;
    while (regs) {
      RemoteAddr pc = regs->ip();
      const EntryPatchSite* site = site_of(pc);
      bool in_stub = pc >= rs.return_stub && pc <= rs.signal_trap;
      if (!site && !in_stub && !rs.in_recorder_code(pc)) break;
      bool moved = false;
      if (site && pc == site->slow_trap) {
        // The stop path's trap, not taken: on to the relocated instructions.
        auto bp = p.space.breakpoints.find(site->slow_trap);
        if (bp == p.space.breakpoints.end()) break;
        regs->set_ip(bp->second.slot);
        moved = true;
      } else if (pc == rs.return_trap) {
        // A return the recorder left to the stop path: to its real return address.
        RemoteAddr real = take_recorded_return(*t, regs->sp() - 8);
        if (real.null()) break;
        regs->set_ip(real);
        moved = true;
      } else if (pc == rs.signal_trap && !t->held_at.null()) {
        for (const siginfo_t& si : take_held(*t, *regs)) requeue_signal(p.pid(), tid, si);
        moved = true;
      } else if (site && pc >= site->copy) {
        // In the relocated copy, at one of the window's instructions: back to the
        // original (put back at the detach) rather than stepped, which would take as
        // long as the instruction runs (a `rep movsb`, a loop's first instructions).
        for (const auto& [from, to] : site->moved_pcs)
          if (site->copy + static_cast<int64_t>(to) == pc) {
            regs->set_ip(site->entry + static_cast<int64_t>(from));
            moved = true;
            break;
          }
      }
      uint8_t insn[1] = {};
      int dir = 0;
      const arch::RecorderStubs& stubs = *arch::host().recorder;
      size_t len = !moved && p.mem().read_exact(pc, insn) ? stubs.flags_transfer(std::span<const uint8_t>(insn), dir) : 0;
      if (len) {
        // Done by hand (see flags_transfer): the flags without the step's trap flag.
        uint64_t flags = regs->get(stubs.flags_reg) & ~stubs.trap_flag;
        if (dir > 0) {
          regs->set_sp(regs->sp() - 8);
          if (!p.mem().write_u64(regs->sp(), flags)) break;
        } else {
          auto v = p.mem().read_u64(regs->sp());
          if (!v) break;
          regs->set(stubs.flags_reg, (*v & ~stubs.trap_flag));
          regs->set_sp(regs->sp() + 8);
        }
        regs->set_ip(pc + static_cast<int64_t>(len));
        moved = true;
      }
      if (moved) {
        if (!ptrace::set_regs(tid, *regs)) break;
        continue;
      }
      if (++steps > kMaxSettleSteps) {
        log::warn("thread {}: still in the recorder's code after {} steps: it may trap after the detach", tid, steps);
        break;
      }
      regs = injector_.step(*t);
    }
    // A thread the C library has not given its thread pointer yet goes back to none.
    if (regs && !rs.null_tcb.null() && regs->thread_pointer() == rs.null_tcb.value()) {
      regs->set_thread_pointer(0);
      (void)ptrace::set_regs(tid, *regs);
    }
    if (steps) FT_DEBUG("thread {}: stepped {} instructions out of the recorder's code", tid, steps);
  }
}

RemoteAddr FastPath::take_recorded_return(Thread& t, RemoteAddr slot) {
  RecorderSpace& rs = t.process->space.recorder;
  if (t.rec_ring >= 0 && rs.rings) {
    std::vector<ft_rec_frame> frames = read_frames(*t.process, static_cast<uint32_t>(t.rec_ring));
    for (uint64_t k = frames.size(); k > 0; --k)
      if (frames[k - 1].slot == slot.value()) {
        (void)t.process->mem().write_u64(stack_of(t) + static_cast<int64_t>(offsetof(ft_rec_stack, depth)), k - 1);
        return RemoteAddr(frames[k - 1].real_ret);
      }
  }
  for (const ShadowFrame& f : t.stack.frames())
    if (f.slot == slot && f.recorded && !f.tail) return f.real_ret;
  return RemoteAddr();
}

void FastPath::remove(Process& p) {
  RecorderSpace& rs = p.space.recorder;
  for (const EntryPatchSite& s : rs.patches) (void)p.mem().write(s.at, s.original);
  if (!rs.ready || !rs.rings || rs.borrowed) return;
  ft_rec_header* h = rs.header();
  __atomic_store_n(&h->enabled, 0, __ATOMIC_RELEASE);
  // Hooked returns the shadow stacks do not know yet (recorded since the last drain).
  for (const auto& [ring, owner] : rs.owners) {
    std::vector<ft_rec_frame> frames = read_frames(p, ring);
    for (size_t i = frames.size(); i-- > 0;) {
      auto v = p.mem().read_u64(RemoteAddr(frames[i].slot));
      if (v && *v == rs.return_stub.value()) (void)p.mem().write_u64(RemoteAddr(frames[i].slot), frames[i].real_ret);
    }
  }
}

}  // namespace ft
