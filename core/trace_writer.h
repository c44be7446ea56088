// TraceWriter: one trace file per process (threads share it), written as
// format_record() lines (doc/trace-format.md). Buffered: records are appended to a
// memory buffer and written in large chunks, and on flush() — which the tracer calls
// when the process exits or is detached and when functracer itself exits. Files are
// created 0600: a trace holds the program's arguments and data.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"
#include "core/trace_record.h"

namespace ft {

class TraceWriter {
 public:
  static Result<std::unique_ptr<TraceWriter>> create(const std::string& path);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Assigns the record's sequence number and appends it.
  void write(TraceRecord& r);
  void flush();
  const std::string& path() const { return path_; }
  uint64_t records() const { return seq_; }

 private:
  TraceWriter(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
  std::string buf_;
  uint64_t seq_ = 0;
  bool failed_ = false;
};

}  // namespace ft
