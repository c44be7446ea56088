#include "postproc/trace_input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace ft::post {

namespace {

constexpr unsigned char kZstdMagic[4] = {0x28, 0xB5, 0x2F, 0xFD};

// An unlinked temporary file: O_TMPFILE where the file system has it, else a named
// one removed at once.
Result<int> anonymous_file() {
  const char* dir = std::getenv("TMPDIR");
  std::string d = dir && *dir ? dir : "/tmp";
  int fd = ::open(d.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  std::string tmpl = d + "/functracer-postproc-input.XXXXXX";
  fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd < 0) return Error::from_errno(errno, "cannot create a temporary file in " + d);
  ::unlink(tmpl.c_str());
  return fd;
}

// Copies everything `from` gives into `to`.
Status spool(int from, int to, const std::string& name) {
  std::vector<char> buf(1 << 16);
  while (true) {
    ssize_t n = ::read(from, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::from_errno(errno, name);
    if (n == 0) return {};
    for (ssize_t done = 0; done < n;) {
      ssize_t w = ::write(to, buf.data() + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return Error::from_errno(errno, "copying " + name + " to a temporary file");
      done += w;
    }
  }
}

}  // namespace

Result<std::shared_ptr<TraceInput>> TraceInput::open(const std::string& name) {
  bool is_stdin = name == "-";
  int fd = is_stdin ? STDIN_FILENO : ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error::from_errno(errno, name);
  std::shared_ptr<TraceInput> in(new TraceInput(name, fd, !is_stdin));
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Error::from_errno(errno, name);
  if (S_ISDIR(st.st_mode)) return Error::from_errno(EISDIR, name);
  if (S_ISREG(st.st_mode)) return in;
  // A pipe, a FIFO, a terminal: read once, kept for the passes to come.
  auto tmp = anonymous_file();
  if (!tmp) return tmp.error();
  std::shared_ptr<TraceInput> copy(new TraceInput(name, *tmp, true));
  if (Status s = spool(fd, *tmp, is_stdin ? "standard input" : name); !s) return s.error();
  return copy;
}

TraceInput::~TraceInput() {
  if (owned_) ::close(fd_);
}

ssize_t TraceInput::read_at(void* buf, size_t n, uint64_t offset) const {
  while (true) {
    ssize_t r = ::pread(fd_, buf, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    return r;
  }
}

struct TraceStream::Decoder {
  struct Free {
    void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
  };
  std::unique_ptr<ZSTD_DCtx, Free> ctx{ZSTD_createDCtx()};
  std::vector<char> in = std::vector<char>(ZSTD_DStreamInSize());
  size_t in_pos = 0, in_len = 0;
  bool in_eof = false;
  bool frame_open = false;  // inside a frame: its end not decoded yet
};

TraceStream::TraceStream(std::shared_ptr<TraceInput> input) : input_(std::move(input)) {}
TraceStream::~TraceStream() = default;
TraceStream::TraceStream(TraceStream&&) noexcept = default;
TraceStream& TraceStream::operator=(TraceStream&&) noexcept = default;

size_t TraceStream::read_raw(char* buf, size_t n) {
  if (!error_.empty()) return 0;
  ssize_t r = input_->read_at(buf, n, offset_);
  if (r < 0) {
    error_ = std::string("read error: ") + std::strerror(errno);
    return 0;
  }
  offset_ += static_cast<uint64_t>(r);
  return static_cast<size_t>(r);
}

size_t TraceStream::read(char* buf, size_t n) {
  if (!started_) {
    started_ = true;
    unsigned char magic[sizeof kZstdMagic];
    ssize_t r = input_->read_at(magic, sizeof magic, 0);
    if (r == static_cast<ssize_t>(sizeof magic) && std::memcmp(magic, kZstdMagic, sizeof magic) == 0) {
      zstd_ = std::make_unique<Decoder>();
      if (!zstd_->ctx) {
        error_ = "cannot set up the zstd decoder";
        return 0;
      }
    }
  }
  if (!zstd_) return read_raw(buf, n);
  Decoder& d = *zstd_;
  ZSTD_outBuffer out{buf, n, 0};
  while (error_.empty()) {
    // Called even without new input: the decoder may hold output that did not fit.
    ZSTD_inBuffer in{d.in.data(), d.in_len, d.in_pos};
    size_t out_before = out.pos;
    size_t hint = ZSTD_decompressStream(d.ctx.get(), &out, &in);
    bool progress = in.pos != d.in_pos || out.pos != out_before;
    d.in_pos = in.pos;
    if (ZSTD_isError(hint)) {
      error_ = std::string("corrupt compressed data (zstd: ") + ZSTD_getErrorName(hint) + ")";
      break;
    }
    // A call that neither took nor gave anything leaves the frame as it was.
    if (progress) d.frame_open = hint != 0;
    if (out.pos > 0 || d.in_pos < d.in_len) {
      if (out.pos > 0) break;
      continue;
    }
    if (d.in_eof) break;
    d.in_len = read_raw(d.in.data(), d.in.size());
    d.in_pos = 0;
    if (d.in_len == 0) {
      d.in_eof = true;
      // The input ended while a frame was open: the writer was stopped before it
      // could end it. Everything decodable has been returned.
      cut_inside_frame_ = error_.empty() && d.frame_open;
      break;
    }
  }
  return out.pos;
}

TraceInputs& TraceInputs::instance() {
  static TraceInputs inputs;
  return inputs;
}

Status TraceInputs::add(const std::string& name) {
  if (inputs_.count(name)) return {};
  auto in = TraceInput::open(name);
  if (!in) return in.error();
  inputs_.emplace(name, std::move(*in));
  return {};
}

std::shared_ptr<TraceInput> TraceInputs::find(const std::string& name) const {
  auto it = inputs_.find(name);
  return it == inputs_.end() ? nullptr : it->second;
}

}  // namespace ft::post
