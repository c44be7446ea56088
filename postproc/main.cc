// functracer-postproc: reports from functracer trace files. See doc/functracer-postproc.1.
#include <sys/stat.h>
#include <unistd.h>

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

// Where an -o report goes. A regular file (or a new one) is written under a temporary
// name in the same directory and renamed into place only once the report succeeded,
// so a report that fails leaves the previous file as it was and no partial one;
// anything else (a FIFO, /dev/stdout) is written directly.
class OutputFile {
 public:
  ft::Status open(const std::string& path) {
    path_ = path;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      file_ = std::fopen(path.c_str(), "w");
      if (!file_) return ft::Error::from_errno(errno, path);
      return {};
    }
    temp_ = path + ".XXXXXX";
    int fd = ::mkstemp(temp_.data());
    if (fd < 0) return ft::Error::from_errno(errno, path);
    mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);  // as fopen would have created it
    file_ = ::fdopen(fd, "w");
    if (!file_) {
      int e = errno;
      ::close(fd);
      ::unlink(temp_.c_str());
      return ft::Error::from_errno(e, path);
    }
    return {};
  }

  std::FILE* file() const { return file_; }

  // Closes the file; `keep`: the report succeeded and the file takes its place.
  ft::Status close(bool keep) {
    int closed = std::fclose(file_);
    int e = errno;
    file_ = nullptr;
    if (temp_.empty()) {
      if (closed != 0) return ft::Error::from_errno(e, "closing " + path_);
      return {};
    }
    if (keep && closed == 0 && ::rename(temp_.c_str(), path_.c_str()) == 0) return {};
    if (keep) e = closed != 0 ? e : errno;
    ::unlink(temp_.c_str());
    if (keep) return ft::Error::from_errno(e, "writing " + path_);
    return {};
  }

 private:
  std::string path_;
  std::string temp_;
  std::FILE* file_ = nullptr;
};

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
    std::fputs((cl->report ? report_usage_text(*cl->report) : usage_text()).c_str(), stdout);
    return 0;
  }
  if (cl->version) {
    std::printf("functracer-postproc %s\n", FT_VERSION);
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
      // Opened here once; the report's passes read this same input.
      if (ft::Status st = TraceInputs::instance().add(path); !st) return fail(st.error().message);
      if (ft::Status st = check_trace_file(path); !st) return fail(st.error().message);
    }
    options.traces.insert(options.traces.end(), files->begin(), files->end());
    options.inputs.push_back(std::move(*files));
  }

  if (cl->output.empty() && !cl->report->default_output.empty()) {
    cl->output = cl->report->default_output;
  }
  std::FILE* file = stdout;
  OutputFile output_file;
  if (!cl->output.empty()) {
    if (ft::Status st = output_file.open(cl->output); !st) return fail(st.error().message);
    file = output_file.file();
  }
  int status = 0;
  int asked = 0;  // the report's own exit status (leaks --error-exitcode)
  {
    Output out(file);
    StderrDiagnostics diag;
    ft::Status st = cl->report->run(cl->options, out, diag);
    ft::Status written = out.finish();
    if (st && written) asked = out.exit_status();
    if (!st) {
      status = fail(st.error().message);
    } else if (!written) {
      status = fail(written.error().message +
                    (cl->output.empty() ? std::string() : " to " + cl->output));
    }
  }
  if (file != stdout) {
    ft::Status closed = output_file.close(status == 0);
    if (!closed && status == 0) status = fail(closed.error().message);
  }
  if (status == 0 && !cl->report->default_output.empty()) {
    std::fprintf(stderr, "functracer-postproc: %s profile written to %s\n",
                 std::string(cl->report->name).c_str(), cl->output.c_str());
  }
  return status != 0 ? status : asked;
}
