#include "core/trace_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "common/check.h"
#include "core/log.h"
#include "functracer/schema.h"

namespace ft {

namespace {
constexpr size_t kFlushAt = 256 * 1024;
// Level 1: traces ten times smaller than the text for about 100-300 ns more per
// record; level 3 (zstd's default) was no smaller on traces and slower
// (doc/performance.md, "Trace files").
constexpr int kZstdLevel = 1;
}  // namespace

struct TraceWriter::Compressor {
  struct Free {
    void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
  };
  std::unique_ptr<ZSTD_CCtx, Free> ctx{ZSTD_createCCtx()};
  std::string out = std::string(ZSTD_CStreamOutSize(), '\0');
};

// What the tracer thread and the compressing thread share. Only the compressing
// thread touches the compressor, the file and the write counters while it runs;
// the tracer thread does after wait_behind().
// A buffer handed to the compressing thread, with the sequence number of its last
// record: once it is written whole, the file holds every record up to that one.
struct TraceWriter::Queued {
  std::string text;
  uint64_t last_seq = 0;
};

struct TraceWriter::Behind {
  std::thread thread;
  std::mutex m;
  std::condition_variable changed;
  std::deque<Queued> queue;        // buffers to compress, oldest first
  std::vector<std::string> spare;  // buffers written, for reuse
  bool busy = false;               // compressing a buffer taken off the queue
  bool stop = false;
};

namespace {
constexpr size_t kMaxQueued = 2;
}  // namespace

const char* TraceWriter::extension(Format f) { return f == Format::kZstd ? ".trace.zst" : ".trace"; }

TraceWriter::TraceWriter(int fd, std::string path, Format format) : fd_(fd), path_(std::move(path)) {
  if (format == Format::kZstd) {
    zstd_ = std::make_unique<Compressor>();
    FT_CHECK(zstd_->ctx != nullptr, "ZSTD_createCCtx failed");
    ZSTD_CCtx_setParameter(zstd_->ctx.get(), ZSTD_c_compressionLevel, kZstdLevel);
    ZSTD_CCtx_setParameter(zstd_->ctx.get(), ZSTD_c_checksumFlag, 1);
  }
}

Result<std::unique_ptr<TraceWriter>> TraceWriter::create(const std::string& path, Format format) {
  // A new file, readable by its owner only (0600 whatever the umask). It is made
  // under a temporary name in the same directory (mkostemp: O_EXCL, mode 0600) and
  // takes its own name in publish(), once its first lines are on disk: a trace file
  // that exists is never empty, whenever functracer is killed. An old trace of the
  // same name (a reused pid) is a regular file: it is replaced, not rewritten; a
  // symbolic link or anything else in the way is refused.
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode))
      return Error::msg("cannot create trace file " + path + ": a symbolic link is in the way (not followed)");
    if (!S_ISREG(st.st_mode))
      return Error::msg("cannot create trace file " + path + ": something that is not a file is in the way");
  }
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
  std::string tmp = dir + "." + path.substr(slash == std::string::npos ? 0 : slash + 1) + ".XXXXXX";
  int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return Error::from_errno(errno, "cannot create trace file " + path);
  // The umask can only take bits away from 0600; fchmod makes it so even if the
  // file system says otherwise (ACLs).
  (void)::fchmod(fd, 0600);
  std::unique_ptr<TraceWriter> w(new TraceWriter(fd, path, format));
  w->tmp_path_ = std::move(tmp);
  w->buf_.reserve(kFlushAt + 4096);
  w->buf_.append(kTraceMagic).append(" ").append(std::to_string(kTraceFormatVersion)).push_back('\n');
  return w;
}

Status TraceWriter::publish() {
  if (tmp_path_.empty()) return {};
  flush();
  std::string tmp = std::move(tmp_path_);
  tmp_path_.clear();
  if (failed() && records_on_disk_ == 0) {
    // Not one record reached it (the line saying why is out): no file rather than
    // an empty one, and an old trace of the name is left as it was.
    (void)::unlink(tmp.c_str());
    gone_ = true;
    return {};
  }
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    int err = errno;
    (void)::unlink(tmp.c_str());
    gone_ = true;
    error_ = err;
    failed_.store(true, std::memory_order_release);  // nothing more is written to a file that has no name
    return Error::from_errno(err, "cannot create trace file " + path_);
  }
  return {};
}

