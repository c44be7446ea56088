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
//
// Compressed traces (the default with -o, *.trace.zst) are one zstd stream of those
// same lines. Every flush() ends a zstd block (ZSTD_e_flush), so what is on disk
// always decompresses up to the last flush: a trace cut short reads like a plain one
// cut at that point. The frame is ended (ZSTD_e_end) when the writer is destroyed.
//
// Compressing costs more than formatting: a compressed trace's full buffers are
// compressed and written by a thread of the writer's own (started at the first
// such buffer), while the tracer thread goes on formatting into another buffer. At
// most two buffers wait for it (then the tracer waits). flush() waits until all is
// on disk unless told not to (the aged buffers of the event loop); so do publish(),
// rename_to() and the destructor.
//
// A write the file system refuses (ENOSPC, EDQUOT, EFBIG under RLIMIT_FSIZE, EIO) ends
// the file, never the tracing: the writer says so in one line naming the file, the
// error and the records the trace ends after, cuts the file back to the end of its last
// whole record (plain) or of its last whole buffer (compressed, the last point that
// decodes to whole records), and from then on only counts the records it is given.
// The file on disk is then exactly records_on_disk() records, readable up to the cut,
// and without an end record, which is how a reader tells it was cut. A file that got
// no record at all (the disk was full from the start) is removed rather than left
// empty. functracer ignores SIGXFSZ (core/main.cc), so a file size limit is such an
// error (EFBIG) and not the end of functracer and, with it, of the program.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/result.h"
#include "common/trace_record.h"
#include "core/stack_table.h"

namespace ft {

class TraceWriter {
 public:
  enum class Format { kPlain, kZstd };
  // The file name's ending for each format: ".trace" or ".trace.zst".
  static const char* extension(Format f);

  static Result<std::unique_ptr<TraceWriter>> create(const std::string& path, Format format = Format::kPlain);
  ~TraceWriter();  // flushes, ends the compressed frame, publishes
  // Writes what is buffered and gives the file its name, replacing an old trace of
  // that name. Call it once the first records are written.
  Status publish();
  // Gives the file another name (a process that exec'd another program), now if it
  // is published, else when it is.
  Status rename_to(const std::string& path);
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  static constexpr uint64_t kMaxAgeNs = 100'000'000;

  // Assigns the record's sequence number and appends it. A `frames` list becomes a
  // `stack` reference (stack_ref()).
  void write(TraceRecord& r);
  // For a record about to be written with these frames: the id of the `stack`
  // record that holds them, written now (with this tid and timestamp) if the frames
  // are new. 0: write the frames themselves (none, or the table is full).
  uint64_t stack_ref(int64_t tid, uint64_t ts_ns, const uint64_t* frames, size_t n);
  // The same for a record written field by field: fields(LineAppender&) appends them.
  template <class F>
  void write_line(int64_t tid, uint64_t ts_ns, std::string_view type, F&& fields) {
    if (failed()) {
      ++seq_;  // counted, not formatted: it will not be written
      return;
    }
    {
      LineAppender line(buf_, ++seq_, tid, ts_ns, type);
      fields(line);
      line.newline();
    }
    appended(ts_ns);
  }
  // Writes what is buffered; wait: returns once it is on disk (else a compressed
  // trace's buffer may still be on its way).
  void flush(bool wait = true);
  // The timestamp of the oldest record not yet written to the file; 0 when none is.
  uint64_t pending_since() const { return pending_since_; }
  const std::string& path() const { return path_; }
  // Records given to the writer (those of a file cut by a write error included).
  uint64_t records() const { return seq_; }
  // Of those, the records the file holds: records() after a clean flush(), fewer once
  // a write failed.
  uint64_t records_on_disk() const { return records_on_disk_; }
  // The errno of the write that failed (also of a name the file could not be given);
  // 0 while nothing failed. Read it after flush() (a compressed trace's buffers are
  // written by its own thread).
  int write_error() const { return failed_.load(std::memory_order_acquire) ? error_ : 0; }
  // False once no file is left: nothing reached it, or it could not take its name.
  bool kept() const { return !gone_; }
  // Distinct call stacks written as `stack` records so far.
  size_t stacks() const { return stacks_.size(); }
  // Bytes written to the file so far (compressed size for a .trace.zst).
  // All of them after flush(); after a write error, the size of the file as it is cut.
  uint64_t bytes_written() const { return bytes_written_.load(std::memory_order_relaxed); }
  // Called by the destructor once the file is complete, with its final name and size.
  void on_close(std::function<void(const TraceWriter&)> f) { on_close_ = std::move(f); }

 private:
  struct Compressor;
  struct Behind;
  struct Queued;
  TraceWriter(int fd, std::string path, Format format);
  void finish_frame();
  // A line was appended: flushes when the buffer is full or its oldest line too old.
  void appended(uint64_t ts_ns);
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  // Feeds n bytes to the compressor and writes what it gives; directive: a
  // ZSTD_EndDirective (zstd.h stays out of this header). False when a write failed
  // (its errno in *err).
  bool compress(const char* p, size_t n, int directive, int* err);
  // Appends n bytes to the file; false when the file system refused them (errno in
  // *err), with *done the bytes it took.
  bool write_out(const char* p, size_t n, size_t* done, int* err);
  // A plain trace's buffer, written by the tracer thread.
  void write_plain();
  // Everything up to record `last_seq` is on disk, ending at the file's current size.
  void on_disk(uint64_t last_seq);
  // A write failed: the file is cut to keep_bytes, holding `records` records, said once.
  void write_failed(int err, uint64_t keep_bytes, uint64_t records);
  // Hands the buffer to the compressing thread (starting it) and takes an empty one.
  void hand_off();
  // Returns once the compressing thread has written every buffer handed to it.
  void wait_behind();
  void run_behind();  // the compressing thread
  int fd_;
  std::string path_;
  std::string tmp_path_;  // the file's name until publish(); empty after
  std::string buf_;
  std::unique_ptr<Compressor> zstd_;  // null for a plain trace
  std::unique_ptr<Behind> behind_;    // the compressing thread, once started
  StackTable stacks_;
  uint64_t seq_ = 0;
  uint64_t pending_since_ = 0;
  std::atomic<uint64_t> bytes_written_ = 0;  // written by the compressing thread too
  // The file's dirty pages bounded (write_back): sent to the disk up to written_back_,
  // dropped from the cache up to dropped_ (by whichever thread writes the file).
  static constexpr uint64_t kWriteBackBytes = 8 << 20;
  void write_back();
  uint64_t written_back_ = 0;
  uint64_t dropped_ = 0;
  // Kept by the thread that writes the file (the compressing one, for a compressed
  // trace) and read by the tracer thread after wait_behind().
  uint64_t records_on_disk_ = 0;
  uint64_t durable_bytes_ = 0;  // where the last whole buffer ends in the file
  int error_ = 0;               // set before failed_
  std::atomic<bool> failed_ = false;
  bool gone_ = false;  // no file is left under any name
  std::function<void(const TraceWriter&)> on_close_;
};

}  // namespace ft
