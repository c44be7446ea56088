// calltrace: records calls and returns of the functions selected with -a (every
// function of the main executable when no -a is given), with the six integer argument
// registers, string arguments where the function's types (DWARF, a -F prototype, the
// built-in libc prototypes, a C++ name) say a parameter is a char *, integers that
// hold symbolic constants by their names, string return values, call depth and call
// site (the return address), and with --struct-depth=1 the members of structure
// arguments (struct_text.h). With -o the records go to the trace file; without, an
// ltrace-like call log is printed on stderr, laid out as functracer-postproc tree lays out calls
// (functracer/call_tree.h). The call log's options (-c, -T, -t, -s, -C, -l, -x, -D,
// --time-filter, --from-program, --struct-depth) arrive as host options (doc/plugin-api.md).
#include <fnmatch.h>
#include <time.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "alias_names.h"
#include "call_summary.h"
#include "functracer/call_tree.h"
#include "functracer/plugin.h"
#include "functracer/schema.h"
#include "functracer/sdk.h"
#include "functracer/short_name.h"
#include "functracer/symbolic_values.h"
#include "program_ranges.h"
#include "struct_text.h"

namespace {

namespace schema = ft::schema;
using ft::sdk::hex;
using ft::sdk::quote;

const ft_host_api* host = nullptr;

struct Pattern {
  std::string glob;
  std::string lib;  // PATTERN@LIB: only modules whose path contains LIB
  bool matched = false;
  bool main_only = false;  // -x: only the executable's own functions
  bool library = false;    // -l: every function of a library but its start-up code
};

// A traced call of a thread not returned yet, by depth.
struct OpenCall {
  uint64_t start_ns = 0;
  bool shown = false;  // recorded and logged (not left out by -D or --from-program)
  bool open = false;   // its call was seen
};

// One thread's call log.
struct ThreadLog {
  std::vector<OpenCall> calls;  // index: host depth
  std::unique_ptr<ft::CallTreeLayout> layout;
};

struct State {
  std::vector<Pattern> patterns;
  bool streaming = false;
  bool host_formats = false;  // the host fills ft_function.param_labels/param_formats
  bool host_members = false;  // ... and ft_function.param_members
  bool host_ret_members = false;  // ... and ft_function.ret_members
  std::unordered_map<int, ThreadLog> threads;  // per tid
  ft_ctx* ctx = nullptr;                       // the event being handled, for the layout's lines
  // The call log's options.
  ft::CallTreeStyle style;
  size_t string_size = 256;    // -s
  bool demangle = true;        // --no-demangle: false
  int timestamps = 0;          // -t, -tt, -ttt
  int64_t realtime_offset_ns = 0;  // CLOCK_REALTIME - CLOCK_MONOTONIC, for -t
  unsigned depth_limit = 0;    // -D; 0: none
  bool from_program = false;   // --from-program
  bool summary = false;        // -c
  unsigned struct_depth = 0;   // --struct-depth: 0 or 1
  bool called = false;         // a traced function was called
  calltrace::CallSummary calls;
  calltrace::ProgramRanges program;
  calltrace::AliasNames aliases;
};

State state;

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

void add_pattern(const std::string& raw) {
  std::string p = trim(raw);
  if (p.empty() || p[0] == '#') return;
  Pattern pat;
  // A '@' followed by something that is not part of a symbol version ("@plt" is a PLT
  // stub name, "@@" a version) limits the pattern to a library.
  size_t at = p.rfind('@');
  if (at != std::string::npos && at > 0 && p[at - 1] != '@' && p.substr(at) != "@plt") {
    pat.glob = p.substr(0, at);
    pat.lib = p.substr(at + 1);
  } else {
    pat.glob = p;
  }
  state.patterns.push_back(std::move(pat));
}

bool parse_audit(const char* audit) {
  std::string s = audit;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    std::string item = s.substr(start, comma - start);
    if (!item.empty() && item[0] == '@') {
      std::ifstream f(item.substr(1));
      if (!f) {
        std::string msg = "calltrace: cannot read pattern file " + item.substr(1);
        host->warn(msg.c_str());
        return false;
      }
      std::string line;
      while (std::getline(f, line)) add_pattern(line);
    } else {
      add_pattern(item);
    }
    start = comma + 1;
  }
  return true;
}

