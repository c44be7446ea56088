// TraceWriter: one trace file per process (threads share it), written as
// format_record() lines (doc/trace-format.md). Buffered: records are appended to a
// memory buffer and written in large chunks, and on flush() — which the tracer calls
// when the process exits or is detached and when functracer itself exits. Files are
// created 0600: a trace holds the program's arguments and data. A file is created
// under a temporary name and takes its own with publish() (or when the writer is
// destroyed), so that the name never stands for an empty file.
//
// A record is never held back long: write() flushes as soon as the buffer holds
// records older than kMaxAgeNs (by their own timestamps, so no clock is read and no
// system call is made per record), and the tracer flushes a buffer that has aged
// while no new record came (pending_since()). If functracer is killed, the trace on
// disk lacks at most the records of the last kMaxAgeNs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"
#include "common/trace_record.h"

namespace ft {

class TraceWriter {
 public:
  static Result<std::unique_ptr<TraceWriter>> create(const std::string& path);
  ~TraceWriter();  // flushes and publishes
  // Writes what is buffered and gives the file its name, replacing an old trace of
  // that name. Call it once the first records are written.
  Status publish();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  static constexpr uint64_t kMaxAgeNs = 100'000'000;

  // Assigns the record's sequence number and appends it.
  void write(TraceRecord& r);
  void flush();
  // The timestamp of the oldest record not yet written to the file; 0 when none is.
  uint64_t pending_since() const { return pending_since_; }
  const std::string& path() const { return path_; }
  uint64_t records() const { return seq_; }

 private:
  TraceWriter(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
  std::string tmp_path_;  // the file's name until publish(); empty after
  std::string buf_;
  uint64_t seq_ = 0;
  uint64_t pending_since_ = 0;
  bool failed_ = false;
};

}  // namespace ft
