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

// Every option: its names, whether it takes a value, which reports accept it (0: all
// of them) and its line in --help.
struct OptionSpec {
  std::string_view long_name;
  char short_name;
  std::string_view value;  // what the value is, for messages; empty: no value
  uint32_t accepted_by;    // a ReportAccepts bit
  std::string_view usage;  // "--tid=N" as --help shows it
  std::string_view help;
};

// --sort and --metric are accepted by the reports that list keys for them
// (ReportSpec::sort_keys, metric_keys), not by a ReportAccepts bit.
constexpr uint32_t kBySortKeys = 1u << 30;
constexpr uint32_t kByMetricKeys = 1u << 31;

constexpr OptionSpec kOptions[] = {
    {"--help", 'h', "", 0, "-h, --help", "show this help (REPORT --help: that report's options)"},
    {"--version", 'V', "", 0, "-V, --version", "print the version"},
    {"--output", 'o', "a file name", 0, "-o, --output=FILE", "write the report to FILE instead of standard output"},
    {"--json", 0, "", kAcceptsJson, "--json", "JSON output"},
    {"--time", 0, "", kAcceptsTime, "--time", "show the duration of each call"},
    {"--time-filter", 0, "a duration", kAcceptsTimeFilter, "--time-filter=DUR",
     "only calls that lasted at least DUR (250us, 1.5ms, 2s)"},
    {"--no-callsite", 0, "", kAcceptsCallsite, "--no-callsite", "leave out where each call was made"},
    {"--tid", 0, "a thread id", kAcceptsTid, "--tid=N", "only thread N"},
    {"--sort", 0, "a sort key", kBySortKeys, "--sort=KEY", "order of the entries"},
    {"--metric", 0, "a metric", kByMetricKeys, "--metric=KEY", "what the report measures"},
    {"--svg", 0, "", kAcceptsSvg, "--svg", "an interactive SVG flame graph instead of folded stacks"},
    {"--top", 0, "a number", kAcceptsTop, "--top=N", "only the first N entries"},
    {"--size", 0, "a size range", kAcceptsBlockFilters, "--size=RANGE",
     "only blocks of these sizes: 64, 1k-4k, 100-, -1M"},
    {"--from", 0, "a moment", kAcceptsBlockFilters, "--from=WHEN",
     "only blocks allocated at or after WHEN (250ms, 1.5s, 40us since the start, or #SEQ)"},
    {"--to", 0, "a moment", kAcceptsBlockFilters, "--to=WHEN", "only blocks allocated at or before WHEN"},
    {"--at", 0, "a moment", kAcceptsAt, "--at=WHEN", "the heap live at WHEN instead of at the end"},
    {"--function", 0, "a function name pattern", kAcceptsGroupFilters, "--function=GLOB",
     "only backtraces with a function matching GLOB"},
    {"--suppressions", 0, "a file name", kAcceptsGroupFilters, "--suppressions=FILE",
     "leave out backtraces matching FILE's leak:PATTERN lines"},
    {"--sysroot", 0, "a directory", kAcceptsResolve, "--sysroot=DIR",
     "find the traced modules under DIR (traces from elsewhere)"},
    {"--debug-dir", 0, "a directory", kAcceptsResolve, "--debug-dir=DIR", "also look for separate debug files in DIR"},
    {"--kinds", 0, "a list of leak kinds", kAcceptsLeakKinds, "--kinds=LIST",
     "leak kinds listed: definite,indirect,possible,reachable (all, none)"},
    {"--error-exitcode", 0, "an exit status", kAcceptsLeakKinds, "--error-exitcode=N",
     "exit N when lost blocks remain"},
};

bool accepts(const ReportSpec& r, const OptionSpec& o) {
  if (o.accepted_by == 0) return true;
  if (o.accepted_by == kBySortKeys) return !r.sort_keys.empty();
  if (o.accepted_by == kByMetricKeys) return !r.metric_keys.empty();
  return (r.accepts & o.accepted_by) != 0;
}

std::string key_list(std::span<const std::string_view> keys) {
  std::string list;
  for (std::string_view k : keys) list += (list.empty() ? "" : ", ") + std::string(k);
  return list;
}

// "  -o, --output=FILE     help text", the help starting in column 24 and wrapped
// at 80 columns.
void append_option_line(std::string& text, const OptionSpec& o, const std::string& help) {
  constexpr size_t kColumn = 24, kWidth = 80;
  std::string line = o.short_name == 0 ? "      " : "  ";
  line += o.usage;
  if (line.size() + 1 > kColumn) {
    text += line + '\n';
    line.clear();
  }
  line.resize(kColumn, ' ');
  size_t start = 0;
  bool first = true;
  while (start < help.size()) {
    size_t end = help.find(' ', start);
    if (end == std::string::npos) end = help.size();
    std::string word = help.substr(start, end - start);
    if (!first && line.size() + 1 + word.size() > kWidth) {
      text += line + '\n';
      line.assign(kColumn, ' ');
      first = true;
    }
    if (!first) line += ' ';
    line += word;
    first = false;
    start = end + 1;
  }
  text += line + '\n';
}


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
  text += "\nOptions (the reports that take them in brackets):\n";
  for (const OptionSpec& o : kOptions) {
    std::string help(o.help);
    if (o.accepted_by != 0) {
      std::string which;
      for (const ReportSpec& r : all_reports())
        if (accepts(r, o)) which += (which.empty() ? "" : ", ") + std::string(r.name);
      help += " [" + which + "]";
    }
    append_option_line(text, o, help);
  }
  text +=
      "\n"
      "Exit status: 0 on success (also when a trace was cut short: a warning says so),\n"
      "1 when a file cannot be read or is not a trace, 2 for usage errors.\n";
  return text;
}

std::string report_usage_text(const ReportSpec& r) {
  std::string text = "Usage: functracer-postproc " + std::string(r.name) + " [OPTIONS] TRACE" +
                     (r.inputs == 2 ? " TRACE" : "...") + "\n" + std::string(r.summary) + ".\n\nOptions:\n";
  for (const OptionSpec& o : kOptions) {
    if (!accepts(r, o) || o.long_name == "--version") continue;
    std::string help(o.help);
    if (o.long_name == "--sort") help += ": " + key_list(r.sort_keys) + " (default " + std::string(r.sort_keys[0]) + ")";
    if (o.long_name == "--metric") help += ": " + key_list(r.metric_keys);
    if (o.long_name == "--help") help = "show this help";
    append_option_line(text, o, help);
  }
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
      if (have_report) cl.report = find_report(report_name);
      return cl;
    } else if (n == "--version") {
      cl.version = true;
      return cl;
    } else if (n == "--time-filter") {
      auto w = parse_when(value);
      if (!w || w->kind != When::Kind::kTime || w->value == 0)
        return Error::msg("option '--time-filter' needs a duration (250us, 1.5ms, 2s), not '" + value + "'");
      o.time_filter_ns = static_cast<uint64_t>(w->value);
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
    if (accepts(*cl.report, *spec)) continue;
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
