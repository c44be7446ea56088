// StructText: a structure argument shown with its members, one level deep
// (--struct-depth=1): `&{x=-4, label="origin"}` for a pointer, C++ reference or
// `this`, `{id=42, name="answer"}` for a structure passed in registers, `"text"` (or
// `&"text"` through a pointer) for a std::string. The layout comes from the host
// (ft_function.param_members, from DWARF); the values are read from the traced
// process at the call. Memory that cannot be read gives nothing, so the caller shows
// the register as a plain pointer: a bad pointer never stops the trace.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "functracer/plugin.h"

namespace calltrace {

// The text of the structure described by `desc` (the param_members grammar of
// functracer/plugin.h), whose address or bytes are in `regs` (the integer argument
// registers from the parameter's own on). Strings are cut at `string_size` bytes and
// marked with "...".
std::optional<std::string> struct_text(const ft_host_api* host, ft_ctx* ctx, std::string_view desc,
                                       std::span<const uint64_t> regs, size_t string_size);

}  // namespace calltrace
