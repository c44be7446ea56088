#include "core/trace_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "core/log.h"

namespace ft {

namespace {
constexpr size_t kFlushAt = 256 * 1024;
}

Result<std::unique_ptr<TraceWriter>> TraceWriter::create(const std::string& path) {
  // A new file, readable by its owner only (0600 whatever the umask): never through
  // a symbolic link or into a file someone else linked there. An old trace of the
  // same name (a reused pid) is a regular file: it is replaced, not rewritten.
  constexpr int kFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = ::open(path.c_str(), kFlags, 0600);
  if (fd < 0 && errno == EEXIST) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
      return Error::msg("cannot create trace file " + path + ": a symbolic link is in the way (not followed)");
    if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      return Error::msg("cannot create trace file " + path + ": something that is not a file is in the way");
    if (::unlink(path.c_str()) != 0) return Error::from_errno(errno, "cannot replace trace file " + path);
    fd = ::open(path.c_str(), kFlags, 0600);
  }
  if (fd < 0) return Error::from_errno(errno, "cannot create trace file " + path);
  // The mode given to open is masked by the umask, which can only take bits away:
  // 0600 it is. fchmod makes it so even if the file system says otherwise (ACLs).
  (void)::fchmod(fd, 0600);
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
