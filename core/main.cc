// functracer: command-line entry point (see doc/functracer.1).
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "core/backtracer.h"
#include "core/log.h"
#include "core/memory_budget.h"
#include "core/options.h"
#include "core/plugin_host.h"
#include "core/tracer.h"
#include "core/untraced.h"

namespace {

// A signal a traced program sent to its process group (kill(0, sig)) reaches
// functracer too: it is not a request, and the program has it already.
bool from_tracee(const siginfo_t* si) {
  return si && si->si_code <= 0 && si->si_pid != 0 && ft::Tracer::is_tracee(si->si_pid);
}

void on_stop_signal(int sig, siginfo_t* si, void*) {
  int saved_errno = errno;  // is_tracee and kill may change it under interrupted code
  if (!from_tracee(si)) ft::Tracer::request_stop(sig, si && si->si_code <= 0 ? si->si_pid : 0);
  errno = saved_errno;
}
void on_toggle_signal(int, siginfo_t* si, void*) {
  int saved_errno = errno;
  if (!from_tracee(si)) ft::Tracer::request_toggle();
  errno = saved_errno;
}

// Signals functracer has no use for whose default action would end it (and with
// it, through PTRACE_O_EXITKILL, the program): treated like SIGTERM.
constexpr int kOtherFatal[] = {SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGIO, SIGPWR, SIGSTKFLT};

void install_signal_handlers() {
  // The program must start with the dispositions functracer was given (an ignored
  // SIGPIPE or SIGHUP stays ignored across exec, a handled one becomes default).
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGPIPE, SIGXFSZ}) ft::Tracer::save_disposition(s);
  for (int s : kOtherFatal) ft::Tracer::save_disposition(s);
  for (int s = SIGRTMIN; s <= SIGRTMAX; ++s) ft::Tracer::save_disposition(s);
  struct sigaction sa {};
  sa.sa_sigaction = on_stop_signal;
  sa.sa_flags = SA_SIGINFO;  // no SA_RESTART: waitpid returns EINTR
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(s, &sa, nullptr);
  for (int s : kOtherFatal) sigaction(s, &sa, nullptr);
  for (int s = SIGRTMIN; s <= SIGRTMAX; ++s) sigaction(s, &sa, nullptr);
  struct sigaction tg {};
  tg.sa_sigaction = on_toggle_signal;
  tg.sa_flags = SA_SIGINFO;
  sigemptyset(&tg.sa_mask);
  sigaction(SIGUSR1, &tg, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a closed stderr must not kill functracer (and with it the program)
  // Nor a trace file growing past RLIMIT_FSIZE: the write fails with EFBIG instead,
  // and the trace is cut like one on a full disk (core/trace_writer.h).
  signal(SIGXFSZ, SIG_IGN);
}

