#include "postproc/cli.h"
#include "postproc/report_leaks.h"

#include <charconv>
#include <optional>
#include <span>

namespace ft::post {

namespace {

std::string report_names() {
  std::string names;
  for (const ReportSpec& r : all_reports()) {
    if (!names.empty()) names += ", ";
    names += r.name;
  }
  return names;
}

std::optional<int64_t> positive(const std::string& v) {
  int64_t n = 0;
  auto res = std::from_chars(v.data(), v.data() + v.size(), n);
  if (res.ec != std::errc() || res.ptr != v.data() + v.size() || n <= 0) return std::nullopt;
  return n;
}

// Every option: its names, whether it takes a value, and which reports accept it
// (0: all of them).
struct OptionSpec {
  std::string_view long_name;
  char short_name;
  std::string_view value;  // what the value is, for messages; empty: no value
  uint32_t accepted_by;    // a ReportAccepts bit
};

constexpr OptionSpec kOptions[] = {
    {"--help", 'h', "", 0},
    {"--output", 'o', "a file name", 0},
    {"--json", 0, "", kAcceptsJson},
    {"--time", 0, "", kAcceptsTime},
    {"--no-callsite", 0, "", kAcceptsCallsite},
    {"--tid", 0, "a thread id", kAcceptsTid},
    {"--sort", 0, "a sort key", 0},
    {"--metric", 0, "a metric", 0},
    {"--svg", 0, "", kAcceptsSvg},
    {"--top", 0, "a number", kAcceptsTop},
    {"--size", 0, "a size range", kAcceptsBlockFilters},
    {"--from", 0, "a moment", kAcceptsBlockFilters},
    {"--to", 0, "a moment", kAcceptsBlockFilters},
    {"--at", 0, "a moment", kAcceptsAt},
    {"--function", 0, "a function name pattern", kAcceptsGroupFilters},
    {"--suppressions", 0, "a file name", kAcceptsGroupFilters},
    {"--sysroot", 0, "a directory", kAcceptsResolve},
    {"--debug-dir", 0, "a directory", kAcceptsResolve},
    {"--kinds", 0, "a list of leak kinds", kAcceptsLeakKinds},
    {"--error-exitcode", 0, "an exit status", kAcceptsLeakKinds},
};

const OptionSpec* find_option(std::string_view name) {
  for (const OptionSpec& o : kOptions) {
    if (o.long_name == name) return &o;
    if (name.size() == 2 && name[0] == '-' && o.short_name != 0 && name[1] == o.short_name)
      return &o;
  }
  return nullptr;
}

}  // namespace

std::string usage_text() {
  std::string text =
      "Usage: functracer-postproc REPORT [OPTIONS] TRACE...\n"
      "Turns functracer trace files (one per process) into reports. A TRACE is a\n"
      "file (.trace or zstd-compressed .trace.zst), '-' for standard input, a pipe,\n"
      "or a directory written by functracer -o (its *.trace and *.trace.zst files).\n"
      "\n"
      "Reports:\n";
  for (const ReportSpec& r : all_reports()) {
    text += "  ";
    text += r.name;
    text.append(r.name.size() < 11 ? 11 - r.name.size() : 1, ' ');
    text += r.summary;
    text += '\n';
  }
  text +=
      "\n"
      "Options:\n"
      "      --json            JSON output\n"
      "      --time            show the duration of each call (tree)\n"
      "      --no-callsite     leave out where each call was made (tree)\n"
      "      --tid=N           only thread N\n"
      "      --sort=KEY        order of the entries (see functracer-postproc(1))\n"
      "      --metric=KEY      what the report measures (flamegraph: time, calls,\n"
      "                        allocated, allocations, leaked, peak, temporary)\n"
      "      --svg             an interactive SVG flame graph instead of folded stacks\n"
      "      --top=N           only the first N entries\n"
      "      --metric=KEY      what to weigh by (see functracer-postproc(1))\n"
      "  -o, --output=FILE     write the report to FILE instead of standard output\n"
      "\n"
      "Heap and descriptor reports:\n"
      "      --size=RANGE      only blocks of these sizes: 64, 1k-4k, 100-, -1M\n"
      "      --from=WHEN       only blocks allocated at or after WHEN\n"
      "      --to=WHEN         only blocks allocated at or before WHEN\n"
      "      --at=WHEN         the heap live at WHEN instead of at the end (leaks)\n"
      "                        WHEN: time since the trace started (250ms, 1.5s, 40us)\n"
      "                        or an event, #SEQ\n"
      "      --function=GLOB   only backtraces with a function matching GLOB\n"
      "      --suppressions=FILE  leave out backtraces matching FILE's leak:PATTERN lines\n"
      "      --sysroot=DIR     find the traced modules under DIR (traces from elsewhere)\n"
      "      --debug-dir=DIR   also look for separate debug files in DIR\n"
      "      --kinds=LIST      leak kinds listed: definite,indirect,possible,reachable\n"
      "                        (all, none; leaks of traces with a leak scan)\n"
      "      --error-exitcode=N  exit N when lost blocks remain (leaks)\n"
      "  -h, --help            show this help\n"
      "\n"
      "Exit status: 0 on success (also when a trace was cut short: a warning says so),\n"
      "1 when a file cannot be read or is not a trace, 2 for usage errors.\n";
  return text;
}

Result<CommandLine> parse_command_line(const std::vector<std::string>& args) {
  CommandLine cl;
  ReportOptions& o = cl.options;
  std::string report_name;
  bool have_report = false;
  bool options_done = false;
  std::vector<const OptionSpec*> given;

  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (options_done || arg.size() < 2 || arg[0] != '-') {
      if (!have_report) {
        report_name = arg;
        have_report = true;
      } else {
        o.traces.push_back(arg);
      }
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    // Splits "--name=value"; for "-oFILE" the value follows the letter.
    std::string name = arg;
    std::string value;
    bool has_value = false;
    if (arg.rfind("--", 0) == 0) {
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        name = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        has_value = true;
      }
    } else if (arg.size() > 2) {
      name = arg.substr(0, 2);
      value = arg.substr(2);
      has_value = true;
    }
    const OptionSpec* spec = find_option(name);
    if (spec == nullptr) return Error::msg("unknown option '" + name + "'");
    if (spec->value.empty()) {
      if (has_value) return Error::msg("option '" + name + "' takes no value");
    } else if (!has_value) {
      if (i + 1 >= args.size()) {
        return Error::msg("option '" + name + "' needs " + std::string(spec->value));
      }
      value = args[++i];
    }
    if (!spec->value.empty() && value.empty()) {
      return Error::msg("option '" + name + "' needs " + std::string(spec->value));
    }
    given.push_back(spec);

    std::string_view n = spec->long_name;
    if (n == "--help") {
      cl.help = true;
      return cl;
    } else if (n == "--output") {
      cl.output = value;
    } else if (n == "--json") {
      o.json = true;
    } else if (n == "--time") {
      o.time = true;
    } else if (n == "--no-callsite") {
      o.callsite = false;
    } else if (n == "--tid") {
      o.tid = positive(value);
      if (!o.tid) {
        return Error::msg("option '--tid' needs a thread id (a positive number), not '" + value +
                          "'");
      }
    } else if (n == "--sort") {
      o.sort = value;
    } else if (n == "--metric") {
      o.metric = value;
    } else if (n == "--svg") {
      o.svg = true;
    } else if (n == "--top") {
      o.top = positive(value);
      if (!o.top) return Error::msg("option '--top' needs a positive number, not '" + value + "'");
    } else if (n == "--size") {
      auto r = parse_size_range(value);
      if (!r) return Error::msg("option '--size': " + r.error().message);
      o.size = *r;
    } else if (n == "--from" || n == "--to" || n == "--at") {
      auto w = parse_when(value);
      if (!w) return Error::msg("option '" + std::string(n) + "': " + w.error().message);
      (n == "--from" ? o.from : n == "--to" ? o.to : o.at) = *w;
    } else if (n == "--function") {
      o.functions.push_back(value);
    } else if (n == "--suppressions") {
      o.suppressions.push_back(value);
    } else if (n == "--sysroot") {
      o.resolve.sysroot = value;
    } else if (n == "--debug-dir") {
      o.resolve.debug_dirs.push_back(value);
    } else if (n == "--kinds") {
      if (auto k = parse_leak_kinds(value); !k) return Error::msg("option '--kinds': " + k.error().message);
      o.leak_kinds = value;
    } else if (n == "--error-exitcode") {
      o.error_exitcode = positive(value);
      if (!o.error_exitcode || *o.error_exitcode > 255)
        return Error::msg("option '--error-exitcode' needs an exit status (1..255), not '" + value + "'");
    }
  }

