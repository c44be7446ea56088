#include "core/trace_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

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
struct TraceWriter::Behind {
  std::thread thread;
  std::mutex m;
  std::condition_variable changed;
  std::deque<std::string> queue;   // buffers to compress, oldest first
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
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    int err = errno;
    (void)::unlink(tmp.c_str());
    failed_ = true;  // nothing more is written to a file that has no name
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
  if (tmp_path_.empty() && !failed_ && ::rename(path_.c_str(), path.c_str()) != 0)
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

void TraceWriter::write_out(const char* p, size_t left) {
  while (left > 0 && !failed_) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      failed_ = true;
      log::error("cannot write trace file {}: {}", path_, std::strerror(n < 0 ? errno : EIO));
      break;
    }
    p += n;
    left -= static_cast<size_t>(n);
    bytes_written_ += static_cast<uint64_t>(n);
  }
}

void TraceWriter::compress(const char* p, size_t n, int directive) {
  ZSTD_inBuffer in{p, n, 0};
  size_t remaining;
  do {
    ZSTD_outBuffer out{zstd_->out.data(), zstd_->out.size(), 0};
    remaining = ZSTD_compressStream2(zstd_->ctx.get(), &out, &in, static_cast<ZSTD_EndDirective>(directive));
    FT_CHECK(!ZSTD_isError(remaining), "zstd: %s", ZSTD_getErrorName(remaining));
    write_out(zstd_->out.data(), out.pos);
  } while (remaining != 0);
}

void TraceWriter::flush(bool wait) {
  if (zstd_ && !buf_.empty()) {
    hand_off();
  } else if (!zstd_) {
    write_out(buf_.data(), buf_.size());
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
  b.queue.push_back(std::move(buf_));
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
    std::string buf = std::move(b.queue.front());
    b.queue.pop_front();
    b.busy = true;
    lock.unlock();
    // ZSTD_e_flush: everything given so far becomes decodable from what is written.
    compress(buf.data(), buf.size(), ZSTD_e_flush);
    buf.clear();
    lock.lock();
    b.busy = false;
    b.spare.push_back(std::move(buf));
    b.changed.notify_all();
  }
}

void TraceWriter::finish_frame() {
  if (!zstd_) return;
  compress(nullptr, 0, ZSTD_e_end);
  zstd_.reset();
}

}  // namespace ft
