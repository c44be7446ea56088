// Fuzz target: the entry patch analysis (arch/entry_patch.h) on arbitrary function
// bodies at arbitrary addresses, with an other part and a known branch target. Whatever
// the bytes, it refuses with a reason or gives a patch that keeps its promises.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>

#include "arch/entry_patch.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

using ft::fuzz::require;

int32_t rel32_at(const uint8_t* p) {
  int32_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void check(const ft::arch::EntryPatchRequest& req, const ft::arch::EntryPatch& p, uint64_t target,
           bool x86) {
  if (!p.ok) {
    require(!p.reason.empty(), "a refusal says why");
    require(p.patch.empty() && p.relocated.empty() && p.original.empty(), "a refusal has no patch");
    return;
  }
  const size_t size = req.function.size();
  require(p.window_length <= size, "the window lies in the function");
  require(p.patch_offset + (x86 ? 5u : 4u) <= p.window_length, "the window holds the jump");
  require(p.original.size() == p.window_length - p.patch_offset, "original: the patched bytes");
  require(std::equal(p.original.begin(), p.original.end(), req.function.begin() + p.patch_offset),
          "original: the function's own bytes");
  require(p.patch.size() == p.original.size(), "the patch replaces exactly the original bytes");
  require(!x86 || (p.patch[0] == 0xe9 &&
                   req.entry + p.patch_offset + 5 + static_cast<uint64_t>(static_cast<int64_t>(
                                                         rel32_at(&p.patch[1]))) == req.trampoline),
          "the patch jumps to the trampoline");
  require(!p.relocated.empty(), "the copy is not empty");
  require(!p.moved_pcs.empty() && p.moved_pcs.front().from == p.patch_offset &&
              p.moved_pcs.front().to == 0,
          "the copy starts with the first patched instruction");
  for (size_t i = 0; i < p.moved_pcs.size(); ++i) {
    require(p.moved_pcs[i].from < p.window_length && p.moved_pcs[i].to < p.relocated.size(),
            "moved pcs lie in the window and the copy");
    require(i == 0 || (p.moved_pcs[i].from > p.moved_pcs[i - 1].from &&
                       p.moved_pcs[i].to > p.moved_pcs[i - 1].to),
            "moved pcs are in order");
  }
  require(!(target > req.entry && target < req.entry + p.window_length),
          "no known branch target inside the window");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // 16 bytes choose the entry and the copy's address (as for fuzz_relocator), one byte
  // the length of the other part (taken from the end), one the known branch target's
  // offset; the rest is code.
  if (size < 18) return 0;
  uint64_t entry = 0, copy_delta = 0;
  std::memcpy(&entry, data, 8);
  std::memcpy(&copy_delta, data + 8, 8);
  const uint64_t copy = (copy_delta & 1) ? entry + (static_cast<int64_t>(copy_delta) >> 33) : copy_delta;
  std::span<const uint8_t> code(data + 18, size - 18);
  const size_t other_size = std::min<size_t>(data[16], code.size() / 2);
  const ft::arch::CodeRange other{code.last(other_size), entry + 0x10000};
  code = code.first(code.size() - other_size);
  const uint64_t target = entry + data[17];

  ft::arch::EntryPatchRequest req;
  req.function = code;
  req.entry = entry;
  req.trampoline = copy - 64;
  req.copy = copy;
  req.branch_targets = {&target, 1};
  if (other_size > 0) req.other_parts = {&other, 1};
  check(req, ft::arch::plan_entry_patch_x86_64(req), target, true);
  check(req, ft::arch::plan_entry_patch_aarch64(req), target, false);
  return 0;
}