ft::Status make_dirs(const std::string& dir) {
  std::string cur;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    cur = dir.substr(0, pos);
    if (cur.empty()) continue;
    if (::mkdir(cur.c_str(), 0700) != 0 && errno != EEXIST)
      return ft::Error::from_errno(errno, "cannot create output directory " + dir);
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return ft::Error::msg("cannot use output directory " + dir + ": not a directory");
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed = ft::parse_options(argc, argv);
  if (!parsed) {
    ft::log::error("{}", parsed.error().message);
    return 2;
  }
  const ft::Options& opts = *parsed;
  if (opts.action == ft::Options::Action::Help) {
    std::fputs(ft::usage_text().c_str(), stdout);
    return 0;
  }
  if (opts.action == ft::Options::Action::Version) {
    std::printf("functracer %s\n", FT_VERSION);
    return 0;
  }
  ft::log::quiet = opts.quiet;
  ft::log::debug_enabled = opts.debug;

  if (!opts.output_dir.empty())
    if (auto s = make_dirs(opts.output_dir); !s) {
      ft::log::error("{}", s.error().message);
      return 1;
    }

  ft::PluginHost::install_fault_handlers(&ft::Tracer::on_engine_fault);
  ft::memory_budget::install();
  ft::PluginHost host;
  host.set_streaming(opts.output_dir.empty());
  if (!opts.audit.empty()) host.set_option("audit", opts.audit);
  if (!opts.output_dir.empty()) host.set_option("output", opts.output_dir);
  if (opts.backtrace_depth >= 0) host.set_option("backtrace_depth", std::to_string(opts.backtrace_depth));
  if (opts.quiet) host.set_option("quiet", "1");
  if (opts.log) host.set_option("log", "1");
  if (opts.backtrace_all) host.set_option("backtrace_all", "1");
  if (!opts.monitor.empty()) host.set_option("monitor", opts.monitor);
  // The call log's options (calltrace; doc/plugin-api.md lists them).
  if (opts.summary) host.set_option("summary", "1");
  if (opts.durations) host.set_option("durations", "1");
  if (opts.timestamps) host.set_option("timestamps", std::to_string(opts.timestamps));
  if (opts.string_size >= 0) host.set_option("string_size", std::to_string(opts.string_size));
  if (!opts.demangle) host.set_option("demangle", "0");
  if (!opts.library.empty()) host.set_option("library", opts.library);
  if (!opts.exe_audit.empty()) host.set_option("exe_audit", opts.exe_audit);
  if (opts.depth_limit >= 0) host.set_option("depth", std::to_string(opts.depth_limit));
  if (opts.struct_depth >= 0) host.set_option("struct_depth", std::to_string(opts.struct_depth));
  if (opts.time_filter_ns) host.set_option("time_filter_ns", std::to_string(opts.time_filter_ns));
  if (opts.from_program) host.set_option("from_program", "1");
  for (const auto& p : opts.plugins)
    if (auto s = host.load(p); !s) {
      ft::log::error("{}", s.error().message);
      return 1;
    }

  ft::SignatureSources signatures;
  for (const auto& f : opts.prototype_files)
    if (auto s = signatures.add_file(f); !s) {
      ft::log::error("{}", s.error().message);
      return 1;
    }

  if (opts.attach.empty()) ft::Tracer::set_launch_mode();
  install_signal_handlers();
  auto tracer = std::make_unique<ft::Tracer>(opts, host);
  tracer->set_signature_sources(&signatures);
  auto rc = opts.attach.empty() ? tracer->run_launch() : tracer->run_attach(opts.attach);
  if (!rc) {
    ft::log::error("{}", rc.error().message);
    return 1;
  }
  const ft::TracerStats stats = tracer->stats();
  const double secs = static_cast<double>(tracer->elapsed_ns()) / 1e9;
  std::shared_ptr<ft::RunSummary> summary = tracer->summary();
  tracer.reset();  // closes the trace files: their sizes are final
  if (opts.stats) {
    const auto& s = stats;
    uint64_t ev = s.events();
    ft::log::error("{} events ({} calls, {} returns, {} unwound, {} other), {} ptrace stops ({:.2f} per event), "
                   "{} breakpoints, {} refused, {:.3f} s, {:.2f} us per event",
                   ev, s.calls, s.returns, s.unwound, s.lifecycle, s.stops,
                   ev ? static_cast<double>(s.stops) / static_cast<double>(ev) : 0.0, s.breakpoints, s.refused,
                   secs, ev ? secs * 1e6 / static_cast<double>(ev) : 0.0);
    if (s.moved_returns)
      ft::log::error("{} returns through a return address the program moved, each taken as the innermost open "
                     "frame's", s.moved_returns);
    if (s.fast_frames)
      ft::log::error("{} returns hooked in the process, {} of them returned without a stop", s.fast_frames,
                     s.fast_returns);
    if (s.patched || s.patch_refused)
      ft::log::error("{} function entries patched for the in-process recorder, {} kept a breakpoint; {} calls and "
                     "{} returns recorded in the process, {} lost to full buffers",
                     s.patched, s.patch_refused, s.recorded_calls, s.recorded_returns, s.recorded_lost);
    if (s.room_retries)
      ft::log::error("{} recorded calls found their thread's buffer full and went on once its records were copied "
                     "out", s.room_retries);
    if (s.patched)
      ft::log::error("{} of the patched entries keep their first instruction in place (a uprobe another tool puts "
                     "there runs on into the patch), {} do not",
                     s.patched_entry_kept, s.patched - s.patched_entry_kept);
    if (s.attaches)
      ft::log::error("{} attach{}: threads held at most {:.1f} ms ({:.1f} ms of it reading modules and planting)",
                     s.attaches, s.attaches == 1 ? "" : "es", static_cast<double>(s.attach_held_max_ns) / 1e6,
                     static_cast<double>(s.attach_setup_max_ns) / 1e6);
    if (s.snapshots)
      ft::log::error("{} memory snapshot{} handed to plugins (leak scans), {:.3f} s", s.snapshots,
                     s.snapshots == 1 ? "" : "s", static_cast<double>(s.snapshot_ns) / 1e9);
    const auto& bt = ft::Backtracer::totals();
    if (bt.backtraces)
      ft::log::error("{} backtraces ({:.1f} frames each, {} through frame rules alone), {} stack reads, "
                     "{} other memory reads{}",
                     bt.backtraces, static_cast<double>(bt.frames) / static_cast<double>(bt.backtraces),
                     bt.by_rules, bt.stack_reads, bt.other_reads,
                     bt.verified ? fmt::format(", {} checked against libunwind, {} differed", bt.verified,
                                               bt.mismatches)
                                 : std::string());
    if (bt.recorded_verified)
      ft::log::error("{} backtraces walked in the process checked against libunwind, {} differed",
                     bt.recorded_verified, bt.recorded_mismatches);
  }
  for (const std::string& line : summary->lines(stats, opts.output_dir, opts.plugins.front(), ft::untraced_so_far()))
    ft::log::info("{}", line);
  if (summary->incomplete()) {
    // A trace cut by a write error (a full disk) is a failure of the run even though
    // the program ran to its end: status 1, as for a plugin crash, whatever the
    // program's own status, which is said here since the status no longer is.
    if (opts.attach.empty() && *rc != 1)
      ft::log::info("exit status 1: a trace is incomplete (the program's own exit status was {})", *rc);
    return 1;
  }
  return *rc;
}
