#include "core/event_reporter.h"

#include <time.h>

#include <algorithm>
#include <cstring>

#include "arch/arch.h"
#include "common/clock.h"
#include "core/log.h"
#include "functracer/schema.h"

namespace ft {

ft_ctx EventReporter::ctx(Process& p, Thread* t, const Registers* regs, uint64_t now, unsigned depth) const {
  ft_ctx c;
  c.process = &p;
  if (p.reports_to)
    if (Process* to = procs_.find(p.reports_to)) c.process = to;
  c.thread = t;
  c.regs = regs ? regs : stop_regs_;
  c.now_ns = now;
  c.depth = depth;
  c.stream_tid = stream_tid_;
  return c;
}

void EventReporter::close_goroutines(Process& p, Thread& t, const char* reason, uint64_t now) {
  GoStacks& go = p.space.go_stacks;
  for (uint32_t n = 1; n <= go.count(); ++n) {
    CallStack& s = go.stack(n);
    if (s.empty()) continue;
    OfGoroutine scope(*this, s, n);
    report_unwound(t, s.take_all(), reason, now, 0);
  }
}

void EventReporter::report_unwound(Thread& t, const std::vector<ShadowFrame>& frames, const char* reason, uint64_t now,
                            size_t base_depth) {
  Process& p = *t.process;
  if (p.silent && !p.reports_to) return;
  // Inherited frames (a forked child's copy of its parent's) are the outermost ones;
  // they are neither reported nor counted in depths.
  size_t inherited_below = std::min(base_depth, frames_of(t).inherited());
  size_t outer = static_cast<size_t>(
      std::count_if(frames.begin(), frames.end(), [](const ShadowFrame& f) { return !f.inherited; }));
  for (size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].inherited) continue;
    --outer;
    const FunctionInfo& fn = p.space.functions[frames[i].fn];
    ft_ctx c = ctx(p, &t, nullptr, now, static_cast<unsigned>(base_depth - inherited_below + outer));
    c.unwound_ret = frames[i].real_ret;
    host_.unwound(c, fn, reason);
    ++stats_.unwound;
    count(c);
  }
}

void EventReporter::record_lost(Process& p, Thread& t, int64_t count, const std::string& reason) {
  if (p.silent && !p.reports_to) return;
  TraceRecord r;
  r.type = schema::type::kLost;
  r.add(schema::key::kCount, count);
  r.add(schema::key::kReason, reason);
  ft_ctx c = ctx(p, &t, nullptr, monotonic_ns());
  host_.record(c, r);
  summary_->lost(static_cast<uint64_t>(count));
}

void EventReporter::lifecycle(Process& p, Thread* t, ft_event_kind kind, int64_t value, uint64_t address, const char* text,
                       TraceRecord r, const std::string& line) {
  ft_ctx c = ctx(p, t, nullptr, monotonic_ns());
  host_.record(c, r);
  if (!line.empty()) host_.print(c, line);
  ft_event ev{kind, value, address, text};
  host_.event(c, ev);
  ++stats_.lifecycle;
  count(c);
}

std::string EventReporter::trace_path(const Process& p) const {
  std::string base = p.exe.substr(p.exe.rfind('/') + 1);
  if (base.empty()) base = "process";
  return opts_.output_dir + "/" + base + "." + std::to_string(p.pid()) +
         TraceWriter::extension(opts_.uncompressed ? TraceWriter::Format::kPlain : TraceWriter::Format::kZstd);
}

void EventReporter::exec_done(Process& p) {
  summary_->process(p.pid(), p.exe);
  if (!p.trace) return;
  if (auto s = p.trace->rename_to(trace_path(p)); !s) log::warn("{}", s.error().message);
}

