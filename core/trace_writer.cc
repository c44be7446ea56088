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
  std::unique_ptr<TraceWriter> w(new TraceWriter(fd, path));
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

TraceWriter::~TraceWriter() {
  flush();
  if (auto s = publish(); !s) log::error("{}", s.error().message);
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
