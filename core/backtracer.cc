#include "core/backtracer.h"

#define UNW_REMOTE_ONLY
#include <libunwind.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <utility>

#include "arch/arch.h"
#include "core/frame_rules.h"
#include "core/log.h"
#include "core/process.h"

// Exported by libunwind but not declared in its public headers: the search of a
// .eh_frame_hdr table that _UPT_find_proc_info also ends in.
extern "C" int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t* di,
                                                  unw_proc_info_t* pi, int need_unwind_info, void* arg);

namespace ft {
namespace {

constexpr size_t kFirstWindow = 8 << 10;      // bytes of stack read at first
constexpr uint64_t kMaxWindow = 8ull << 20;   // never read more than this of one stack

Backtracer::Stats g_totals;

}  // namespace

const Backtracer::Stats& Backtracer::totals() { return g_totals; }

struct Backtracer::Impl {
  unw_addr_space_t as = nullptr;
  // The backtrace being taken.
  Process* process = nullptr;
  const Registers* regs = nullptr;
  Backtracer::Stats* stats = nullptr;
  std::vector<uint8_t> window;
  uint64_t win_lo = 0, win_hi = 0;
  bool win_at_end = false;  // a short read: the stack mapping ends at win_hi
  std::vector<std::pair<uint64_t, uint64_t>> patches;  // hijacked slot -> real return address
  // Frame rules by run-time code address (nullopt: that frame needs libunwind), and
  // each module's call frame information, opened at its first frame.
  std::unordered_map<uint64_t, std::optional<FrameRule>> rules;
  struct Cfi {
    std::shared_ptr<const ElfImage> elf;  // keeps the mapping ModuleCfi reads alive
    std::unique_ptr<ModuleCfi> cfi;
  };
  std::unordered_map<const ElfImage*, Cfi> cfis;
  bool verify = false;  // FT_UNWIND_VERIFY: walk every stack with libunwind too, and compare

  // Before a walk of t's stack from r (its hijacked return addresses, the first stack
  // window), and after it.
  void begin(Process& p, Thread& t, const Registers& r, Backtracer::Stats& st);
  void end();

  const FrameRule* rule_for(uint64_t pc) {
    auto [it, fresh] = rules.try_emplace(pc);
    if (fresh) {
      const Module* m = process->space.module_at(RemoteAddr(pc));
      if (m && m->elf) {
        auto [c, opened] = cfis.try_emplace(m->elf.get());
        if (opened) c->second = {m->elf, ModuleCfi::open(*m->elf)};
        if (c->second.cfi) it->second = c->second.cfi->rule_at(pc - m->bias);
      }
    }
    return it->second ? &*it->second : nullptr;
  }

  // The walk through frame rules alone. False as soon as a frame has no simple rule:
  // the whole stack is then left to libunwind, so that the result is always the one
  // libunwind would give.
  bool walk_rules(const Registers& r, bool skip_first, std::span<uint64_t> out, size_t& n) {
    uint64_t ip = r.ip().value(), sp = r.sp().value(), bp = r.get(arch::host().frame_pointer);
    bool first = true;
    // One step to the caller: 1 done, 0 the outermost frame, -1 needs libunwind.
    auto step = [&]() -> int {
      // Past the first frame, ip is a return address: the call is the instruction before.
      const FrameRule* rule = rule_for(first ? ip : ip - 1);
      if (!rule) return -1;
      uint64_t cfa = (rule->cfa_base == FrameRule::Base::Sp ? sp : bp) + static_cast<uint64_t>(rule->cfa_off);
      if (rule->ra == FrameRule::Saved::Undefined) return 0;
      unw_word_t ra = 0, saved_bp = 0;
      if (!read_word(cfa + static_cast<uint64_t>(rule->ra_off), &ra)) return -1;
      switch (rule->bp) {
        case FrameRule::Saved::Same: break;
        case FrameRule::Saved::AtCfa:
          if (!read_word(cfa + static_cast<uint64_t>(rule->bp_off), &saved_bp)) return -1;
          bp = saved_bp;
          break;
        case FrameRule::Saved::IsCfa: bp = cfa + static_cast<uint64_t>(rule->bp_off); break;
        case FrameRule::Saved::Undefined: return -1;
      }
      sp = cfa;
      ip = ra;
      first = false;
      return 1;
    };
    n = 0;
    int more = skip_first ? step() : 1;
    while (more > 0 && n < out.size()) {
      if (ip == 0) break;
      out[n++] = ip;
      more = step();
    }
    return more >= 0 || n == out.size();
  }

