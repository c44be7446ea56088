// Fuzz target: ELF files as the tracer reads them (ElfImage, libelf) and as the
// post-processor resolves addresses in them (Symbolizer, libdw). A corrupt or
// truncated file is an error naming it or a module whose frames stay unresolved;
// nothing may crash, and what ElfImage promises about a file it accepted holds.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/elf_image.h"
#include "common/trace_record.h"
#include "postproc/symbolizer.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

class NoDiagnostics : public ft::post::Diagnostics {
 public:
  void warning(std::string_view) override {}
};

void check_image(const ft::ElfImage& image) {
  const auto& functions = image.functions();
  for (size_t i = 0; i < functions.size(); ++i) {
    ft::fuzz::require(functions[i].value != 0, "functions have an address");
    ft::fuzz::require(i == 0 || functions[i - 1].value <= functions[i].value,
                      "functions are sorted by address");
    const ft::ElfSymbol* at = image.function_at(functions[i].value);
    ft::fuzz::require(at != nullptr, "a function is found at its own address");
    ft::fuzz::require(image.find(functions[i].name) != nullptr, "a function is found by name");
  }
  for (const ft::ElfSegment& s : image.segments()) {
    auto bytes = image.read_only_bytes(s.vaddr, 16);
    ft::fuzz::require(bytes.empty() || bytes.size() == 16, "read_only_bytes gives all or none");
  }
  (void)image.read_only_bytes(image.entry(), 4096);
  (void)image.read_only_bytes(UINT64_MAX - 8, 64);
  (void)ft::load_bias(image.is_dyn(), image.segments(), 0x7f0000000000, 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ft::fuzz::InputFile input(data, size);
  auto image = ft::ElfImage::open(input.path());
  if (image) {
    ft::fuzz::require(!(*image)->path().empty(), "an image knows its path");
    check_image(**image);
  } else {
    ft::fuzz::require(!image.error().message.empty(), "an error says what is wrong");
  }

  // The same bytes as a module of a traced process, mapped at 0x400000.
  NoDiagnostics diag;
  ft::post::Symbolizer symbolizer(diag);
  symbolizer.begin_process();
  ft::TraceRecord module;
  module.type = "module";
  module.add("base", ft::Hex{0x400000}).add("end", ft::Hex{0x400000 + 0x100000});
  module.add("offset", ft::Hex{0}).add("path", input.path()).add("build_id", std::string());
  symbolizer.observe(module);
  for (uint64_t a = 0x400000; a < 0x400000 + 0x100000; a += 0x3ff1) {
    const auto& r = symbolizer.resolve(symbolizer.locate(a), (a & 1) != 0);
    ft::fuzz::require(!r.frames.empty(), "a resolved address has at least one frame");
  }
  return 0;
}
