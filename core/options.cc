#include "core/options.h"

#include <getopt.h>

#include <algorithm>
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

enum LongOnly {
  kDisabled = 1000, kStats, kUncompressed, kLog, kNoDemangle, kTimeFilter, kFromProgram, kStructDepth, kReturns
};

// The option getopt stopped at, as the user typed it. `scanned` is the argument getopt
// was looking at (optind before the call). argv[optind - 1] is not it: inside a group
// of short options ("-tt", "-qZ") optind has not moved past the group yet, so it names
// the previous argument, or the program itself. A short option's letter is in optopt.
std::string offending_option(const char* scanned) {
  std::string arg = scanned ? scanned : "";
  if (arg.rfind("--", 0) == 0) return arg.substr(0, arg.find('='));
  if (optopt > 0 && optopt < 128) return std::string("-") + static_cast<char>(optopt);
  return arg;
}

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
      --returns=HOW         how returns are caught: stack (the default) replaces
                            the return address on the stack; ret-sites puts a
                            breakpoint on each return instruction of the function
                            and never writes the stack (always so for the code of
                            Go, JVMs and V8, which walk stacks themselves)
      --stats               print events, ptrace stops and time per event at exit
  -q, --quiet               no messages from functracer except errors and functions
                            it could not trace (and no summary at exit)
  -d, --debug               log every ptrace request and breakpoint decision
  -V, --version             print the version
  -h, --help                print this help

Call log (calltrace; as in ltrace, strace and uftrace):
  -c, --summary             count calls, time and errors per function and print a
                            table at exit instead of the call log
  -T, --durations           show the time spent in each call
  -t, --timestamps          prefix each line with the time of day; -tt with
                            microseconds; -ttt as seconds since the epoch
  -s, --string-size=N       read at most N bytes of a string argument (256)
      --struct-depth=N      show the members of structures passed by pointer, by
                            value or as C++ `this`, and std::string text (DWARF);
                            N is 0 (off, the default) or 1 (one level)
  -C, --demangle            C++ names demangled (the default)
      --no-demangle         names as in the symbol table
  -l, --library=LIB         trace the functions of the libraries whose path
                            contains LIB (like -a '*@LIB'); repeatable
  -x, --exe-functions=PATTERNS
                            trace the executable's own functions matching
                            PATTERNS (globs, comma-separated)
      --from-program        only calls made from the executable's own code, not
                            from inside libraries (ltrace's view of library calls)
  -D, --depth=N             only calls nested at most N deep (1: outermost only)
      --time-filter=DUR     only calls that lasted at least DUR (250us, 1.5ms, 2s);
                            shows each outermost call when it returns

Exit status: the program's exit status (128+N if it was killed by signal N);
1 when functracer cannot start (no such program or pid, permission, bad plugin);
2 for usage errors.
)";
}

bool parse_duration(std::string_view text, uint64_t* ns) {
  size_t unit = text.find_first_not_of("0123456789.");
  if (unit == 0 || unit == std::string_view::npos) return false;
  std::string number(text.substr(0, unit));
  std::string_view suffix = text.substr(unit);
  double scale = suffix == "ns" ? 1 : suffix == "us" ? 1e3 : suffix == "ms" ? 1e6 : suffix == "s" ? 1e9 : 0;
  if (scale == 0) return false;
  char* end = nullptr;
  double v = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || v < 0 || v * scale > 1e18) return false;
  *ns = static_cast<uint64_t>(v * scale + 0.5);
  return true;
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
      {"summary", no_argument, nullptr, 'c'},
      {"durations", no_argument, nullptr, 'T'},
      {"timestamps", no_argument, nullptr, 't'},
      {"string-size", required_argument, nullptr, 's'},
      {"demangle", no_argument, nullptr, 'C'},
      {"no-demangle", no_argument, nullptr, kNoDemangle},
      {"library", required_argument, nullptr, 'l'},
      {"exe-functions", required_argument, nullptr, 'x'},
      {"depth", required_argument, nullptr, 'D'},
      {"time-filter", required_argument, nullptr, kTimeFilter},
      {"from-program", no_argument, nullptr, kFromProgram},
      {"struct-depth", required_argument, nullptr, kStructDepth},
      {"returns", required_argument, nullptr, kReturns},
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
    optopt = 0;
    const char* scanned = optind < argc ? argv[optind] : nullptr;
    int c = getopt_long(argc, argv, "+:e:a:F:o:b:AM:fp:qdVhcTts:Cl:x:D:", long_opts, &idx);
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
      case 'c': o.summary = true; break;
      case 'T': o.durations = true; break;
      case 't': o.timestamps = std::min(o.timestamps + 1, 3); break;
      case 's':
        if (!parse_int(optarg, 0, 1 << 20, &v)) return usage_error(std::string("bad string size '") + optarg + "'");
        o.string_size = static_cast<int>(v);
        break;
      case 'C': o.demangle = true; break;
      case kNoDemangle: o.demangle = false; break;
      case 'l':
        if (!o.library.empty()) o.library += ",";
        o.library += optarg;
        break;
      case 'x':
        if (!o.exe_audit.empty()) o.exe_audit += ",";
        o.exe_audit += optarg;
        break;
      case 'D':
        if (!parse_int(optarg, 1, 1 << 20, &v)) return usage_error(std::string("bad depth '") + optarg + "'");
        o.depth_limit = static_cast<int>(v);
        break;
      case kTimeFilter:
        if (!parse_duration(optarg, &o.time_filter_ns) || o.time_filter_ns == 0)
          return usage_error(std::string("bad duration '") + optarg + "' (a number and a unit: 250us, 1.5ms, 2s)");
        break;
      case kFromProgram: o.from_program = true; break;
      case kStructDepth:
        if (!parse_int(optarg, 0, 1, &v))
          return usage_error(std::string("bad structure depth '") + optarg + "' (0 or 1)");
        o.struct_depth = static_cast<int>(v);
        break;
      case kReturns:
        if (std::string_view(optarg) == "stack") {
          o.returns = Options::Returns::Stack;
        } else if (std::string_view(optarg) == "ret-sites") {
          o.returns = Options::Returns::ReturnSites;
        } else {
          return usage_error(std::string("bad --returns '") + optarg + "' (stack or ret-sites)");
        }
        break;
      case 'q': o.quiet = true; break;
      case 'd': o.debug = true; break;
      case 'V': o.action = Options::Action::Version; return o;
      case 'h': o.action = Options::Action::Help; return o;
      case ':': return usage_error("option '" + offending_option(scanned) + "' needs an argument");
      default: return usage_error("unknown option '" + offending_option(scanned) + "'");
    }
  }
  for (int i = optind; i < argc; ++i) o.command.emplace_back(argv[i]);
  if (o.command.empty() && o.attach.empty()) return usage_error("no program to run and no -p PID");
  if (!o.command.empty() && !o.attach.empty()) return usage_error("give either a program to run or -p PID, not both");
  if (o.time_filter_ns && !o.output_dir.empty())
    return usage_error("--time-filter shows the call log; with -o use functracer-postproc tree --time-filter");
  // -a names functions to trace, which is what calltrace does, as do the call log's
  // options; otherwise the heap.
  bool calls = !o.audit.empty() || !o.library.empty() || !o.exe_audit.empty() || o.summary || o.durations ||
               o.timestamps || o.string_size >= 0 || o.depth_limit >= 0 || o.time_filter_ns || o.from_program ||
               o.struct_depth >= 0;
  if (o.plugins.empty()) o.plugins.push_back(calls ? "calltrace" : "memtrace");
  return o;
}

}  // namespace ft
