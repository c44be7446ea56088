// RemoteMemory: typed reads and writes of a tracee's memory through /proc/PID/mem.
// One pread/pwrite moves a whole window (a stack range, a slot's code) in one syscall,
// where PTRACE_PEEKDATA would need one per 8 bytes. Writes through /proc/PID/mem use
// FOLL_FORCE, so they reach read-only text and the r-x out-of-line area
// (proc(5), /proc/pid/mem; mm/gup.c). The file is bound to the address space it was
// opened on: after exec it must be opened again (open()).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>

#include "common/remote_addr.h"
#include "common/result.h"

namespace ft {

class RemoteMemory {
 public:
  explicit RemoteMemory(pid_t pid) : pid_(pid) {}
  ~RemoteMemory();
  RemoteMemory(const RemoteMemory&) = delete;
  RemoteMemory& operator=(const RemoteMemory&) = delete;

  Status open();
  void close();

  // Reads up to buf.size() bytes; returns how many could be read (a short read stops
  // at the first unmapped page). Error only when nothing could be read.
  Result<size_t> read(RemoteAddr addr, std::span<uint8_t> buf) const;
  Status read_exact(RemoteAddr addr, std::span<uint8_t> buf) const;
  Status write(RemoteAddr addr, std::span<const uint8_t> data) const;

  Result<uint64_t> read_u64(RemoteAddr addr) const;
  Status write_u64(RemoteAddr addr, uint64_t v) const;
  // One aligned-or-not 8-byte word through a ptrace-stopped thread of the process
  // (PTRACE_PEEKDATA/POKEDATA): cheaper than /proc/PID/mem for a single word, which
  // allocates a bounce page per call. Falls back to /proc/PID/mem on failure.
  Result<uint64_t> peek(pid_t stopped_tid, RemoteAddr addr) const;
  Status poke(pid_t stopped_tid, RemoteAddr addr, uint64_t v) const;
  // Several pieces (up to IOV_MAX) in one system call (process_vm_readv/writev), each whole or the
  // call fails. Only for memory the process itself may read or write (its stack, its
  // data): these calls do not override page protections.
  struct Piece {
    RemoteAddr addr;
    void* local;
    size_t len;
  };
  Status read_pieces(std::span<const Piece> pieces) const;
  Status write_pieces(std::span<const Piece> pieces) const;
  // A NUL-terminated string of at most max bytes (longer ones are cut).
  Result<std::string> read_string(RemoteAddr addr, size_t max) const;

  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
  int fd_ = -1;
};

}  // namespace ft