bool compiler_generated(const char* name) {
  static const char* const kNames[] = {"_start", "_init", "_fini", "frame_dummy", "register_tm_clones",
                                       "deregister_tm_clones", "__do_global_dtors_aux", "__libc_csu_init",
                                       "__libc_csu_fini", "_dl_relocate_static_pie"};
  for (const char* n : kNames)
    if (std::strcmp(n, name) == 0) return true;
  return false;
}

// -l LIB: every function of the libraries whose path contains LIB; -x PATTERNS: the
// executable's own functions matching them.
void add_library_patterns(const std::string& libs) {
  size_t start = 0;
  while (start <= libs.size()) {
    size_t comma = std::min(libs.find(',', start), libs.size());
    if (comma > start) state.patterns.push_back(Pattern{"*", libs.substr(start, comma - start), false, false, true});
    start = comma + 1;
  }
}

void add_exe_patterns(const std::string& globs) {
  size_t first = state.patterns.size();
  parse_audit(globs.c_str());
  for (size_t i = first; i < state.patterns.size(); ++i) state.patterns[i].main_only = true;
}

unsigned on_symbol(void*, const ft_symbol* sym, uint64_t*) {
  const unsigned want = FT_TRACE_ENTRY | FT_TRACE_RETURN | FT_TRACE_RETURN_VALUE | FT_TRACE_PARAMS;
  if (sym->is_plt && sym->is_main_program) {
    std::string_view stub = sym->name;
    if (stub.size() > 4 && stub.substr(stub.size() - 4) == "@plt") state.aliases.imported(std::string(stub.substr(0, stub.size() - 4)));
  }
  if (state.patterns.empty()) {
    if (!sym->is_main_program || sym->is_plt || compiler_generated(sym->name)) return 0;
    state.aliases.offer(sym->module, sym->address, sym->name);
    return want;
  }
  unsigned flags = 0;
  bool cxx = sym->demangled && sym->demangled != sym->name && std::strcmp(sym->demangled, sym->name) != 0;
  std::string base = cxx ? ft::strip_parameters(sym->demangled) : std::string();
  for (auto& p : state.patterns) {
    if (!p.lib.empty() && !std::strstr(sym->module, p.lib.c_str())) continue;
    if (p.main_only && !sym->is_main_program) continue;
    if (p.library && compiler_generated(sym->name)) continue;  // every library has its _init
    // PLT stubs are matched only by patterns that ask for them ("foo@plt", "*@plt"):
    // "foo*" means the functions, not also the stubs that lead to them.
    if (sym->is_plt && p.glob.find("@plt") == std::string::npos) continue;
    if (fnmatch(p.glob.c_str(), sym->name, 0) == 0 ||
        (cxx && (fnmatch(p.glob.c_str(), sym->demangled, 0) == 0 || fnmatch(p.glob.c_str(), base.c_str(), 0) == 0))) {
      p.matched = true;
      flags = want;
    }
  }
  if (flags) state.aliases.offer(sym->module, sym->address, sym->name);
  return flags;
}

// The "types" field of call records (doc/trace-format.md): one code per parameter in
// declaration order, '>' and the return's code.
std::string type_code(int kind, unsigned size) {
  switch (kind) {
    case FT_PARAM_SIGNED: return "i" + std::to_string(size);
    case FT_PARAM_INTEGER: return "u" + std::to_string(size);
    case FT_PARAM_POINTER: return "p";
    case FT_PARAM_STRING: return "s";
    case FT_PARAM_FLOAT: return size == 4 ? "f4" : "f8";
    case FT_PARAM_OTHER: return size > 8 ? "o" + std::to_string(size) : "o";  // o16: two registers
    case FT_PARAM_VOID: return "v";
    default: return "?";
  }
}

unsigned param_size(const ft_function* fn, int i) { return fn->param_sizes ? fn->param_sizes[i] : 8; }

