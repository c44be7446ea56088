// DwarfParams: parameter types of functions from DWARF (libdw), so calltrace can show
// `char *` arguments as strings. Opened once per module (the file itself, or its
// separate debug file found by build-id under /usr/lib/debug/.build-id or by
// .gnu_debuglink), queried by link-time address. FUNCTRACER_DEBUG_DIR names another
// directory to search instead of /usr/lib/debug (a sysroot's, or an empty one to see
// what a machine without debug packages shows).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ft {

struct ParamInfo {
  enum class Kind { Integer, Pointer, String, Float, Other };
  std::string name;
  Kind kind = Kind::Integer;  // String: pointer to (const/volatile) char, signed or unsigned
  int size = -1;              // bytes, -1 when DWARF does not say
  bool is_signed = false;     // Integer: a signed type (or an enum)
  std::string format;         // Integer: the symbolic constants it holds
                              // (functracer/symbolic_values.h), "" for a plain number
  // A structure the parameter is or points to, one level deep, in the grammar of
  // ft_function.param_members (functracer/plugin.h): "*{x:i4@0;name:s@8}" for a
  // pointer (or reference), "^{...}" for a class passed by invisible reference,
  // "{...}" for a structure in registers, "*S" / "^S" for a std::string. "" else.
  std::string members;
  bool int_aggregate = false;  // Other: a structure of at most 16 bytes without
                               // floating-point members (one or two integer registers)
};

struct Signature {
  std::vector<ParamInfo> params;
  bool returns_void = true;
  ParamInfo ret;  // when !returns_void (a Go function's first result)
  // A Go function (its compile unit's language): Go's internal ABI, not the C one,
  // puts the parameters in registers (register_signature.h).
  bool go_abi = false;
};

class DwarfParams {
 public:
  // nullptr when the module has no usable DWARF (not an error: stripped files are normal).
  static std::unique_ptr<DwarfParams> open(const std::string& path, const std::string& build_id,
                                           const std::string& debuglink);
  ~DwarfParams();
  // Parameters of the function whose entry (DW_AT_low_pc / entry_pc) is link_addr;
  // nullopt if DWARF does not describe it.
  std::optional<std::vector<ParamInfo>> params(uint64_t link_addr);
  // The parameters and the return type.
  std::optional<Signature> signature(uint64_t link_addr);

 private:
  struct Impl;
  explicit DwarfParams(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ft
