#include "core/options.h"

#include <getopt.h>

#include <charconv>
#include <cstdlib>

namespace ft {
namespace {

Error usage_error(const std::string& what) { return Error{2, what + " (try 'functracer --help')"}; }

bool parse_int(const char* s, long min, long max, long* out) {
  std::string_view v(s);
  long x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size() || x < min || x > max) return false;
  *out = x;
  return true;
}

enum LongOnly { kDisabled = 1000, kStats, kUncompressed, kLog };

}  // namespace

std::string usage_text() {
  return R"(Usage: functracer [OPTIONS] PROGRAM [ARGS...]
       functracer [OPTIONS] -p PID [-p PID...]

Trace function calls of a program without rebuilding it.

  -e, --plugin=NAME|PATH[:OPTS]
                            plugin to run: memtrace (the default; calltrace when -a
                            is given), calltrace, fileops, or a path to a plugin .so;
                            repeatable; OPTS are the plugin's own, comma-separated
                            (memtrace:mmap)
  -a, --audit=PATTERNS      functions to trace: comma-separated globs or @FILE, matched
                            against mangled and demangled names; PATTERN@LIB limits a
                            pattern to modules whose path contains LIB
  -F, --prototypes=FILE     C prototypes (`int add3(int a, int b, int c);`, one per
                            line) giving the arguments and return types of functions
                            without debug information; repeatable (see the man page;
                            the C library's common functions are built in)
  -o, --output=DIR          write one trace file per process into DIR (created if
                            missing), zstd-compressed (NAME.PID.trace.zst); without -o
                            events are printed on stderr (memtrace: a summary per
                            process)
      --uncompressed        with -o: plain-text NAME.PID.trace files
      --log                 without -o: print every event on stderr, not only the
                            summaries (memtrace:log for memtrace alone)
  -b, --backtrace-depth=N   frames per event (memtrace, fileops: 10 by default; 0
                            turns backtraces off)
  -A, --backtrace-all       backtraces for releases too
  -M, --monitor=SIZES       backtraces only for allocations of these sizes
  -f, --follow-forks        trace children and exec'd programs too
  -p, --pid=PID             attach to a running process; repeatable
      --disabled            start with tracing off; SIGUSR1 to functracer toggles it
      --stats               print events, ptrace stops and time per event at exit
  -q, --quiet               no messages from functracer except errors (and no
                            summary at exit)
  -d, --debug               log every ptrace request and breakpoint decision
  -V, --version             print the version
  -h, --help                print this help

Exit status: the program's exit status (128+N if it was killed by signal N);
1 when functracer cannot start (no such program or pid, permission, bad plugin);
2 for usage errors.
)";
}

Result<Options> parse_options(int argc, char** argv) {
  static const option long_opts[] = {
      {"plugin", required_argument, nullptr, 'e'},
      {"audit", required_argument, nullptr, 'a'},
      {"prototypes", required_argument, nullptr, 'F'},
      {"output", required_argument, nullptr, 'o'},
      {"backtrace-depth", required_argument, nullptr, 'b'},
      {"backtrace-all", no_argument, nullptr, 'A'},
      {"monitor", required_argument, nullptr, 'M'},
      {"follow-forks", no_argument, nullptr, 'f'},
      {"pid", required_argument, nullptr, 'p'},
      {"disabled", no_argument, nullptr, kDisabled},
      {"stats", no_argument, nullptr, kStats},
      {"uncompressed", no_argument, nullptr, kUncompressed},
      {"log", no_argument, nullptr, kLog},
      {"quiet", no_argument, nullptr, 'q'},
      {"debug", no_argument, nullptr, 'd'},
      {"version", no_argument, nullptr, 'V'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  Options o;
  optind = 1;
  opterr = 0;
  for (;;) {
    int idx = 0;
    // '+': stop at the first non-option, which is the program to run.
    int c = getopt_long(argc, argv, "+:e:a:F:o:b:AM:fp:qdVh", long_opts, &idx);
    if (c == -1) break;
    long v = 0;
    switch (c) {
      case 'e': o.plugins.push_back(optarg); break;
      case 'a':
        if (!o.audit.empty()) o.audit += ",";
        o.audit += optarg;
        break;
      case 'F': o.prototype_files.push_back(optarg); break;
      case 'o': o.output_dir = optarg; break;
      case 'b':
        if (!parse_int(optarg, 0, 1024, &v)) return usage_error(std::string("bad backtrace depth '") + optarg + "'");
        o.backtrace_depth = static_cast<int>(v);
        break;
      case 'A': o.backtrace_all = true; break;
      case 'M': o.monitor = optarg; break;
      case 'f': o.follow_forks = true; break;
      case 'p':
        if (!parse_int(optarg, 1, 1L << 30, &v)) return usage_error(std::string("bad pid '") + optarg + "'");
        o.attach.push_back(static_cast<pid_t>(v));
        break;
      case kDisabled: o.start_disabled = true; break;
      case kStats: o.stats = true; break;
      case kUncompressed: o.uncompressed = true; break;
      case kLog: o.log = true; break;
      case 'q': o.quiet = true; break;
      case 'd': o.debug = true; break;
      case 'V': o.action = Options::Action::Version; return o;
      case 'h': o.action = Options::Action::Help; return o;
      case ':': return usage_error(std::string("option '") + argv[optind - 1] + "' needs an argument");
      default: return usage_error(std::string("unknown option '") + argv[optind - 1] + "'");
    }
  }
  for (int i = optind; i < argc; ++i) o.command.emplace_back(argv[i]);
  if (o.command.empty() && o.attach.empty()) return usage_error("no program to run and no -p PID");
  if (!o.command.empty() && !o.attach.empty()) return usage_error("give either a program to run or -p PID, not both");
  // -a names functions to trace, which is what calltrace does; otherwise the heap.
  if (o.plugins.empty()) o.plugins.push_back(o.audit.empty() ? "memtrace" : "calltrace");
  return o;
}

}  // namespace ft
