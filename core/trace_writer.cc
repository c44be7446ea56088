#include "core/trace_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "core/log.h"

namespace ft {

namespace {
constexpr size_t kFlushAt = 256 * 1024;
}

Result<std::unique_ptr<TraceWriter>> TraceWriter::create(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Error::from_errno(errno, "cannot create trace file " + path);
  std::unique_ptr<TraceWriter> w(new TraceWriter(fd, path));
  w->buf_.reserve(kFlushAt + 4096);
  w->buf_.append(kTraceMagic).append(" ").append(std::to_string(kTraceFormatVersion)).push_back('\n');
  return w;
}

TraceWriter::~TraceWriter() {
  flush();
  if (fd_ >= 0) ::close(fd_);
}

void TraceWriter::write(TraceRecord& r) {
  r.seq = ++seq_;
  buf_.append(format_record(r)).push_back('\n');
  if (pending_since_ == 0) pending_since_ = r.ts_ns ? r.ts_ns : 1;
  if (buf_.size() >= kFlushAt || r.ts_ns >= pending_since_ + kMaxAgeNs) flush();
}

void TraceWriter::flush() {
  const char* p = buf_.data();
  size_t left = buf_.size();
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
  }
  buf_.clear();
  pending_since_ = 0;
}

}  // namespace ft
