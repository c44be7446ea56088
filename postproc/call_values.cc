#include "postproc/call_values.h"

#include <algorithm>
#include <iterator>
#include <optional>

#include <fmt/format.h>

#include "common/trace_record.h"
#include "postproc/value_types.h"

namespace ft::post {

std::vector<CallArg> call_args(const Activation& a) {
  std::vector<CallArg> out;
  std::optional<ValueTypes> types;
  if (a.types) types = parse_value_types(*a.types);
  if (types) {
    size_t next_int = 0, next_fp = 0;
    for (const ValueType& vt : types->args) {
      CallArg arg;
      arg.type = type_code(vt);
      if (vt.kind == 'f') {
        size_t reg = next_fp++;
        arg.value = reg < a.fargs.size() ? format_value(vt, a.fargs[reg]) : "?";
        out.push_back(std::move(arg));
        continue;
      }
      size_t reg = next_int;
      next_int += int_registers(vt);
      if (reg < a.structs.size() && a.structs[reg])
        arg.value = *a.structs[reg];
      else if (reg < a.strings.size() && a.strings[reg])
        append_quoted(arg.value, *a.strings[reg]);
      else if (reg < a.args.size())
        arg.value = format_value(vt, a.args[reg]);
      else
        arg.value = "?";
      out.push_back(std::move(arg));
    }
    return out;
  }
  size_t count = a.args.size();
  if (a.nargs) count = static_cast<size_t>(std::clamp<int64_t>(*a.nargs, 0, kArgRegisters));
  for (size_t i = 0; i < count; ++i) {
    CallArg arg;
    if (i < a.strings.size() && a.strings[i]) {
      append_quoted(arg.value, *a.strings[i]);
    } else if (i < a.args.size()) {
      arg.value = fmt::format("{:#x}", a.args[i]);
    } else {
      arg.value = "?";
    }
    out.push_back(std::move(arg));
  }
  return out;
}

void append_call_args(std::string& out, const Activation& a) {
  bool first = true;
  for (const CallArg& arg : call_args(a)) {
    if (!first) out += ", ";
    first = false;
    out += arg.value;
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
