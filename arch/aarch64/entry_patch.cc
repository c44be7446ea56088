// AArch64 entry patch analysis (arch/entry_patch.h): not written yet. A `b` reaches
// +-128 MiB, so the out-of-line area must be that close; the analysis would otherwise
// follow the x86-64 one (whole 4-byte instructions, BTI's `bti c` kept at the entry
// like endbr64, branches into the window, literal loads and adr/adrp re-encoded).
#include "arch/entry_patch.h"

namespace ft::arch {

EntryPatch plan_entry_patch_aarch64(const EntryPatchRequest& /*request*/) {
  return refuse_entry_patch("not supported on AArch64 yet");
}

}  // namespace ft::arch
