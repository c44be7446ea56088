/*
 * functracer plugin SDK — header-only C++ helpers for writing plugins against the C
 * ABI of plugin.h. Nothing here crosses the ABI: a plugin built with it is an
 * ordinary plugin, and a plugin may use any part of it or none. The bundled plugins
 * (memtrace, calltrace, fileops) are written with it; doc/plugin-api.md, section
 * "The header-only SDK", describes it.
 *
 *  - RecordBuilder: the fields of one record, written with host->record; a Writer for
 *    the typed views of schema.h.
 *  - quote, hex: the text of streamed (-o less) lines.
 *  - options: parsing host->option values.
 *  - PendingCalls: a thread's calls between their entry and their return, matched by
 *    call depth.
 *  - table / FT_SDK_PLUGIN_INIT: the ft_plugin table and the exported init function.
 *
 * C++20, inline, standard library only.
 */
#ifndef FUNCTRACER_SDK_H
#define FUNCTRACER_SDK_H

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "functracer/plugin.h"
#include "functracer/schema.h"

namespace ft::sdk {

// ---- records ----------------------------------------------------------------------

// The fields of one record, kept until it is written. Keys must be string literals
// (or otherwise outlive the builder); string values are copied unless given as
// NUL-terminated C strings, lists are not copied (they must live until write()).
// Built for every event: nothing is cleared or constructed per field that is not used,
// and copied strings share one buffer.
class RecordBuilder {
 public:
  static constexpr size_t kMaxFields = 16;  // at most 32 (copied_ is a bit mask)

  RecordBuilder& str(const char* key, const char* s) {
    if (ft_field* f = add(key, FT_FIELD_STRING)) f->s = s;
    return *this;
  }
  RecordBuilder& str(const char* key, std::string_view s) {
    ft_field* f = add(key, FT_FIELD_STRING);
    if (!f) return *this;
    // Where the copy is in text_ (which may move as it grows): pointed at in settle().
    copied_ |= 1u << (n_ - 1);
    text_at_[n_ - 1] = text_.size();
    text_.append(s.data(), s.size()).push_back('\0');
    return *this;
  }
  RecordBuilder& str(const char* key, const std::string& s) { return str(key, s.c_str()); }
  RecordBuilder& integer(const char* key, int64_t v) {
    if (ft_field* f = add(key, FT_FIELD_INT)) f->i = v;
    return *this;
  }
  RecordBuilder& hex(const char* key, uint64_t v) {
    if (ft_field* f = add(key, FT_FIELD_HEX)) f->u = v;
    return *this;
  }
  RecordBuilder& list(const char* key, const uint64_t* values, size_t n) {
    if (ft_field* f = add(key, FT_FIELD_HEX_LIST)) {
      f->list = values;
      f->list_len = n;
    }
    return *this;
  }

  // Writes the fields of a typed view (schema.h).
  template <class View>
  RecordBuilder& fields(const View& v) {
    v.write(*this);
    return *this;
  }

  const ft_field* data() const {
    settle();
    return fields_;
  }
  size_t size() const { return n_; }

  void write(const ft_host_api* host, ft_ctx* ctx, const char* type) const {
    settle();
    host->record(ctx, type, fields_, n_);
  }