Status TraceWriter::rename_to(const std::string& path) {
  if (path == path_) return {};
  wait_behind();
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return Error::msg("cannot rename trace file " + path_ + " to " + path + ": something that is not a file is in the way");
  if (tmp_path_.empty() && !gone_ && ::rename(path_.c_str(), path.c_str()) != 0)
    return Error::from_errno(errno, "cannot rename trace file " + path_ + " to " + path);
  path_ = path;
  return {};
}

TraceWriter::~TraceWriter() {
  flush();
  if (behind_) {
    {
      std::lock_guard lock(behind_->m);
      behind_->stop = true;
    }
    behind_->changed.notify_all();
    behind_->thread.join();
  }
  finish_frame();
  if (auto s = publish(); !s) log::error("{}", s.error().message);
  if (fd_ >= 0) ::close(fd_);
  if (on_close_) on_close_(*this);
}

void TraceWriter::write(TraceRecord& r) {
  if (failed()) {
    r.seq = ++seq_;  // counted, not formatted: it will not be written
    return;
  }
  for (TraceField& f : r.fields) {
    if (f.key != schema::key::kFrames) continue;
    const HexList* frames = std::get_if<HexList>(&f.value);
    if (!frames) continue;
    if (uint64_t id = stack_ref(r.tid, r.ts_ns, frames->data(), frames->size())) {
      f.key = schema::key::kStack;
      f.value = static_cast<int64_t>(id);
    }
  }
  r.seq = ++seq_;
  append_record(buf_, r);
  buf_.push_back('\n');
  appended(r.ts_ns);
}

uint64_t TraceWriter::stack_ref(int64_t tid, uint64_t ts_ns, const uint64_t* frames, size_t n) {
  if (failed()) return 0;
  StackTable::Interned s = stacks_.intern(frames, n);
  if (s.added) {
    write_line(tid, ts_ns, schema::type::kStack, [&](LineAppender& line) {
      line.integer(schema::key::kId, static_cast<int64_t>(s.id));
      line.list(schema::key::kFrames, frames, n);
    });
  }
  return s.id;
}

void TraceWriter::appended(uint64_t ts_ns) {
  if (pending_since_ == 0) pending_since_ = ts_ns ? ts_ns : 1;
  if (buf_.size() >= kFlushAt || ts_ns >= pending_since_ + kMaxAgeNs) flush(/*wait=*/false);
}

bool TraceWriter::write_out(const char* p, size_t left, size_t* done, int* err) {
  *done = 0;
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *err = n < 0 ? errno : EIO;
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
    *done += static_cast<size_t>(n);
    bytes_written_ += static_cast<uint64_t>(n);
  }
  write_back();
  return true;
}