const char* param_format(const ft_function* fn, int i) {
  return state.host_formats && fn->param_formats ? fn->param_formats[i] : "";
}
// The structure parameter i is or points to, when --struct-depth asks for it ("" else).
// A string passed in registers (a Go string: "S" without '*' or '^') is shown always,
// as char * strings are.
const char* param_members(const ft_function* fn, int i) {
  if (!state.host_members || !fn->param_members || !fn->param_members[i]) return "";
  if (!state.struct_depth && std::strcmp(fn->param_members[i], "S") != 0) return "";
  return fn->param_members[i];
}
bool is_this(const ft_function* fn, int i) {
  return state.host_formats && fn->param_labels && std::strcmp(fn->param_labels[i], "this") == 0;
}

std::string types_of(const ft_function* fn) {
  std::string out;
  for (int i = 0; i < fn->nparams; ++i) {
    if (i) out += ',';
    out += type_code(fn->params[i], param_size(fn, i));
    if (const char* set = param_format(fn, i); set[0]) out += std::string("=") + set;
  }
  return out + ">" + type_code(fn->ret_kind, fn->ret_size);
}

// A register value as what DWARF says it holds: integers in decimal (sign-extended or
// truncated to their size), floating-point values as such, everything else in hex.
std::string format_value(int kind, unsigned size, uint64_t v) {
  if (kind == FT_PARAM_FLOAT) {
    char b[40];
    if (size == 4) {
      uint32_t bits = static_cast<uint32_t>(v);
      float f;
      std::memcpy(&f, &bits, sizeof f);
      std::snprintf(b, sizeof b, "%g", static_cast<double>(f));
    } else {
      double d;
      std::memcpy(&d, &v, sizeof d);
      std::snprintf(b, sizeof b, "%g", d);
    }
    return b;
  }
  if (size < 8) v &= (uint64_t{1} << (8 * size)) - 1;
  if (kind == FT_PARAM_SIGNED) {
    if (size < 8 && (v >> (8 * size - 1)) & 1) v |= ~uint64_t{0} << (8 * size);
    return std::to_string(static_cast<int64_t>(v));
  }
  if (kind == FT_PARAM_INTEGER) return std::to_string(v);
  return hex(v);
}

// An integer as the names of the symbolic constants it holds (sign-extended from its size).
std::string format_symbolic(const char* set, unsigned size, uint64_t v) {
  if (size < 8) {
    v &= (uint64_t{1} << (8 * size)) - 1;
    if ((v >> (8 * size - 1)) & 1) v |= ~uint64_t{0} << (8 * size);
  }
  return ft::symbolic::format(set, static_cast<int64_t>(v));
}

// A function returning a Go string (ft_function.ret_members "S").
bool go_string_result(const ft_function* fn) {
  return state.host_ret_members && fn->ret_members && std::strcmp(fn->ret_members, "S") == 0;
}

std::string format_return(const ft_function* fn, uint64_t rv, uint64_t frv, const std::optional<std::string>& str) {
  if (fn->ret_kind == FT_PARAM_VOID) return "";
  if (go_string_result(fn) && str) return " = " + quote(*str);
  if (fn->ret_kind == FT_PARAM_FLOAT) return " = " + format_value(FT_PARAM_FLOAT, fn->ret_size, frv);
  if (fn->ret_kind == FT_PARAM_STRING) {
    if (rv == 0) return " = NULL";
    if (str) return " = " + quote(*str);
  }
  return " = " + format_value(fn->ret_kind, fn->ret_size, rv);
}

ThreadLog& thread_log(ft_ctx* ctx) {
  ThreadLog& t = state.threads[host->tid(ctx)];
  if (!t.layout)
    t.layout = std::make_unique<ft::CallTreeLayout>(state.style, [](std::string_view line) {
      if (state.ctx) host->print(state.ctx, std::string(line).c_str());
    });
  state.ctx = ctx;
  return t;
}

