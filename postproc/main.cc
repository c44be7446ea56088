// functracer-postproc: reports from functracer trace files. See doc/functracer-postproc.1.
#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "postproc/cli.h"
#include "postproc/report.h"
#include "postproc/trace_reader.h"

namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

int fail(const std::string& message) {
  std::fprintf(stderr, "functracer-postproc: %s\n", message.c_str());
  return kExitError;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ft::post;
  std::vector<std::string> args(argv + 1, argv + argc);
  auto cl = parse_command_line(args);
  if (!cl) {
    std::fprintf(stderr, "functracer-postproc: %s (try --help)\n", cl.error().message.c_str());
    return kExitUsage;
  }
  if (cl->help) {
    std::fputs(usage_text().c_str(), stdout);
    return 0;
  }

  // Every input is checked before any output is written.
  ReportOptions& options = cl->options;
  std::vector<std::string> arguments = std::move(options.traces);
  options.traces.clear();
  for (const std::string& argument : arguments) {
    auto files = trace_files(argument);
    if (!files) return fail(files.error().message);
    for (const std::string& path : *files) {
      if (ft::Status st = check_trace_file(path); !st) return fail(st.error().message);
    }
    options.traces.insert(options.traces.end(), files->begin(), files->end());
    options.inputs.push_back(std::move(*files));
  }

  if (cl->output.empty() && !cl->report->default_output.empty()) {
    cl->output = cl->report->default_output;
  }
  std::FILE* file = stdout;
  if (!cl->output.empty()) {
    file = std::fopen(cl->output.c_str(), "w");
    if (!file) return fail(ft::Error::from_errno(errno, cl->output).message);
  }
  int status = 0;
  {
    Output out(file);
    StderrDiagnostics diag;
    ft::Status st = cl->report->run(cl->options, out, diag);
    ft::Status written = out.finish();
    if (!st) {
      status = fail(st.error().message);
    } else if (!written) {
      status = fail(written.error().message +
                    (cl->output.empty() ? std::string() : " to " + cl->output));
    }
  }
  if (file != stdout && std::fclose(file) != 0 && status == 0) {
    status = fail(ft::Error::from_errno(errno, "closing " + cl->output).message);
  }
  if (status == 0 && !cl->report->default_output.empty()) {
    std::fprintf(stderr, "functracer-postproc: %s profile written to %s\n",
                 std::string(cl->report->name).c_str(), cl->output.c_str());
  }
  return status;
}