 private:
  // The next field, or NULL when all are used (more would be a plugin bug: dropped).
  ft_field* add(const char* key, ft_field_kind kind) {
    if (n_ == kMaxFields) return nullptr;
    ft_field& f = fields_[n_++];
    f = ft_field{};
    f.key = key;
    f.kind = kind;
    return &f;
  }
  void settle() const {
    for (size_t i = 0; i < n_; ++i)
      if (copied_ & (1u << i)) fields_[i].s = text_.data() + text_at_[i];
  }
  mutable ft_field fields_[kMaxFields];  // the first n_ are set
  std::string text_;                     // the copied strings, each NUL-terminated
  size_t text_at_[kMaxFields];           // where field i's copy is, if copied_ says so
  uint32_t copied_ = 0;                  // bit i: field i's string is in text_
  size_t n_ = 0;
};

// Writes one typed view as a record of `type`.
template <class View>
void record(const ft_host_api* host, ft_ctx* ctx, const char* type, const View& v) {
  RecordBuilder b;
  b.fields(v).write(host, ctx, type);
}
// Same, for views that know their type (View::kType).
template <class View>
void record(const ft_host_api* host, ft_ctx* ctx, const View& v) {
  record(host, ctx, View::kType, v);
}

// ---- call stacks --------------------------------------------------------------------

// At most `max` return addresses of ctx's thread (host->backtrace) into `frames`,
// whose memory is reused; empty when max is 0 or none can be found.
inline void backtrace_into(const ft_host_api* host, ft_ctx* ctx, unsigned max, std::vector<ft_addr>& frames) {
  frames.clear();
  if (max == 0 || !host->backtrace) return;
  frames.resize(max);
  int n = host->backtrace(ctx, frames.data(), static_cast<int>(max));
  frames.resize(n > 0 ? static_cast<size_t>(n) : 0);
}

// The same, in a new vector.
inline std::vector<ft_addr> backtrace(const ft_host_api* host, ft_ctx* ctx, unsigned max) {
  std::vector<ft_addr> frames;
  backtrace_into(host, ctx, max, frames);
  return frames;
}

inline schema::HexSpan span(const std::vector<ft_addr>& v) { return schema::HexSpan{v.data(), v.size()}; }

// The string at addr in the traced process, at most `max` bytes; nothing for NULL or
// unreadable memory.
inline std::optional<std::string> read_string(const ft_host_api* host, ft_ctx* ctx, ft_addr addr, size_t max) {
  if (addr == 0) return std::nullopt;
  std::string buf(max + 1, '\0');
  if (host->read_string(ctx, addr, buf.data(), buf.size()) < 0) return std::nullopt;
  buf.resize(std::strlen(buf.c_str()));
  return buf;
}

// ---- text of streamed lines -----------------------------------------------------------

// `s` in double quotes, C-style: \" \\ \n \t, \xHH for other bytes below 0x20 and from
// 0x7f. (For display; trace files have their own encoding, doc/trace-format.md.)
inline std::string quote(std::string_view s) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          const char esc[4] = {'\\', 'x', kDigits[c >> 4], kDigits[c & 15]};
          out.append(esc, 4);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

// "0x1f": lowercase, no leading zeros.
inline std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%" PRIx64, v);
  return b;
}

// printf into a std::string.
inline std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline std::string format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list again;
  va_copy(again, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string out(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, fmt, again);
  va_end(again);
  return out;
}

// ---- options ----------------------------------------------------------------------------

