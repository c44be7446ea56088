// SymbolPolicy: what the engine does with a function symbol because of what the
// function is, whatever the plugins want: code that is not entered by a call (no
// return address to hook), fragments that are not functions, and the functions the
// engine itself must watch (the dynamic linker's hook, the unwinder, functions that
// return twice).
#pragma once

#include <string>

namespace ft {

// What the engine itself needs from a breakpoint besides reporting it.
enum InternalHook : unsigned {
  kHookNone = 0,
  kHookLinker = 1u << 0,        // _dl_debug_state: the module list changed
  kHookUnwindStart = 1u << 1,   // an unwinder starts reading return addresses
  kHookCatch = 1u << 2,         // __cxa_begin_catch: unwinding finished
  kHookKeepReturnAddress = 1u << 3,  // setjmp, dlsym & co: never hijack the return address
  kHookReturnSite = 1u << 4,    // the return address of such a call
  kHookBacktrace = 1u << 5,     // _Unwind_Backtrace: rearm when it returns
  kHookModuleInit = 1u << 6,    // a module's .init: everything loaded so far is relocated
  kHookImageEnd = 1u << 7,      // _exit, execve & co: a stop before the process's memory
                                // goes, to read the returns it handled (fast_return.h)
  kHookLandingPad = 1u << 8,    // _Unwind_SetIP: the unwinder's next stop is a landing pad
  kHookFunctionExit = 1u << 9,  // a return or tail jump of a function whose returns are
                                // caught there (--returns=ret-sites)
};

unsigned hooks_for(const std::string& name);
// GCC's cold part of a split function ("foo.cold", "foo.cold.N").
bool is_fragment(const std::string& name);
// Code entered without a call: [sp] holds no return address.
bool not_a_called_function(const std::string& name);

}  // namespace ft
