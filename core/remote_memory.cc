#include "core/remote_memory.h"

#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

#include "core/log.h"

namespace ft {

RemoteMemory::~RemoteMemory() { close(); }

Status RemoteMemory::open() {
  std::string path = "/proc/" + std::to_string(pid_) + "/mem";
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return Error::from_errno(errno, "cannot open " + path);
  close();
  fd_ = fd;
  return {};
}

void RemoteMemory::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<size_t> RemoteMemory::read(RemoteAddr addr, std::span<uint8_t> buf) const {
  size_t done = 0;
  while (done < buf.size()) {
    ssize_t n = ::pread(fd_, buf.data() + done, buf.size() - done,
                        static_cast<off_t>(addr.value() + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (done > 0) break;
      return Error::from_errno(errno, fmt::format("cannot read memory of process {} at {:#x}", pid_,
                                                  addr.value()));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
    // /proc/PID/mem stops short only where the memory stops being readable: asking
    // again would fail.
    if (done < buf.size()) break;
  }
  if (done == 0 && !buf.empty())
    return Error::msg(fmt::format("cannot read memory of process {} at {:#x}", pid_, addr.value()));
  return done;
}

Status RemoteMemory::read_exact(RemoteAddr addr, std::span<uint8_t> buf) const {
  auto n = read(addr, buf);
  if (!n) return n.error();
  if (*n != buf.size())
    return Error::msg(fmt::format("short read of process {} memory at {:#x}", pid_, addr.value()));
  return {};
}

Status RemoteMemory::write(RemoteAddr addr, std::span<const uint8_t> data) const {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::pwrite(fd_, data.data() + done, data.size() - done,
                         static_cast<off_t>(addr.value() + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return Error::from_errno(n < 0 ? errno : EIO,
                               fmt::format("cannot write memory of process {} at {:#x}", pid_,
                                           addr.value() + done));
    done += static_cast<size_t>(n);
  }
  return {};
}

Result<uint64_t> RemoteMemory::read_u64(RemoteAddr addr) const {
  uint64_t v = 0;
  if (auto s = read_exact(addr, {reinterpret_cast<uint8_t*>(&v), sizeof v}); !s) return s.error();
  return v;
}

Status RemoteMemory::write_u64(RemoteAddr addr, uint64_t v) const {
  return write(addr, {reinterpret_cast<const uint8_t*>(&v), sizeof v});
}

Result<std::string> RemoteMemory::read_string(RemoteAddr addr, size_t max) const {
  std::string out;
  uint8_t chunk[256];
  while (out.size() < max) {
    // Never read across a page boundary in one go: the next page may be unmapped.
    uint64_t a = addr.value() + out.size();
    size_t to_page = 4096 - (a & 4095);
    size_t want = std::min({sizeof chunk, to_page, max - out.size()});
    auto n = read(RemoteAddr(a), {chunk, want});
    if (!n) {
      if (out.empty()) return n.error();
      break;
    }
    for (size_t i = 0; i < *n; ++i) {
      if (chunk[i] == 0) return out;
      out.push_back(static_cast<char>(chunk[i]));
    }
    if (*n < want) break;
  }
  return out;
}

}  // namespace ft

namespace ft {

Result<uint64_t> RemoteMemory::peek(pid_t stopped_tid, RemoteAddr addr) const {
  errno = 0;
  long v = ::ptrace(PTRACE_PEEKDATA, stopped_tid, reinterpret_cast<void*>(addr.value()), nullptr);
  if (v == -1 && errno != 0) return read_u64(addr);
  return static_cast<uint64_t>(v);
}

Status RemoteMemory::poke(pid_t stopped_tid, RemoteAddr addr, uint64_t v) const {
  if (::ptrace(PTRACE_POKEDATA, stopped_tid, reinterpret_cast<void*>(addr.value()), reinterpret_cast<void*>(v)) == 0)
    return {};
  return write_u64(addr, v);
}

namespace {

Status move_pieces(pid_t pid, std::span<const RemoteMemory::Piece> pieces, bool write) {
  // Most callers move a few pieces: those stay on the stack.
  constexpr size_t kOnStack = 8;
  if (pieces.size() > IOV_MAX) return Error::msg("too many pieces");
  iovec local_fixed[kOnStack], remote_fixed[kOnStack];
  std::vector<iovec> local_many, remote_many;
  iovec* local = local_fixed;
  iovec* remote = remote_fixed;
  if (pieces.size() > kOnStack) {
    local_many.resize(pieces.size());
    remote_many.resize(pieces.size());
    local = local_many.data();
    remote = remote_many.data();
  }
  size_t total = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    local[i] = {pieces[i].local, pieces[i].len};
    remote[i] = {reinterpret_cast<void*>(pieces[i].addr.value()), pieces[i].len};
    total += pieces[i].len;
  }
  ssize_t n = write ? ::process_vm_writev(pid, local, pieces.size(), remote, pieces.size(), 0)
                    : ::process_vm_readv(pid, local, pieces.size(), remote, pieces.size(), 0);
  if (n < 0) return Error::from_errno(errno, fmt::format("cannot {} memory of process {}", write ? "write" : "read", pid));
  if (static_cast<size_t>(n) != total)
    return Error::msg(fmt::format("cannot {} memory of process {}: {} of {} bytes", write ? "write" : "read", pid, n, total));
  return {};
}

}  // namespace

Status RemoteMemory::read_pieces(std::span<const Piece> pieces) const { return move_pieces(pid_, pieces, false); }
Status RemoteMemory::write_pieces(std::span<const Piece> pieces) const { return move_pieces(pid_, pieces, true); }

}  // namespace ft