Status EventReporter::open_trace(Process& p) {
  summary_->process(p.pid(), p.exe);
  if (opts_.output_dir.empty()) return {};
  auto w = TraceWriter::create(trace_path(p), opts_.uncompressed ? TraceWriter::Format::kPlain
                                                                 : TraceWriter::Format::kZstd);
  if (!w) return w.error();
  p.trace = std::move(*w);
  p.trace->on_close([summary = summary_, pid = p.pid()](const TraceWriter& tw) {
    summary->trace_closed(pid, TraceOutcome{tw.path(), tw.records(), tw.records_on_disk(), tw.bytes_written(),
                                            tw.write_error(), tw.kept()});
  });
  timespec rt{};
  clock_gettime(CLOCK_REALTIME, &rt);
  TraceRecord r;
  r.type = schema::type::kHeader;
  r.tid = p.pid();
  r.ts_ns = monotonic_ns();
  r.add(schema::key::kFormat, static_cast<int64_t>(kTraceFormatVersion));
  r.add(schema::key::kArch, std::string(arch::host().name));
  r.add(schema::key::kPid, static_cast<int64_t>(p.pid()));
  r.add(schema::key::kExe, p.exe);
  r.add(schema::key::kCmdline, p.cmdline);
  r.add(schema::key::kStartRealtimeNs, static_cast<int64_t>(rt.tv_sec) * 1000000000 + rt.tv_nsec);
  r.add(schema::key::kPlugins, host_.names());
  r.add(schema::key::kBacktraceDepth, static_cast<int64_t>(opts_.backtrace_depth < 0 ? kDefaultBacktraceDepth : opts_.backtrace_depth));
  p.trace->write(r);
  // On disk before it has its name: a file that exists is a trace, even if
  // functracer is killed now.
  if (auto s = p.trace->publish(); !s) {
    p.trace.reset();
    return s.error();
  }
  return {};
}

void EventReporter::write_module(Process& p, const Module& m) {
  if (m.data_file) return;
  TraceRecord r;
  r.type = schema::type::kModule;
  r.tid = p.pid();
  r.ts_ns = monotonic_ns();
  r.add(schema::key::kBase, Hex{m.map.base}).add(schema::key::kEnd, Hex{m.map.end}).add(schema::key::kOffset, Hex{m.map.offset});
  r.add(schema::key::kPath, m.map.path).add(schema::key::kBuildId, m.elf ? m.elf->build_id() : std::string());
  if (m.map.deleted) r.add(schema::key::kDeleted, static_cast<int64_t>(1));
  p.trace->write(r);
}

void EventReporter::write_modules(Process& p) {
  if (!p.trace) return;
  for (const auto& m : p.space.modules) write_module(p, *m);
}

void EventReporter::report_returns(Thread& t, const Registers& regs, const CallStack::Return& r, uint64_t now,
                            const fastret::Record* deferred) {
  Process& p = *t.process;
  if (p.silent && !p.reports_to) return;
  size_t base = frames_of(t).depth() - frames_of(t).inherited();
  size_t outer = static_cast<size_t>(std::count_if(r.returned.begin(), r.returned.end(),
                                                   [](const ShadowFrame& f) { return !f.inherited; }));
  for (size_t i = 0; i < r.returned.size(); ++i) {
    if (r.returned[i].inherited) continue;
    --outer;
    const FunctionInfo& fn = p.space.functions[r.returned[i].fn];
    ft_ctx c = ctx(p, &t, &regs, now, static_cast<unsigned>(base + outer));
    c.return_to = r.real_ret;
    c.go_abi = fn.go_abi && !deferred;  // Go's results are in its argument registers
    if (deferred) {
      c.deferred = true;
      c.deferred_xmm0 = deferred->xmm0;
    }
    host_.ret(c, fn);
    ++stats_.returns;
    count(c);
  }
}

void EventReporter::call(Process& p, Thread& t, const Registers& regs, uint64_t now, unsigned depth,
                         const FunctionInfo& fn, RemoteAddr call_pc, bool deferred, RemoteAddr caller,
                         std::span<const uint64_t> stack) {
  ft_ctx c = ctx(p, &t, &regs, now, depth);
  c.call_pc = call_pc;
  // (A recorded call's registers are the C convention's: Go functions are never recorded.)
  c.go_abi = fn.go_abi && !deferred;
  if (deferred) {
    c.deferred = true;
    c.recorded_caller = caller;
    c.recorded_frames = stack;
  }
  host_.call(c, fn);
  ++stats_.calls;
  count(c);
}

void EventReporter::syscall(Process& p, Thread& t, const ft_syscall& sc) {
  ft_ctx c = ctx(p, &t, nullptr, monotonic_ns());
  host_.syscall(c, sc);
  ++stats_.syscalls;
  count(c);
}

void EventReporter::module(Process& p, Thread& t, const Module& m, bool loaded) {
  ft_module fm{m.map.path.c_str(), m.map.base, m.map.end, m.elf->build_id().c_str(), m.is_main ? 1 : 0,
               loaded ? 1 : 0};
  ft_ctx c = ctx(p, &t, nullptr, monotonic_ns());
  host_.module(c, fm);
}

}  // namespace ft
