#include "postproc/cli.h"

#include <charconv>
#include <optional>

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

}  // namespace

std::string usage_text() {
  std::string text =
      "Usage: functracer-postproc REPORT [OPTIONS] TRACE...\n"
      "Turns functracer trace files (one per process) into reports.\n"
      "\n"
      "Reports:\n";
  for (const ReportSpec& r : all_reports()) {
    text += "  ";
    text += r.name;
    text.append(r.name.size() < 8 ? 8 - r.name.size() : 1, ' ');
    text += r.summary;
    text += '\n';
  }
  text +=
      "\n"
      "Options:\n"
      "      --json        JSON output (leaks, calls, dump)\n"
      "      --time        show the duration of each call (tree)\n"
      "      --tid=N       only thread N\n"
      "      --sort=KEY    order of the groups: bytes (default) or blocks (leaks)\n"
      "      --top=N       only the first N groups (leaks)\n"
      "  -o, --output=FILE write the report to FILE instead of standard output\n"
      "  -h, --help        show this help\n"
      "\n"
      "Exit status: 0 on success (also when a trace was cut short: a warning says so),\n"
      "1 when a file cannot be read or is not a trace, 2 for usage errors.\n";
  return text;
}

Result<CommandLine> parse_command_line(const std::vector<std::string>& args) {
  CommandLine cl;
  std::string report_name;
  bool have_report = false;
  bool json = false, time = false, tid = false;
  std::string sort;
  std::optional<int64_t> top;
  bool options_done = false;

  auto positional = [&](const std::string& arg) {
    if (!have_report) {
      report_name = arg;
      have_report = true;
    } else {
      cl.options.traces.push_back(arg);
    }
  };

  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (options_done || arg.size() < 2 || arg[0] != '-') {
      positional(arg);
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
    auto take_value = [&](const char* what) -> Result<std::string> {
      if (has_value) return value;
      if (i + 1 >= args.size()) return Error::msg("option '" + name + "' needs " + what);
      return args[++i];
    };
    auto no_value = [&]() -> Status {
      if (has_value) return Error::msg("option '" + name + "' takes no value");
      return {};
    };

    if (name == "-h" || name == "--help") {
      if (Status st = no_value(); !st) return st.error();
      cl.help = true;
      return cl;
    } else if (name == "--json") {
      if (Status st = no_value(); !st) return st.error();
      json = true;
    } else if (name == "--time") {
      if (Status st = no_value(); !st) return st.error();
      time = true;
    } else if (name == "-o" || name == "--output") {
      auto v = take_value("a file name");
      if (!v) return v.error();
      if (v->empty()) return Error::msg("option '" + name + "' needs a file name");
      cl.output = *v;
    } else if (name == "--tid") {
      auto v = take_value("a thread id");
      if (!v) return v.error();
      int64_t n = 0;
      auto res = std::from_chars(v->data(), v->data() + v->size(), n);
      if (res.ec != std::errc() || res.ptr != v->data() + v->size() || n <= 0) {
        return Error::msg("option '--tid' needs a thread id (a positive number), not '" + *v +
                          "'");
      }
      cl.options.tid = n;
      tid = true;
    } else if (name == "--sort") {
      auto v = take_value("a sort key");
      if (!v) return v.error();
      if (v->empty()) return Error::msg("option '--sort' needs a sort key");
      sort = *v;
    } else if (name == "--top") {
      auto v = take_value("a number");
      if (!v) return v.error();
      int64_t n = 0;
      auto res = std::from_chars(v->data(), v->data() + v->size(), n);
      if (res.ec != std::errc() || res.ptr != v->data() + v->size() || n <= 0) {
        return Error::msg("option '--top' needs a positive number, not '" + *v + "'");
      }
      top = n;
    } else {
      return Error::msg("unknown option '" + name + "'");
    }
  }

  if (!have_report) return Error::msg("no report given (one of: " + report_names() + ")");
  cl.report = find_report(report_name);
  if (!cl.report) {
    return Error::msg("unknown report '" + report_name + "' (one of: " + report_names() + ")");
  }
  std::string which = "the " + std::string(cl.report->name) + " report";
  if (json && !cl.report->json) return Error::msg(which + " has no --json output");
  if (time && !cl.report->time) return Error::msg(which + " does not take --time");
  if (tid && !cl.report->tid) return Error::msg(which + " does not take --tid");
  if (top && !cl.report->top) return Error::msg(which + " does not take --top");
  if (!sort.empty()) {
    if (cl.report->sort_keys.empty()) return Error::msg(which + " does not take --sort");
    std::string keys;
    bool known = false;
    for (std::string_view k : cl.report->sort_keys) {
      known = known || k == sort;
      keys += (keys.empty() ? "" : ", ") + std::string(k);
    }
    if (!known) return Error::msg(which + " sorts by " + keys + ", not '" + sort + "'");
  }
  if (cl.options.traces.empty()) return Error::msg("no trace files given");
  cl.options.json = json;
  cl.options.time = time;
  cl.options.sort = sort;
  cl.options.top = top;
  return cl;
}

}  // namespace ft::post