  size_t walk_libunwind(bool skip_first, std::span<uint64_t> out) {
    size_t n = 0;
    unw_cursor_t cursor;
    if (unw_init_remote(&cursor, as, this) == 0) {
      bool more = !skip_first || unw_step(&cursor) > 0;
      while (more && n < out.size()) {
        unw_word_t ip = 0;
        if (unw_get_reg(&cursor, UNW_REG_IP, &ip) != 0 || ip == 0) break;
        out[n++] = ip;
        more = unw_step(&cursor) > 0;
      }
    }
    return n;
  }

  void patch(uint8_t* buf, uint64_t lo, uint64_t hi) const {
    for (auto [slot, real] : patches)
      if (slot >= lo && slot + 8 <= hi) std::memcpy(buf + (slot - lo), &real, 8);
  }

  bool grow_window(uint64_t need_end) {
    if (win_at_end) return false;
    uint64_t want = std::max<uint64_t>(need_end - win_lo, 2 * (win_hi - win_lo));
    if (want > kMaxWindow) want = std::max<uint64_t>(need_end - win_lo, kMaxWindow);
    if (want > kMaxWindow) return false;
    size_t old = window.size();
    window.resize(static_cast<size_t>(want));
    auto got = process->mem().read(RemoteAddr(win_hi), {window.data() + old, window.size() - old});
    ++stats->stack_reads;
    size_t n = got ? *got : 0;
    if (n < window.size() - old) win_at_end = true;
    window.resize(old + n);
    uint64_t new_hi = win_lo + window.size();
    patch(window.data(), win_lo, new_hi);
    bool grew = new_hi > win_hi;
    win_hi = new_hi;
    return grew;
  }

  bool read_word(uint64_t addr, unw_word_t* out) {
    if (addr >= win_lo && addr - win_lo <= kMaxWindow) {
      while (addr + 8 > win_hi)
        if (!grow_window(addr + 8)) break;
      if (addr + 8 <= win_hi) {
        std::memcpy(out, window.data() + (addr - win_lo), 8);
        return true;
      }
    }
    if (const Module* m = process->space.module_at(RemoteAddr(addr)); m && m->elf) {
      auto bytes = m->elf->read_only_bytes(addr - m->bias, 8);
      if (bytes.size() == 8) {
        std::memcpy(out, bytes.data(), 8);
        return true;
      }
    }
    uint64_t v = 0;
    auto got = process->mem().read(RemoteAddr(addr), {reinterpret_cast<uint8_t*>(&v), 8});
    ++stats->other_reads;
    if (!got || *got != 8) return false;
    for (auto [slot, real] : patches)
      if (slot == addr) v = real;
    *out = v;
    return true;
  }
};

namespace {

Backtracer::Impl* impl_of(void* arg) { return static_cast<Backtracer::Impl*>(arg); }

int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t* pi, int need_unwind_info, void* arg) {
  Backtracer::Impl* s = impl_of(arg);
  const Module* m = s->process->space.module_at(RemoteAddr(ip));
  if (!m || !m->elf) return -UNW_ENOINFO;
  auto table = eh_frame_table(*m->elf);
  if (!table) return -UNW_ENOINFO;
  uint32_t fde_count = table->count;
  uint64_t hdr_addr = table->hdr + m->bias;
  unw_dyn_info_t di{};
  di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
  di.start_ip = m->map.base;
  di.end_ip = m->map.end;
  di.u.rti.name_ptr = 0;
  di.u.rti.segbase = hdr_addr;
  di.u.rti.table_len = static_cast<unw_word_t>(fde_count) * 8 / sizeof(unw_word_t);
  di.u.rti.table_data = hdr_addr + 12;
  return UNW_OBJ(dwarf_search_unwind_table)(as, ip, &di, pi, need_unwind_info, arg);
}

// The table-format unwind info dwarf_search_unwind_table hands out is released by
// libunwind itself.
void put_unwind_info(unw_addr_space_t, unw_proc_info_t*, void*) {}

int get_dyn_info_list_addr(unw_addr_space_t, unw_word_t*, void*) { return -UNW_ENOINFO; }

int access_mem(unw_addr_space_t, unw_word_t addr, unw_word_t* val, int write, void* arg) {
  if (write) return -UNW_EINVAL;
  return impl_of(arg)->read_word(addr, val) ? 0 : -UNW_EINVAL;
}

int access_reg(unw_addr_space_t, unw_regnum_t reg, unw_word_t* val, int write, void* arg) {
  if (write) return -UNW_EINVAL;
  // libunwind numbers the registers it asks for as the psABI's DWARF numbers do
  // (libunwind-x86_64.h: rax 0 ... r15 15, rip 16 = UNW_REG_IP), which Registers::get
  // takes; past the instruction pointer come registers the set does not hold.
  if (reg < 0 || reg > UNW_REG_IP) return -UNW_EBADREG;
  *val = impl_of(arg)->regs->get(reg);
  return 0;
}

int access_fpreg(unw_addr_space_t, unw_regnum_t, unw_fpreg_t*, int, void*) { return -UNW_EBADREG; }
int resume(unw_addr_space_t, unw_cursor_t*, void*) { return -UNW_EINVAL; }
int get_proc_name(unw_addr_space_t, unw_word_t, char*, size_t, unw_word_t*, void*) { return -UNW_ENOINFO; }

unw_accessors_t g_accessors = {find_proc_info, put_unwind_info, get_dyn_info_list_addr, access_mem,
                               access_reg,     access_fpreg,    resume,                 get_proc_name};

}  // namespace