// The -t, -tt, -ttt prefix of a line, from the event's time: "15:04:05 ",
// "15:04:05.123456 ", "1700000000.123456 ".
std::string timestamp(ft_ctx* ctx) {
  if (!state.timestamps) return {};
  int64_t ns = static_cast<int64_t>(host->time_ns(ctx)) + state.realtime_offset_ns;
  time_t secs = static_cast<time_t>(ns / 1000'000'000);
  long usecs = static_cast<long>(ns % 1000'000'000 / 1000);
  char b[64];
  if (state.timestamps >= 3) {
    std::snprintf(b, sizeof b, "%lld.%06ld ", static_cast<long long>(secs), usecs);
  } else {
    struct tm tm {};
    localtime_r(&secs, &tm);
    size_t n = strftime(b, sizeof b, "%H:%M:%S", &tm);
    if (state.timestamps == 2) std::snprintf(b + n, sizeof b - n, ".%06ld", usecs);
    std::strcat(b, " ");
  }
  return b;
}

// The symbol a function's calls are recorded under: of its aliases, the one
// AliasNames prefers.
const char* symbol_name(const ft_function* fn) {
  const std::string* name = state.aliases.name(fn->module ? fn->module : "", fn->address);
  return name ? name->c_str() : fn->name;
}

// The name calls are logged and summed up by.
std::string display_name(const ft_function* fn) {
  bool cxx = fn->demangled && fn->demangled[0] && std::strcmp(fn->demangled, fn->name) != 0;
  if (state.demangle && cxx) return ft::strip_parameters(fn->demangled);
  return symbol_name(fn);
}

// Whether the call being made is shown (recorded and logged): -D and --from-program
// leave some out, and a call left out is also left out at its return.
bool wanted(ft_ctx* ctx, unsigned depth) {
  if (state.depth_limit && depth >= state.depth_limit) return false;
  if (state.from_program) {
    ft_addr caller = 0;
    if (host->backtrace(ctx, &caller, 1) < 1) return false;
    if (!state.program.in_program(host->pid(ctx), caller)) return false;  // a vfork child: its parent's memory
  }
  return true;
}

// The nesting of a shown call among the shown calls of its thread.
size_t shown_level(const ThreadLog& t, unsigned depth) {
  size_t level = 0;
  for (unsigned i = 0; i < depth && i < t.calls.size(); ++i) level += t.calls[i].shown;
  return level;
}

// Floating-point argument registers fn's parameters use.
size_t fp_args_of(const ft_function* fn) {
  size_t n = 0;
  for (int i = 0; i < fn->nparams; ++i)
    if (fn->param_regs && fn->param_regs[i] >= FT_REG_FP0)
      n = std::max<size_t>(n, static_cast<size_t>(fn->param_regs[i] - FT_REG_FP0 + 1));
  return n;
}

// The integer argument register of parameter i, or -1.
int string_reg(const ft_function* fn, int i) {
  int reg = fn->param_regs ? fn->param_regs[i] : i;
  return fn->params[i] == FT_PARAM_STRING && reg >= 0 && reg < 6 ? reg : -1;
}

// What on_call reads: the six integer argument registers, the floating-point ones in
// use, the strings the function's types point at, and the call site.
int on_capture(void*, const ft_function* fn, ft_capture* out) {
  out->int_args = 6;
  out->backtrace = 1;
  out->fp_args = static_cast<unsigned>(std::min<size_t>(fp_args_of(fn), 8));
  for (int i = 0; i < fn->nparams; ++i) {
    if (int reg = string_reg(fn, i); reg >= 0) out->strings |= 1u << reg;
    if (param_members(fn, i)[0]) return 0;  // structures are read from memory at the call
  }
  return 1;
}

// Where the call was made: the return address the function was entered with (the
// first frame of the host's backtrace at a call; the real one when functracer has
// replaced it with its trampoline). Nothing when the stack cannot be read.
std::optional<uint64_t> callsite_of(ft_ctx* ctx) {
  ft_addr ret = 0;
  if (host->backtrace(ctx, &ret, 1) != 1 || ret == 0) return std::nullopt;
  return ret;
}