// A decimal number without sign, up to 18446744073709551609 (the check that it fits
// in 64 bits is one comparison per digit, and refuses the last ten values).
inline std::optional<uint64_t> parse_u64(std::string_view s) {
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9' || v > (UINT64_MAX - 9) / 10) return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

// A comma-separated list of numbers and LOW-HIGH ranges ("100,4096-8192"); nothing
// when an item is not one, a range is reversed, or the list is empty.
inline std::optional<std::vector<std::pair<uint64_t, uint64_t>>> parse_ranges(std::string_view s) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
    size_t dash = item.find('-');
    std::optional<uint64_t> lo, hi;
    if (dash == std::string_view::npos) {
      lo = hi = parse_u64(item);
    } else {
      lo = parse_u64(item.substr(0, dash));
      hi = parse_u64(item.substr(dash + 1));
    }
    if (!lo || !hi || *hi < *lo) return std::nullopt;
    out.emplace_back(*lo, *hi);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// The largest backtrace depth (-b) the engine accepts.
inline constexpr unsigned kMaxBacktraceDepth = 1024;

// The "backtrace_depth" option (-b) into *depth, left as it is when the option is not
// set. False, after a warning naming `plugin`, when the value is not 0..1024: setup
// then refuses to run.
inline bool backtrace_depth_option(const ft_host_api* host, const char* plugin, unsigned* depth) {
  const char* d = host->option("backtrace_depth");
  if (d == nullptr) return true;
  auto v = parse_u64(d);
  if (!v || *v > kMaxBacktraceDepth) {
    std::string msg = std::string(plugin) + ": bad backtrace depth '" + d + "' (expected 0..1024)";
    host->warn(msg.c_str());
    return false;
  }
  *depth = static_cast<unsigned>(*v);
  return true;
}

// An option that is on when set to exactly "1" ("backtrace_all", "quiet").
inline bool option_is_one(const ft_host_api* host, const char* name) {
  const char* v = host->option(name);
  return v && std::strcmp(v, "1") == 0;
}

// No output directory: the plugin prints lines with host->print instead of records.
inline bool streaming(const ft_host_api* host) { return host->option("output") == nullptr; }

// ---- pending calls ------------------------------------------------------------------------

// The calls of one thread between their entry and their return, innermost last.
// Call is the plugin's own type with a `depth` member (host->depth at the call).
// Frames left unseen (a return that never came: longjmp, an exception) are dropped
// when a call or return at a lower depth arrives.
template <class Call>
class PendingCalls {
 public:
  // A call at `depth`: frames at that depth or deeper cannot be open any more.
  void drop_from(unsigned depth) {
    while (!open_.empty() && open_.back().depth >= depth) open_.pop_back();
  }
  Call& push(Call c) {
    open_.push_back(std::move(c));
    return open_.back();
  }
  // The call a return (or unwinding) at `depth` ends, if it was seen.
  std::optional<Call> take(unsigned depth) {
    while (!open_.empty() && open_.back().depth > depth) open_.pop_back();
    if (open_.empty() || open_.back().depth != depth) return std::nullopt;
    Call c = std::move(open_.back());
    open_.pop_back();
    return c;
  }
  bool empty() const { return open_.empty(); }
  size_t size() const { return open_.size(); }
  Call& outermost() { return open_.front(); }

 private:
  std::vector<Call> open_;
};

// ---- the plugin table ---------------------------------------------------------------------

// The callbacks of a plugin table, for designated initializers that name only the
// ones a plugin has: table("name", {.call = on_call, .ret = on_return}).
struct Callbacks {
  decltype(ft_plugin::module) module = nullptr;
  decltype(ft_plugin::symbol) symbol = nullptr;
  decltype(ft_plugin::call) call = nullptr;
  decltype(ft_plugin::ret) ret = nullptr;
  decltype(ft_plugin::unwound) unwound = nullptr;
  decltype(ft_plugin::event) event = nullptr;
  decltype(ft_plugin::syscall) syscall = nullptr;
  decltype(ft_plugin::finish) finish = nullptr;
  decltype(ft_plugin::snapshot) snapshot = nullptr;
  decltype(ft_plugin::capture) capture = nullptr;
  void* data = nullptr;
};

// A table for this API version with these callbacks (the others NULL).
inline ft_plugin table(const char* name, const Callbacks& cb = {}) {
  ft_plugin p{};
  p.api_version = FT_PLUGIN_API_VERSION;
  p.size = sizeof(ft_plugin);
  p.name = name;
  p.data = cb.data;
  p.module = cb.module;
  p.symbol = cb.symbol;
  p.call = cb.call;
  p.ret = cb.ret;
  p.unwound = cb.unwound;
  p.event = cb.event;
  p.syscall = cb.syscall;
  p.finish = cb.finish;
  p.snapshot = cb.snapshot;
  p.capture = cb.capture;
  return p;
}

// The init function's work: a host of another API version gets the plugin's table
// back at once (it refuses it, naming both versions); otherwise setup(host) reads the
// options and returns the table, or NULL to refuse to run (after host->warn).
inline const ft_plugin* init(const ft_host_api* host, const ft_plugin* (*setup)(const ft_host_api*),
                             const ft_plugin* table_for_mismatch) {
  if (host->api_version != FT_HOST_API_VERSION) return table_for_mismatch;
  return setup(host);
}

}  // namespace ft::sdk

// Exports functracer_plugin_init, calling `setup` (const ft_plugin *(const ft_host_api *))
// for a host of this API version; `table` (an ft_plugin) is returned to any other.
#define FT_SDK_PLUGIN_INIT(setup, table)                                                   \
  extern "C" __attribute__((visibility("default"))) const ft_plugin* functracer_plugin_init( \
      const ft_host_api* host) {                                                           \
    return ::ft::sdk::init(host, (setup), &(table));                                       \
  }

#endif /* FUNCTRACER_SDK_H */