void TraceWriter::write_back() {
  // A long trace would otherwise leave gigabytes of dirty page cache behind it, which
  // a memory cgroup counts against functracer (under cgroup v1 until the kernel gets
  // round to writing it: the OOM killer came first). Every kWriteBackBytes, the new
  // stretch is sent to the disk and the one before it, written by then, dropped from
  // the cache.
  uint64_t end = bytes_written_.load(std::memory_order_relaxed);
  if (end - written_back_ < kWriteBackBytes) return;
  (void)::sync_file_range(fd_, static_cast<off_t>(written_back_), static_cast<off_t>(end - written_back_),
                          SYNC_FILE_RANGE_WRITE);
  if (written_back_ > dropped_) {
    (void)::sync_file_range(fd_, static_cast<off_t>(dropped_), static_cast<off_t>(written_back_ - dropped_),
                            SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
    (void)::posix_fadvise(fd_, static_cast<off_t>(dropped_), static_cast<off_t>(written_back_ - dropped_),
                          POSIX_FADV_DONTNEED);
    dropped_ = written_back_;
  }
  written_back_ = end;
}

bool TraceWriter::compress(const char* p, size_t n, int directive, int* err) {
  ZSTD_inBuffer in{p, n, 0};
  size_t remaining;
  do {
    ZSTD_outBuffer out{zstd_->out.data(), zstd_->out.size(), 0};
    remaining = ZSTD_compressStream2(zstd_->ctx.get(), &out, &in, static_cast<ZSTD_EndDirective>(directive));
    FT_CHECK(!ZSTD_isError(remaining), "zstd: %s", ZSTD_getErrorName(remaining));
    size_t done;
    if (!write_out(zstd_->out.data(), out.pos, &done, err)) return false;
  } while (remaining != 0);
  return true;
}

void TraceWriter::on_disk(uint64_t last_seq) {
  records_on_disk_ = last_seq;
  durable_bytes_ = bytes_written_.load(std::memory_order_relaxed);
}

void TraceWriter::write_failed(int err, uint64_t keep_bytes, uint64_t records) {
  // Cut back to a record boundary: the file then holds exactly the records said here,
  // with no partial line or compressed block after them. Making a file smaller needs
  // no space, even on a full disk.
  if (::ftruncate(fd_, static_cast<off_t>(keep_bytes)) == 0) bytes_written_ = keep_bytes;
  records_on_disk_ = records;
  error_ = err;
  failed_.store(true, std::memory_order_release);
  if (records == 0)
    log::error("writing trace {}: {}; no record could be written, the file is removed", path_, std::strerror(err));
  else
    log::error("writing trace {}: {}; the trace ends after {} record{}", path_, std::strerror(err), records,
               records == 1 ? "" : "s");
}

void TraceWriter::write_plain() {
  size_t done = 0;
  int err = 0;
  if (write_out(buf_.data(), buf_.size(), &done, &err)) {
    on_disk(seq_);
    return;
  }
  // The lines written whole stay; every line of the buffer is a record but the magic
  // line that starts the file.
  std::string_view taken(buf_.data(), done);
  size_t keep = taken.rfind('\n');
  keep = keep == std::string_view::npos ? 0 : keep + 1;
  auto lines = static_cast<uint64_t>(std::count(taken.begin(), taken.begin() + static_cast<ptrdiff_t>(keep), '\n'));
  if (durable_bytes_ == 0 && lines > 0) --lines;
  write_failed(err, durable_bytes_ + keep, records_on_disk_ + lines);
}

void TraceWriter::flush(bool wait) {
  if (failed()) {
    buf_.clear();  // nothing more is written to this file
  } else if (zstd_ && !buf_.empty()) {
    hand_off();
  } else if (!zstd_) {
    if (!buf_.empty()) write_plain();
    buf_.clear();
  }
  pending_since_ = 0;
  if (wait) wait_behind();
}

void TraceWriter::hand_off() {
  if (!behind_) {
    behind_ = std::make_unique<Behind>();
    // The thread takes no signal: they are the tracer thread's (its waits end on them).
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    behind_->thread = std::thread([this] { run_behind(); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  Behind& b = *behind_;
  std::unique_lock lock(b.m);
  b.changed.wait(lock, [&] { return b.queue.size() < kMaxQueued; });
  b.queue.push_back(Queued{std::move(buf_), seq_});
  buf_.clear();
  if (!b.spare.empty()) {
    buf_ = std::move(b.spare.back());
    b.spare.pop_back();
  }
  lock.unlock();
  b.changed.notify_all();
  if (buf_.capacity() < kFlushAt) buf_.reserve(kFlushAt + 4096);
}

void TraceWriter::wait_behind() {
  if (!behind_) return;
  Behind& b = *behind_;
  std::unique_lock lock(b.m);
  b.changed.wait(lock, [&] { return b.queue.empty() && !b.busy; });
}

void TraceWriter::run_behind() {
  Behind& b = *behind_;
  std::unique_lock lock(b.m);
  for (;;) {
    b.changed.wait(lock, [&] { return b.stop || !b.queue.empty(); });
    if (b.queue.empty()) return;  // stopping, and everything is written
    Queued q = std::move(b.queue.front());
    b.queue.pop_front();
    b.busy = true;
    lock.unlock();
    if (!failed()) {
      // ZSTD_e_flush: everything given so far becomes decodable from what is written.
      int err = 0;
      if (compress(q.text.data(), q.text.size(), ZSTD_e_flush, &err)) on_disk(q.last_seq);
      else write_failed(err, durable_bytes_, records_on_disk_);
    }
    std::string buf = std::move(q.text);
    buf.clear();
    lock.lock();
    b.busy = false;
    b.spare.push_back(std::move(buf));
    b.changed.notify_all();
  }
}

void TraceWriter::finish_frame() {
  if (!zstd_) return;
  int err = 0;
  // The frame's end holds no record: a file that cannot take it still has them all.
  if (!failed() && !compress(nullptr, 0, ZSTD_e_end, &err)) write_failed(err, durable_bytes_, records_on_disk_);
  zstd_.reset();
}

}  // namespace ft