Backtracer::Backtracer() : impl_(std::make_unique<Impl>()) {
  impl_->as = unw_create_addr_space(&g_accessors, 0);
  if (impl_->as) unw_set_caching_policy(impl_->as, UNW_CACHE_GLOBAL);
  impl_->verify = verify_requested();
}

Backtracer::~Backtracer() {
  if (impl_->as) unw_destroy_addr_space(impl_->as);
  g_totals.backtraces += stats_.backtraces;
  g_totals.frames += stats_.frames;
  g_totals.stack_reads += stats_.stack_reads;
  g_totals.other_reads += stats_.other_reads;
  g_totals.by_rules += stats_.by_rules;
  g_totals.verified += stats_.verified;
  g_totals.mismatches += stats_.mismatches;
  g_totals.recorded_verified += stats_.recorded_verified;
  g_totals.recorded_mismatches += stats_.recorded_mismatches;
}

void Backtracer::flush() {
  if (impl_->as) unw_flush_cache(impl_->as, 0, 0);
  impl_->rules.clear();
  impl_->cfis.clear();
}

bool Backtracer::verify_requested() {
  const char* v = std::getenv("FT_UNWIND_VERIFY");
  return v && *v && std::strcmp(v, "0") != 0;
}

void Backtracer::Impl::begin(Process& p, Thread& t, const Registers& r, Stats& st) {
  process = &p;
  regs = &r;
  stats = &st;
  patches.clear();
  for (const ShadowFrame& f : t.stack.frames()) {
    if (!f.armed || f.site) continue;
    // Tail-call partners share a slot; the outermost frame holds the real address.
    if (std::none_of(patches.begin(), patches.end(), [&](const auto& e) { return e.first == f.slot.value(); }))
      patches.emplace_back(f.slot.value(), f.real_ret.value());
  }
  win_lo = win_hi = r.sp().value();
  win_at_end = false;
  window.clear();
  window.reserve(kFirstWindow);
  grow_window(win_lo + kFirstWindow);
}

void Backtracer::Impl::end() {
  process = nullptr;
  regs = nullptr;
}

size_t Backtracer::capture(Process& p, Thread& t, const Registers& regs, bool skip_first, std::span<uint64_t> out) {
  Impl& s = *impl_;
  if (!s.as || out.empty()) return 0;
  ++stats_.backtraces;
  s.begin(p, t, regs, stats_);
  size_t n = 0;
  if (s.walk_rules(regs, skip_first, out, n)) {
    ++stats_.by_rules;
    if (s.verify) {
      ++stats_.verified;
      std::vector<uint64_t> check(out.size());
      size_t m = s.walk_libunwind(skip_first, check);
      if (m != n || !std::equal(check.begin(), check.begin() + static_cast<ptrdiff_t>(m), out.begin())) {
        if (++stats_.mismatches <= 10)
          log::warn("backtrace by frame rules differs from libunwind's at pc {:#x} ({} frames against {})",
                    regs.ip().value(), n, m);
        n = m;
        std::copy_n(check.begin(), m, out.begin());
      }
    }
  } else {
    n = s.walk_libunwind(skip_first, out);
  }
  stats_.frames += n;
  s.end();
  return n;
}

void Backtracer::check_recorded_walk(Process& p, Thread& t, const Registers& regs, std::span<const uint64_t> walk,
                                     bool complete) {
  Impl& s = *impl_;
  if (!s.as || walk.empty()) return;
  s.begin(p, t, regs, stats_);
  // A complete walk ended at the outermost frame: libunwind must find no frame more.
  std::vector<uint64_t> check(walk.size() + (complete ? 1 : 0));
  size_t m = s.walk_libunwind(/*skip_first=*/true, check);
  s.end();
  ++stats_.recorded_verified;
  if (m != walk.size() || !std::equal(walk.begin(), walk.end(), check.begin())) {
    if (++stats_.recorded_mismatches <= 10)
      log::warn("backtrace walked in the process differs from libunwind's at the entry of {:#x} ({} frames "
                "against {}{})",
                regs.ip().value(), walk.size(), m, m == check.size() && complete ? " or more" : "");
  }
}

}  // namespace ft
