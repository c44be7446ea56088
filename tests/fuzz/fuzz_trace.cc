// Fuzz target: the trace format and every post-processor report on arbitrary input.
//  - each line that parses formats back to exactly itself (one way to write a record);
//  - the input as a trace file goes through every report of functracer-postproc (text
//    and JSON where the report has it): problems inside a trace are warnings, a file
//    that is not a trace is an error, nothing may crash or hang.
// Module files named by the trace are looked up under an empty sysroot, so no file of
// this machine is read as if it were the traced program.
#include <cstdint>
#include <string>
#include <string_view>

#include "common/trace_record.h"
#include "postproc/report.h"
#include "postproc/trace_reader.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

class NoDiagnostics : public ft::post::Diagnostics {
 public:
  void warning(std::string_view) override {}
};

void check_lines(std::string_view text) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    auto r = ft::parse_record(line);
    if (r) ft::fuzz::require(ft::format_record(*r) == line, "parse then format gives the line");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check_lines(std::string_view(reinterpret_cast<const char*>(data), size));

  ft::fuzz::InputFile input(data, size);
  NoDiagnostics diag;
  for (const ft::post::ReportSpec& spec : ft::post::all_reports()) {
    for (bool json : {false, true}) {
      if (json && (spec.accepts & ft::post::kAcceptsJson) == 0) continue;
      ft::post::ReportOptions options;
      options.json = json;
      options.resolve.sysroot = "/nonexistent-sysroot";
      size_t inputs = spec.inputs == 0 ? 1 : spec.inputs;
      for (size_t i = 0; i < inputs; ++i) {
        options.traces.push_back(input.path());
        options.inputs.push_back({input.path()});
      }
      ft::post::Output out;
      (void)spec.run(options, out, diag);
    }
  }
  return 0;
}
