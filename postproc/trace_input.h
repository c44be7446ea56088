// TraceInput: the bytes of one trace as functracer-postproc gets it — a file, "-"
// (standard input) or a pipe (`<(zcat t.trace.zst)`) — opened once and readable from
// the start as many times as a report needs (html reads its traces in several
// passes). A regular file is read with pread(2) through the one descriptor; anything
// that cannot seek (a pipe, a terminal) is copied once, as it is, into an unlinked
// temporary file, which is then read the same way.
//
// TraceStream reads an input from its start and undoes zstd compression when the
// bytes start with zstd's frame magic (RFC 8878 §3.1.1: 28 B5 2F FD), whatever the
// name: a compressed stream is decoded block by block (ZSTD_decompressStream), so a
// trace cut inside a block yields every block before the cut (doc/trace-format.md,
// compressed traces).
//
// TraceInputs holds the inputs named on the command line: the tool opens each one
// there first, and every TraceReader::open of that name reads the same descriptor.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "common/result.h"

namespace ft::post {

class TraceInput {
 public:
  // "-" is standard input.
  static Result<std::shared_ptr<TraceInput>> open(const std::string& name);
  ~TraceInput();
  TraceInput(const TraceInput&) = delete;
  TraceInput& operator=(const TraceInput&) = delete;

  const std::string& name() const { return name_; }
  // pread(2): bytes at `offset`; 0 at the end; -1 with errno set.
  ssize_t read_at(void* buf, size_t n, uint64_t offset) const;

 private:
  TraceInput(std::string name, int fd, bool owned) : name_(std::move(name)), fd_(fd), owned_(owned) {}
  std::string name_;
  int fd_;
  bool owned_;
};

// One pass over an input, decompressed if it is zstd.
class TraceStream {
 public:
  explicit TraceStream(std::shared_ptr<TraceInput> input);
  ~TraceStream();
  TraceStream(TraceStream&&) noexcept;
  TraceStream& operator=(TraceStream&&) noexcept;

  // Up to n bytes of the trace's text; 0 at its end or after an error (error() says).
  size_t read(char* buf, size_t n);
  // Why reading stopped early: a read error or corrupt compressed data; empty if not.
  const std::string& error() const { return error_; }
  bool compressed() const { return zstd_ != nullptr; }
  // After the end: the compressed stream stopped inside a zstd frame (cut short).
  bool cut_inside_frame() const { return cut_inside_frame_; }

 private:
  struct Decoder;
  size_t read_raw(char* buf, size_t n);
  std::shared_ptr<TraceInput> input_;
  uint64_t offset_ = 0;
  bool started_ = false;
  std::unique_ptr<Decoder> zstd_;
  std::string error_;
  bool cut_inside_frame_ = false;
};

class TraceInputs {
 public:
  static TraceInputs& instance();
  // Opens `name` unless it already is; the error names it.
  Status add(const std::string& name);
  // The input opened under this name, or null.
  std::shared_ptr<TraceInput> find(const std::string& name) const;

 private:
  std::map<std::string, std::shared_ptr<TraceInput>> inputs_;
};

}  // namespace ft::post
