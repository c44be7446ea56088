#include "core/ptrace.h"

#include <sys/ptrace.h>
#include <sys/uio.h>

#include <cerrno>
#include <iterator>
#include <string>

#include "core/log.h"

namespace ft::ptrace {
namespace {

const char* request_name(__ptrace_request req) {
  switch (req) {
    case PTRACE_SEIZE: return "SEIZE";
    case PTRACE_SETOPTIONS: return "SETOPTIONS";
    case PTRACE_CONT: return "CONT";
    case PTRACE_SINGLESTEP: return "SINGLESTEP";
    case PTRACE_LISTEN: return "LISTEN";
    case PTRACE_DETACH: return "DETACH";
    case PTRACE_INTERRUPT: return "INTERRUPT";
    case PTRACE_GETREGS: return "GETREGS";
    case PTRACE_SETREGS: return "SETREGS";
    case PTRACE_GETFPREGS: return "GETFPREGS";
    case PTRACE_GETEVENTMSG: return "GETEVENTMSG";
    case PTRACE_GETSIGINFO: return "GETSIGINFO";
    case PTRACE_SYSCALL: return "SYSCALL";
    case PTRACE_GET_SYSCALL_INFO: return "GET_SYSCALL_INFO";
    case PTRACE_GETREGSET: return "GETREGSET";
    case PTRACE_SETREGSET: return "SETREGSET";
    default: return "?";
  }
}

Status request(__ptrace_request req, pid_t tid, void* addr, void* data) {
  errno = 0;
  long rc = ::ptrace(req, tid, addr, data);
  if (rc == -1 && errno != 0) {
    int err = errno;
    FT_DEBUG("ptrace({}, {}) failed: {}", request_name(req), tid, std::strerror(err));
    return Error::from_errno(err, std::string("ptrace ") + request_name(req) + " of thread " +
                                      std::to_string(tid));
  }
  FT_DEBUG("ptrace({}, {}, {}, {})", request_name(req), tid, addr, data);
  return {};
}

void* as_data(unsigned long v) { return reinterpret_cast<void*>(v); }

}  // namespace

Status seize(pid_t tid, unsigned long options) { return request(PTRACE_SEIZE, tid, nullptr, as_data(options)); }
Status set_options(pid_t tid, unsigned long options) {
  return request(PTRACE_SETOPTIONS, tid, nullptr, as_data(options));
}
Status singlestep(pid_t tid) { return request(PTRACE_SINGLESTEP, tid, nullptr, nullptr); }
Status cont(pid_t tid, int sig) { return request(PTRACE_CONT, tid, nullptr, as_data(static_cast<unsigned>(sig))); }
Status syscall(pid_t tid, int sig) {
  return request(PTRACE_SYSCALL, tid, nullptr, as_data(static_cast<unsigned>(sig)));
}
Status listen(pid_t tid) { return request(PTRACE_LISTEN, tid, nullptr, nullptr); }
Status detach(pid_t tid, int sig) {
  return request(PTRACE_DETACH, tid, nullptr, as_data(static_cast<unsigned>(sig)));
}
Status interrupt(pid_t tid) { return request(PTRACE_INTERRUPT, tid, nullptr, nullptr); }

Result<Registers> get_regs(pid_t tid) {
  Registers r;
  if (auto s = request(PTRACE_GETREGS, tid, nullptr, &r.raw); !s) return s.error();
  return r;
}

namespace {
uint64_t g_regs_writes[256] = {};
}  // namespace

Status set_regs(pid_t tid, const Registers& regs) {
  ++g_regs_writes[static_cast<unsigned>(tid) % std::size(g_regs_writes)];
  return request(PTRACE_SETREGS, tid, nullptr, const_cast<user_regs_struct*>(&regs.raw));
}

uint64_t regs_writes(pid_t tid) { return g_regs_writes[static_cast<unsigned>(tid) % std::size(g_regs_writes)]; }

Result<user_fpregs_struct> get_fp_regs(pid_t tid) {
  user_fpregs_struct fp{};
  if (auto s = request(PTRACE_GETFPREGS, tid, nullptr, &fp); !s) return s.error();
  return fp;
}

namespace {
constexpr unsigned kNtX86Shstk = 0x204;  // NT_X86_SHSTK (linux/elf.h)

Status shadow_stack_regset(__ptrace_request req, pid_t tid, uint64_t& ssp) {
#if defined(__x86_64__)
  iovec io{&ssp, sizeof ssp};
  return request(req, tid, as_data(kNtX86Shstk), &io);
#else
  (void)req, (void)tid, (void)ssp;
  return Error::msg("no shadow stack on this machine");
#endif
}
}  // namespace

Result<uint64_t> shadow_stack_pointer(pid_t tid) {
  uint64_t ssp = 0;
  if (auto s = shadow_stack_regset(PTRACE_GETREGSET, tid, ssp); !s) return s.error();
  return ssp;
}

Status set_shadow_stack_pointer(pid_t tid, uint64_t ssp) { return shadow_stack_regset(PTRACE_SETREGSET, tid, ssp); }

Result<unsigned long> event_msg(pid_t tid) {
  unsigned long msg = 0;
  if (auto s = request(PTRACE_GETEVENTMSG, tid, nullptr, &msg); !s) return s.error();
  return msg;
}

Result<siginfo_t> siginfo(pid_t tid) {
  siginfo_t si{};
  if (auto s = request(PTRACE_GETSIGINFO, tid, nullptr, &si); !s) return s.error();
  return si;
}

Status set_siginfo(pid_t tid, const siginfo_t& si) {
  siginfo_t copy = si;
  return request(PTRACE_SETSIGINFO, tid, nullptr, &copy);
}

Result<__ptrace_syscall_info> syscall_info(pid_t tid) {
  __ptrace_syscall_info info{};
  if (auto s = request(PTRACE_GET_SYSCALL_INFO, tid, as_data(sizeof info), &info); !s) return s.error();
  return info;
}

}  // namespace ft::ptrace
