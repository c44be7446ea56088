#include "core/symbol_policy.h"

namespace ft {

unsigned hooks_for(const std::string& name) {
  if (name == "_dl_debug_state") return kHookLinker;
  // The unwinder's entry points also start unwinding from their own return address
  // (uw_init_context reads it), so it must stay the real one.
  if (name == "_Unwind_RaiseException" || name == "_Unwind_Resume" || name == "_Unwind_Resume_or_Rethrow" ||
      name == "_Unwind_ForcedUnwind")
    return kHookUnwindStart | kHookKeepReturnAddress;
  if (name == "_Unwind_Backtrace") return kHookUnwindStart | kHookBacktrace | kHookKeepReturnAddress;
  if (name == "__cxa_begin_catch") return kHookCatch;
  // Every personality routine (C++, Rust, C's cleanups, whichever unwinder library)
  // names the landing pad it wants run with _Unwind_SetIP; the frame owning the pad
  // goes on there, the frames below it are unwound.
  if (name == "_Unwind_SetIP") return kHookLandingPad;
  if (name == "_exit" || name == "_Exit" || name == "execve" || name == "execveat" || name == "fexecve")
    return kHookImageEnd;
  // Functions whose return address must stay what the caller pushed. Those that
  // return twice: setjmp stores it in the jmp_buf, a vfork child returns through the
  // parent's stack, getcontext saves it. Those that look at it: the dl* functions
  // find the calling object from it (RTLD_NEXT, the namespace of dlopen's caller).
  // libgcc's uw_init_context_1 starts the unwind from its own return address (it is
  // visible in static binaries, which keep their symbol tables).
  static const char* const kKeep[] = {"setjmp",   "_setjmp", "__setjmp", "sigsetjmp", "__sigsetjmp",
                                      "savectx",  "getcontext", "vfork", "__vfork",  "dlopen",
                                      "dlmopen",  "dlsym",   "dlvsym",  "uw_init_context_1"};
  for (const char* n : kKeep)
    if (name == n) return kHookKeepReturnAddress;
  return kHookNone;
}

// GCC's hot/cold splitting emits "foo.cold" (and "foo.cold.N") symbols for the cold
// part of foo: it is jumped into from foo's body, never called, so it has no return
// address to hook and no entry to report.
bool is_fragment(const std::string& name) {
  auto pos = name.find(".cold");
  return pos != std::string::npos && (pos + 5 == name.size() || name[pos + 5] == '.');
}

// Code that is entered without a call, so [sp] holds no return address to hook:
// process entry points (argc is at [sp]), the lazy-binding resolvers (entered by a jmp
// from PLT0 with the link map and relocation index on the stack), the signal-return
// and makecontext trampolines (entered by ret).
bool not_a_called_function(const std::string& name) {
  static const char* const kExact[] = {"_start", "_dl_start_user", "__restore_rt", "__start_context",
                                       "_dl_runtime_resolve", "_dl_runtime_profile"};
  for (const char* n : kExact)
    if (name == n) return true;
  return name.starts_with("_dl_runtime_resolve_") || name.starts_with("_dl_runtime_profile_");
}

}  // namespace ft
