// TraceRecord: one line of a trace file, as written by TraceWriter and read back by
// the post-processor (postproc/trace_reader). The text encoding is specified in
// doc/trace-format.md; format_record/parse_record are exact inverses.
//
// Every record carries a sequence number (per trace file, strictly increasing), the
// thread id, a timestamp (CLOCK_MONOTONIC nanoseconds) and a type ("header", "module",
// "call", "return", ...) followed by named fields. Field values are signed integers,
// unsigned integers shown in hex (addresses), strings, or lists of hex integers
// (argument registers, backtrace frames).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"

namespace ft {

struct Hex {
  uint64_t v = 0;
  bool operator==(const Hex&) const = default;
};
using HexList = std::vector<uint64_t>;
using TraceValue = std::variant<int64_t, Hex, std::string, HexList>;

struct TraceField {
  std::string key;  // [a-z0-9_]+
  TraceValue value;
  bool operator==(const TraceField&) const = default;
};

struct TraceRecord {
  uint64_t seq = 0;
  int64_t tid = 0;
  uint64_t ts_ns = 0;
  std::string type;  // [a-z0-9_]+
  std::vector<TraceField> fields;

  bool operator==(const TraceRecord&) const = default;

  TraceRecord& add(std::string key, TraceValue v) {
    fields.push_back({std::move(key), std::move(v)});
    return *this;
  }
  const TraceValue* get(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;    // int64 field (or Hex, cast)
  std::optional<uint64_t> get_hex(std::string_view key) const;   // Hex field (or non-negative int)
  const std::string* get_str(std::string_view key) const;
  const HexList* get_list(std::string_view key) const;
};

// Fills a record from the typed views of functracer/schema.h (view.write(writer)):
// the Writer those views expect, on the engine's and the post-processor's side.
class RecordFieldWriter {
 public:
  explicit RecordFieldWriter(TraceRecord& r) : r_(r) {}
  void str(std::string_view key, std::string_view s) { r_.add(std::string(key), std::string(s)); }
  void integer(std::string_view key, int64_t v) { r_.add(std::string(key), v); }
  void hex(std::string_view key, uint64_t v) { r_.add(std::string(key), Hex{v}); }
  void list(std::string_view key, const uint64_t* v, size_t n) {
    r_.add(std::string(key), HexList(v, v + n));
  }

 private:
  TraceRecord& r_;
};

// One line, without the trailing newline. The type and every key must match
// [a-z0-9_]+ (not checked here: this is the writer's hot path).
std::string format_record(const TraceRecord& r);
// Same, appended to `out` (no allocation when `out` has room): for buffered writers.
void append_record(std::string& out, const TraceRecord& r);
// Writes one line field by field into `out` (no newline): the text append_record gives
// for the record with those fields, for writers that do not build a TraceRecord. Its
// calls are the Writer the typed views of functracer/schema.h expect. The line is
// formatted in a small buffer of its own and appended to `out` in one piece (per
// 480 bytes for long lines) by newline() or the destructor: a record is dozens of
// short pieces, each of which would otherwise go through std::string::append.
class LineAppender {
 public:
  LineAppender(std::string& out, uint64_t seq, int64_t tid, uint64_t ts_ns, std::string_view type);
  ~LineAppender() { spill(); }
  LineAppender(const LineAppender&) = delete;
  LineAppender& operator=(const LineAppender&) = delete;
  void integer(std::string_view key, int64_t v);
  void hex(std::string_view key, uint64_t v);
  void str(std::string_view key, std::string_view s);
  void list(std::string_view key, const uint64_t* v, size_t n);
  // Ends the line ('\n') and appends it to `out`; nothing may be added after.
  void newline() {
    put('\n');
    spill();
  }

 private:
  static constexpr size_t kStage = 480;
  size_t room() const { return static_cast<size_t>(stage_ + kStage - p_); }
  void spill() {
    out_.append(stage_, static_cast<size_t>(p_ - stage_));
    p_ = stage_;
  }
  // Makes room for n <= kStage bytes.
  void reserve(size_t n) {
    if (room() < n) spill();
  }
  void put(char c) {
    reserve(1);
    *p_++ = c;
  }
  void put(const char* s, size_t n);
  void key(std::string_view k);
  void u64(uint64_t v);
  void i64(int64_t v);
  void hex_digits(uint64_t v);
  std::string& out_;
  char* p_;
  char stage_[kStage];
};
// Appends `s` as a double-quoted string value with the trace escapes (\\ \" \n \t \r,
// \xHH for other bytes below 0x20 or from 0x7f): the result is printable ASCII.
void append_quoted(std::string& out, std::string_view s);
// Parses one line (no trailing newline). Errors name what is wrong with the line.
Result<TraceRecord> parse_record(std::string_view line);

// The same, for readers of many lines: parses into a record the caller keeps, reusing
// the memory its fields, strings and lists hold from earlier lines (and fields left
// over from longer lines), so that reading a trace does not allocate per record. On
// failure the record's contents are unspecified.
class RecordParser {
 public:
  Status parse(std::string_view line, TraceRecord& r);

 private:
  std::vector<TraceField> spare_;
};

// First line of every trace file; identifies the file and the format version.
inline constexpr std::string_view kTraceMagic = "functracer-trace";
// Version 2 writes backtraces once (`stack` records, `stack=N` fields); readers
// read versions kOldestTraceFormatVersion to kTraceFormatVersion.
inline constexpr int kTraceFormatVersion = 2;
inline constexpr int kOldestTraceFormatVersion = 1;
// The most frames a `stack` record may hold (4 times functracer's deepest -b): a
// longer list is written out in its record, and a reader skips a longer stack record
// as malformed, so that a record of a few bytes never stands for a list of any size.
inline constexpr size_t kMaxStackFrames = 4096;

}  // namespace ft
