#include "postproc/call_values.h"

#include <algorithm>
#include <iterator>
#include <optional>

#include <fmt/format.h>

#include "common/trace_record.h"
#include "postproc/value_types.h"

namespace ft::post {

void append_call_args(std::string& out, const Activation& a) {
  std::optional<ValueTypes> types;
  if (a.types) types = parse_value_types(*a.types);
  if (types) {
    size_t next_int = 0, next_fp = 0;
    for (size_t i = 0; i < types->args.size(); ++i) {
      if (i) out += ", ";
      const ValueType& vt = types->args[i];
      if (vt.kind == 'f') {
        size_t reg = next_fp++;
        out += reg < a.fargs.size() ? format_value(vt, a.fargs[reg]) : "?";
        continue;
      }
      size_t reg = next_int++;
      if (reg < a.strings.size() && a.strings[reg])
        append_quoted(out, *a.strings[reg]);
      else if (reg < a.args.size())
        out += format_value(vt, a.args[reg]);
      else
        out += '?';
    }
    return;
  }
  size_t count = a.args.size();
  if (a.nargs) count = static_cast<size_t>(std::clamp<int64_t>(*a.nargs, 0, kArgRegisters));
  for (size_t i = 0; i < count; ++i) {
    if (i) out += ", ";
    if (i < a.strings.size() && a.strings[i]) {
      append_quoted(out, *a.strings[i]);
    } else if (i < a.args.size()) {
      fmt::format_to(std::back_inserter(out), "{:#x}", a.args[i]);
    } else {
      out += '?';
    }
  }
}

bool append_return_value(std::string& out, const Activation& a, const ActivationEnd& end) {
  if (end.kind != EndKind::kReturn) return false;
  if (end.retstr) {  // a char * return, read at the return
    append_quoted(out, *end.retstr);
    return true;
  }
  std::optional<ValueTypes> types;
  if (a.types) types = parse_value_types(*a.types);
  if (!types) {
    fmt::format_to(std::back_inserter(out), "{:#x}", end.retval);
  } else if (types->ret.kind == 'f') {
    out += end.fretval ? format_value(types->ret, *end.fretval) : "?";
  } else if (types->ret.kind != 'v') {
    out += format_value(types->ret, end.retval);
  } else {
    return false;
  }
  return true;
}

}  // namespace ft::post