  if (!have_report) return Error::msg("no report given (one of: " + report_names() + ")");
  cl.report = find_report(report_name);
  if (!cl.report) {
    return Error::msg("unknown report '" + report_name + "' (one of: " + report_names() + ")");
  }
  std::string which = "the " + std::string(cl.report->name) + " report";
  for (const OptionSpec* spec : given) {
    if (spec->accepted_by == 0 || (cl.report->accepts & spec->accepted_by) != 0) continue;
    if (spec->long_name == "--json") return Error::msg(which + " has no --json output");
    return Error::msg(which + " does not take " + std::string(spec->long_name));
  }
  // --sort and --metric: a key from the report's list.
  auto check_key = [&](const std::string& given, std::span<const std::string_view> keys,
                       std::string_view option, std::string_view verb) -> Status {
    if (given.empty()) return {};
    if (keys.empty()) return Error::msg(which + " does not take " + std::string(option));
    std::string list;
    bool known = false;
    for (std::string_view k : keys) {
      known = known || k == given;
      list += (list.empty() ? "" : ", ") + std::string(k);
    }
    if (!known) return Error::msg(which + " " + std::string(verb) + " " + list + ", not '" + given + "'");
    return {};
  };
  if (Status st = check_key(o.sort, cl.report->sort_keys, "--sort", "sorts by"); !st)
    return st.error();
  if (Status st = check_key(o.metric, cl.report->metric_keys, "--metric", "measures"); !st)
    return st.error();
  if (o.from && o.to && o.from->kind == o.to->kind && o.from->value > o.to->value) {
    return Error::msg("--from " + format_when(*o.from) + " is after --to " + format_when(*o.to));
  }
  if (o.traces.empty()) return Error::msg("no trace files given");
  if (cl.report->inputs != 0 && o.traces.size() != cl.report->inputs) {
    return Error::msg(which + " takes " + std::to_string(cl.report->inputs) +
                      " traces (files or directories), not " + std::to_string(o.traces.size()));
  }
  return cl;
}

}  // namespace ft::post
