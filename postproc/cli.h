// The functracer-postproc command line: functracer-postproc REPORT [OPTIONS] TRACE...
// (doc/functracer-postproc.1). Options may come before or after the traces; "--" ends
// the options.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "postproc/report.h"

namespace ft::post {

struct CommandLine {
  bool help = false;     // --help; with a report before it, that report's help
  bool version = false;  // --version
  const ReportSpec* report = nullptr;
  ReportOptions options;
  std::string output;  // -o FILE; empty: stdout
};

// A usage error is an Error whose message is one line saying what is wrong.
Result<CommandLine> parse_command_line(const std::vector<std::string>& args);

std::string usage_text();
// The help of one report: only the options it accepts, with its --sort and --metric keys.
std::string report_usage_text(const ReportSpec& report);

}  // namespace ft::post