void on_call(void*, ft_ctx* ctx, const ft_function* fn) {
  ThreadLog& log = thread_log(ctx);
  state.called = true;
  unsigned depth = host->depth(ctx);
  if (log.calls.size() <= depth) log.calls.resize(depth + 1);
  log.calls[depth] = OpenCall{host->time_ns(ctx), wanted(ctx, depth), true};
  if (!log.calls[depth].shown) return;
  if (state.summary) state.calls.add_call(display_name(fn));
  uint64_t args[6];
  for (unsigned i = 0; i < 6; ++i) args[i] = host->arg(ctx, i);
  uint64_t fargs[8] = {};
  size_t nfargs = fp_args_of(fn);  // floating-point argument registers in use
  for (size_t i = 0; i < nfargs && i < 8; ++i) fargs[i] = host->fp_arg(ctx, static_cast<unsigned>(i));

  schema::CallRecord call{{symbol_name(fn), fn->address, host->depth(ctx)}, {args, 6}, {fargs, nfargs}, {}, {}, {}};
  std::string types;
  if (fn->nparams >= 0) {
    call.nargs = fn->nparams;
    types = types_of(fn);
    call.types = types;
  }
  // Strings are keyed by the integer argument register that points to them.
  std::string strs[6];
  bool is_str[6] = {};
  bool cut[6] = {};  // longer than -s: shown with "..." after it
  for (int i = 0; i < fn->nparams; ++i) {
    int reg = string_reg(fn, i);
    if (reg < 0 || args[reg] == 0) continue;
    auto s = ft::sdk::read_string(host, ctx, args[reg], state.string_size + 1);
    if (!s) continue;
    cut[reg] = s->size() > state.string_size;
    if (cut[reg]) s->resize(state.string_size);
    strs[reg] = std::move(*s);
    is_str[reg] = true;
    call.strings[reg] = strs[reg];
  }
  // Structures, keyed by the integer argument register that holds them or their address.
  std::optional<std::string> structs[6];
  for (int i = 0; i < fn->nparams; ++i) {
    const char* members = param_members(fn, i);
    int reg = fn->param_regs ? fn->param_regs[i] : i;
    if (!members[0] || reg < 0 || reg >= 6) continue;
    structs[reg] = calltrace::struct_text(host, ctx, members, std::span<const uint64_t>(args + reg, 6 - reg),
                                          state.string_size);
    if (structs[reg]) call.structs[reg] = *structs[reg];
  }
  call.callsite = callsite_of(ctx);
  ft::sdk::record(host, ctx, call);

  if (!state.streaming || state.summary) return;
  // C++ names are shown without their parameter types; the values follow.
  std::string text = display_name(fn);
  text += "(";
  int shown = fn->nparams < 0 ? 6 : fn->nparams;
  for (int i = 0; i < shown; ++i) {
    if (i) text += ", ";
    if (fn->nparams < 0) {
      text += hex(args[i]);
      continue;
    }
    if (is_this(fn, i)) text += "this=";
    int reg = fn->param_regs ? fn->param_regs[i] : i;
    const char* set = param_format(fn, i);
    if (reg >= 0 && reg < 6 && structs[reg])
      text += *structs[reg];
    else if (reg >= FT_REG_FP0 && reg - FT_REG_FP0 < 8)
      text += format_value(fn->params[i], param_size(fn, i), fargs[reg - FT_REG_FP0]);
    else if (reg >= 0 && reg < 6 && is_str[reg])
      text += quote(strs[reg]) + (cut[reg] ? "..." : "");
    else if (reg >= 0 && reg < 6 && fn->params[i] == FT_PARAM_STRING && args[reg] == 0)
      text += "NULL";
    else if (reg >= 0 && reg < 6 && set[0])
      text += format_symbolic(set, param_size(fn, i), args[reg]);
    else if (reg >= 0 && reg < 6)
      text += format_value(fn->params[i], param_size(fn, i), args[reg]);
    else
      text += "?";
  }
  text += ")";
  log.layout->call(shown_level(log, depth), text, timestamp(ctx));
}

