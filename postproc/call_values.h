// How the argument and return values of a traced call are shown, the same way in every
// report that shows them (tree, chrome): with the call record's "types" field
// (value_types.h) each parameter is shown as the program sees it, taking the next
// register(s) of its class, a structure as its struct0..struct5 text; without it, the first `nargs` argument registers (all six
// recorded when the record does not say how many parameters there are) in hex. An
// argument with a string value (strI field) is a quoted, escaped string either way.
#pragma once

#include <string>
#include <vector>

#include "postproc/call_model.h"

namespace ft::post {

// One argument as shown: its text and, when the record says, its type code
// (value_types.h: "i4", "s", "o16", ...).
struct CallArg {
  std::string value;
  std::string type;  // "" when the record has no "types"
};

// The arguments in declaration order (the registers, without "types").
std::vector<CallArg> call_args(const Activation& a);

// Appends the arguments, comma-separated: `0x1, "hello", 2.5`.
void append_call_args(std::string& out, const Activation& a);

// Appends the return value (`0x6`, `-1`, `2.5`; `?` for a floating-point value that
// was not recorded) and returns true; returns false, appending nothing, when there is
// none: the activation did not return, or the function returns void.
bool append_return_value(std::string& out, const Activation& a, const ActivationEnd& end);

}  // namespace ft::post