// The call at the event's depth ends: whether it was shown, and how long it lasted.
bool end_call(ft_ctx* ctx, ThreadLog& log, unsigned depth, uint64_t* duration) {
  // A frame whose call this log did not see at that depth (the host knows it): it is
  // recorded all the same, without a duration, rather than lost.
  *duration = 0;
  if (depth >= log.calls.size() || !log.calls[depth].open) return true;
  OpenCall c = log.calls[depth];
  log.calls[depth] = OpenCall{};
  uint64_t now = host->time_ns(ctx);
  *duration = now >= c.start_ns ? now - c.start_ns : 0;
  return c.shown;
}

void on_return(void*, ft_ctx* ctx, const ft_function* fn) {
  ThreadLog& log = thread_log(ctx);
  unsigned depth = host->depth(ctx);
  uint64_t duration = 0;
  if (!end_call(ctx, log, depth, &duration)) return;
  uint64_t rv = host->retval(ctx);
  bool fp = fn->ret_kind == FT_PARAM_FLOAT;
  uint64_t frv = fp ? host->fp_arg(ctx, 0) : 0;
  // A char * return is read now, while the string is there (the host stops at such
  // returns: plugin.h, FT_TRACE_RETURN_VALUE).
  std::optional<std::string> str;
  if (fn->ret_kind == FT_PARAM_STRING && rv != 0) {
    str = ft::sdk::read_string(host, ctx, rv, state.string_size + 1);
    if (str && str->size() > state.string_size) str->resize(state.string_size);
  } else if (go_string_result(fn)) {
    // A Go string: its text pointer in the return register, its length in the next.
    uint64_t len = host->arg(ctx, 1);
    size_t n = static_cast<size_t>(std::min<uint64_t>(len, state.string_size));
    std::string text(n, '\0');
    if (n == 0 || host->read_memory(ctx, rv, text.data(), n) == static_cast<long>(n)) str = std::move(text);
  }
  schema::ReturnRecord rec{{symbol_name(fn), fn->address, host->depth(ctx)}, rv,
                           fp ? std::optional<uint64_t>(frv) : std::nullopt};
  if (str) rec.retstr = *str;
  ft::sdk::record(host, ctx, rec);
  if (state.summary) {
    bool error = fn->ret_kind == FT_PARAM_SIGNED && format_value(FT_PARAM_SIGNED, fn->ret_size, rv)[0] == '-';
    state.calls.add_time(display_name(fn), duration, error);
  }
  if (!state.streaming || state.summary) return;
  std::string value = format_return(fn, rv, frv, str);
  if (value.size() >= 3) value.erase(0, 3);  // without its " = "
  log.layout->ret(shown_level(log, depth), value, duration, timestamp(ctx));
}

void on_unwound(void*, ft_ctx* ctx, const ft_function* fn, const char* reason) {
  ThreadLog& log = thread_log(ctx);
  unsigned depth = host->depth(ctx);
  uint64_t duration = 0;
  if (!end_call(ctx, log, depth, &duration)) return;
  ft::sdk::record(host, ctx, schema::UnwoundRecord{{symbol_name(fn), fn->address, depth}, reason});
  if (state.summary) state.calls.add_time(display_name(fn), duration, false);
  if (!state.streaming || state.summary) return;
  log.layout->unwound(shown_level(log, depth), reason, duration, timestamp(ctx));
}

void on_module(void*, ft_ctx* ctx, const ft_module* mod) {
  if (!mod->is_main_program) return;
  if (mod->loaded)
    state.program.mapped(host->pid(ctx), mod->path, mod->base, mod->end);
  else
    state.program.unmapped(host->pid(ctx), mod->base, mod->end);
}

// Signals and exec are notes in the log, as in functracer-postproc tree; at a thread's
// end, calls the time filter still holds back come out.
void on_event(void*, ft_ctx* ctx, const ft_event* ev) {
  if (ev->kind == FT_EVENT_PROCESS_CREATED && ev->value != 0)
    state.program.forked(static_cast<int>(ev->value), host->pid(ctx));
  if (!state.streaming || state.summary) return;
  ThreadLog& log = thread_log(ctx);
  switch (ev->kind) {
    case FT_EVENT_SIGNAL: {
      // The host names the signal as the trace's signal record does (plugin-api.md).
      std::string name = ev->text ? ev->text : "signal " + std::to_string(ev->value);
      log.layout->note("<signal " + name + ">", timestamp(ctx));
      break;
    }
    case FT_EVENT_EXEC:
      log.layout->note("<exec " + quote(ev->text ? ev->text : "?") + ">", timestamp(ctx));
      break;
    case FT_EVENT_THREAD_EXITED:
    case FT_EVENT_EXITED:
    case FT_EVENT_KILLED:
    case FT_EVENT_DETACHED:
      log.layout->finish();
      break;
    default: log.layout->open_brace();  // the call shows before what the event prints
  }
}

void on_finish(void*) {
  for (const auto& p : state.patterns)
    if (!p.matched) {
      std::string msg = p.library ? "-l " + p.lib + ": no library path contains '" + p.lib + "'"
                                  : "pattern '" + p.glob + (p.lib.empty() ? "" : "@" + p.lib) + "' matched no function";
      if (const char* stripped = host->option("main_stripped"))
        msg += std::string(" (") + stripped + " has no symbol table: only its exported functions can be traced)";
      host->warn(msg.c_str());
    }
  const char* stripped = host->option("main_stripped");
  if (state.patterns.empty() && !state.called && stripped) {
    std::string msg = std::string(stripped) +
                      " has no symbol table: no call of its own functions was seen; -l libc.so "
                      "--from-program shows its C library calls, as ltrace does";
    host->warn(msg.c_str());
  }
  state.ctx = nullptr;  // lines still held back have no thread to be printed for
  if (state.summary) std::fputs(state.calls.table().c_str(), stderr);
}

const ft_plugin kPlugin = ft::sdk::table(
    schema::plugin::kCalltrace, {.module = on_module, .symbol = on_symbol, .call = on_call, .ret = on_return, .unwound = on_unwound, .event = on_event, .finish = on_finish, .capture = on_capture});

const ft_plugin* setup(const ft_host_api* h) {
  host = h;
  state = State{};
  state.streaming = ft::sdk::streaming(h);
  state.host_formats = h->size >= offsetof(ft_host_api, function_size) + sizeof(h->function_size) &&
                       h->function_size >= FT_FUNCTION_SIZE_WITH_FORMATS;
  state.host_members = state.host_formats && h->function_size >= FT_FUNCTION_SIZE_WITH_MEMBERS;
  state.host_ret_members = state.host_formats && h->function_size >= FT_FUNCTION_SIZE_WITH_RET_MEMBERS;
  if (const char* audit = h->option("audit"))
    if (!parse_audit(audit)) return nullptr;
  if (const char* libs = h->option("library")) add_library_patterns(libs);
  if (const char* globs = h->option("exe_audit")) add_exe_patterns(globs);
  auto number = [&](const char* name) { const char* v = h->option(name); return v ? std::strtoull(v, nullptr, 10) : 0; };
  state.style.show_duration = h->option("durations") != nullptr;
  state.style.min_duration_ns = number("time_filter_ns");
  if (const char* s = h->option("string_size")) state.string_size = std::strtoull(s, nullptr, 10);
  state.demangle = !h->option("demangle") || std::strcmp(h->option("demangle"), "0") != 0;
  state.timestamps = static_cast<int>(number("timestamps"));
  state.depth_limit = static_cast<unsigned>(number("depth"));
  state.from_program = h->option("from_program") != nullptr;
  state.summary = h->option("summary") != nullptr;
  state.struct_depth = static_cast<unsigned>(number("struct_depth"));
  timespec mono{}, real{};
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_REALTIME, &real);
  state.realtime_offset_ns = (real.tv_sec - mono.tv_sec) * 1000'000'000LL + (real.tv_nsec - mono.tv_nsec);
  return &kPlugin;
}

}  // namespace

FT_SDK_PLUGIN_INIT(setup, kPlugin)
