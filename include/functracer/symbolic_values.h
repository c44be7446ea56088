// Symbolic values: integer arguments shown as the constants a C programmer wrote
// (`O_WRONLY|O_CREAT|O_TRUNC`, `LC_ALL`, `AT_FDCWD`) instead of numbers. A prototype
// (-F files, the built-in libc table; doc/functracer.1) names a set with a type name
// such as `O_flags`; the set's name travels with the function to the plugins
// (ft_function.param_formats) and into the trace's "types" field ("i4=O_flags",
// doc/trace-format.md), so the live call log and the post-processor show the same
// text. Header-only so the calltrace plugin, which uses only the public headers, and
// the post-processor share it.
//
// The values are Linux x86-64's, taken from the system headers (fcntl.h, locale.h,
// sys/mman.h, ...) at build time. A value with bits no name covers shows them as a
// number after the names (`O_RDONLY|0x40000000`); an enumerated value without a name
// is shown in decimal.
#pragma once

#include <fcntl.h>
#include <locale.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace ft::symbolic {

struct Name {
  int64_t value;
  const char* name;
};

struct Set {
  const char* name;
  bool flags;           // bits or-ed together; else one value of an enumeration
  const Name* names;    // for flags: the zero name (if any) first, then the bits
  size_t count;
  int64_t access_mask;  // flags whose low bits are an enumerated field (O_ACCMODE)
};

#define FT_SYM(x) {static_cast<int64_t>(x), #x}
// Names that contain others come first (O_SYNC holds O_DSYNC, O_TMPFILE O_DIRECTORY).
inline constexpr Name kOpenFlags[] = {
    FT_SYM(O_RDONLY),   FT_SYM(O_WRONLY),   FT_SYM(O_RDWR),     FT_SYM(O_CREAT),     FT_SYM(O_EXCL),
    FT_SYM(O_NOCTTY),   FT_SYM(O_TRUNC),    FT_SYM(O_APPEND),   FT_SYM(O_NONBLOCK),  FT_SYM(O_SYNC),
    FT_SYM(O_DSYNC),    FT_SYM(O_ASYNC),    FT_SYM(O_DIRECT),   {0100000, "O_LARGEFILE"}, FT_SYM(O_TMPFILE),
    FT_SYM(O_DIRECTORY), FT_SYM(O_NOFOLLOW), FT_SYM(O_NOATIME), FT_SYM(O_CLOEXEC),  FT_SYM(O_PATH),
};
inline constexpr Name kLocaleCategories[] = {
    FT_SYM(LC_CTYPE),   FT_SYM(LC_NUMERIC),     FT_SYM(LC_TIME),      FT_SYM(LC_COLLATE),
    FT_SYM(LC_MONETARY), FT_SYM(LC_MESSAGES),   FT_SYM(LC_ALL),       FT_SYM(LC_PAPER),
    FT_SYM(LC_NAME),    FT_SYM(LC_ADDRESS),     FT_SYM(LC_TELEPHONE), FT_SYM(LC_MEASUREMENT),
    FT_SYM(LC_IDENTIFICATION),
};
inline constexpr Name kProtFlags[] = {FT_SYM(PROT_NONE), FT_SYM(PROT_READ), FT_SYM(PROT_WRITE), FT_SYM(PROT_EXEC)};
inline constexpr Name kMapFlags[] = {
    FT_SYM(MAP_SHARED),  FT_SYM(MAP_PRIVATE),  FT_SYM(MAP_FIXED),    FT_SYM(MAP_ANONYMOUS),
    FT_SYM(MAP_GROWSDOWN), FT_SYM(MAP_DENYWRITE), FT_SYM(MAP_EXECUTABLE), FT_SYM(MAP_LOCKED),
    FT_SYM(MAP_NORESERVE), FT_SYM(MAP_POPULATE), FT_SYM(MAP_NONBLOCK), FT_SYM(MAP_STACK),
    FT_SYM(MAP_HUGETLB), FT_SYM(MAP_FIXED_NOREPLACE),
};
inline constexpr Name kSeekWhence[] = {FT_SYM(SEEK_SET), FT_SYM(SEEK_CUR), FT_SYM(SEEK_END), FT_SYM(SEEK_DATA),
                                       FT_SYM(SEEK_HOLE)};
inline constexpr Name kAtDirfd[] = {FT_SYM(AT_FDCWD)};
inline constexpr Name kAtFlags[] = {FT_SYM(AT_SYMLINK_NOFOLLOW), FT_SYM(AT_REMOVEDIR), FT_SYM(AT_SYMLINK_FOLLOW),
                                    FT_SYM(AT_NO_AUTOMOUNT), FT_SYM(AT_EMPTY_PATH)};
inline constexpr Name kAccessMode[] = {FT_SYM(F_OK), FT_SYM(R_OK), FT_SYM(W_OK), FT_SYM(X_OK)};
inline constexpr Name kAddressFamilies[] = {FT_SYM(AF_UNSPEC), FT_SYM(AF_UNIX),    FT_SYM(AF_INET),
                                            FT_SYM(AF_INET6),  FT_SYM(AF_NETLINK), FT_SYM(AF_PACKET)};
inline constexpr Name kSocketTypes[] = {FT_SYM(SOCK_STREAM), FT_SYM(SOCK_DGRAM),    FT_SYM(SOCK_RAW),
                                        FT_SYM(SOCK_SEQPACKET), FT_SYM(SOCK_NONBLOCK), FT_SYM(SOCK_CLOEXEC)};
inline constexpr Name kClocks[] = {
    FT_SYM(CLOCK_REALTIME),        FT_SYM(CLOCK_MONOTONIC),       FT_SYM(CLOCK_PROCESS_CPUTIME_ID),
    FT_SYM(CLOCK_THREAD_CPUTIME_ID), FT_SYM(CLOCK_MONOTONIC_RAW), FT_SYM(CLOCK_REALTIME_COARSE),
    FT_SYM(CLOCK_MONOTONIC_COARSE), FT_SYM(CLOCK_BOOTTIME),
};
inline constexpr Name kFcntlCommands[] = {FT_SYM(F_DUPFD), FT_SYM(F_GETFD), FT_SYM(F_SETFD), FT_SYM(F_GETFL),
                                          FT_SYM(F_SETFL), FT_SYM(F_GETLK), FT_SYM(F_SETLK), FT_SYM(F_SETLKW),
                                          FT_SYM(F_DUPFD_CLOEXEC)};
inline constexpr Name kWaitOptions[] = {FT_SYM(WNOHANG), FT_SYM(WUNTRACED), FT_SYM(WCONTINUED)};
inline constexpr Name kSignals[] = {
    FT_SYM(SIGHUP),  FT_SYM(SIGINT),  FT_SYM(SIGQUIT), FT_SYM(SIGILL),  FT_SYM(SIGTRAP), FT_SYM(SIGABRT),
    FT_SYM(SIGBUS),  FT_SYM(SIGFPE),  FT_SYM(SIGKILL), FT_SYM(SIGUSR1), FT_SYM(SIGSEGV), FT_SYM(SIGUSR2),
    FT_SYM(SIGPIPE), FT_SYM(SIGALRM), FT_SYM(SIGTERM), FT_SYM(SIGCHLD), FT_SYM(SIGCONT), FT_SYM(SIGSTOP),
    FT_SYM(SIGTSTP), FT_SYM(SIGTTIN), FT_SYM(SIGTTOU), FT_SYM(SIGURG),  FT_SYM(SIGXCPU), FT_SYM(SIGXFSZ),
    FT_SYM(SIGVTALRM), FT_SYM(SIGPROF), FT_SYM(SIGWINCH), FT_SYM(SIGIO), FT_SYM(SIGPWR), FT_SYM(SIGSYS),
};
#undef FT_SYM

template <size_t N>
constexpr Set make_set(const char* name, bool flags, const Name (&names)[N], int64_t access_mask = 0) {
  return Set{name, flags, names, N, access_mask};
}

inline constexpr Set kSets[] = {
    make_set("O_flags", true, kOpenFlags, O_ACCMODE),
    make_set("LC_category", false, kLocaleCategories),
    make_set("PROT_flags", true, kProtFlags),
    make_set("MAP_flags", true, kMapFlags),
    make_set("SEEK_whence", false, kSeekWhence),
    make_set("AT_dirfd", false, kAtDirfd),
    make_set("AT_flags", true, kAtFlags),
    make_set("ACCESS_mode", true, kAccessMode),
    make_set("AF_family", false, kAddressFamilies),
    make_set("SOCK_type", true, kSocketTypes, 0xf),
    make_set("CLOCK_id", false, kClocks),
    make_set("F_command", false, kFcntlCommands),
    make_set("W_options", true, kWaitOptions),
    make_set("SIG_number", false, kSignals),
};

inline const Set* find(std::string_view name) {
  for (const Set& s : kSets)
    if (name == s.name) return &s;
  return nullptr;
}

inline bool known(std::string_view name) { return find(name) != nullptr; }

// The value (an int, sign-extended by the caller) as the set's names; decimal for a
// set that is not known.
inline std::string format(std::string_view set_name, int64_t value) {
  const Set* set = find(set_name);
  if (set == nullptr) return std::to_string(value);
  if (!set->flags) {
    for (size_t i = 0; i < set->count; ++i)
      if (set->names[i].value == value) return set->names[i].name;
    return std::to_string(value);
  }
  std::string out;
  auto add = [&out](const char* n) {
    if (!out.empty()) out += '|';
    out += n;
  };
  uint64_t rest = static_cast<uint64_t>(value);
  // An enumerated field in the low bits (the access mode of open(2), the type of
  // socket(2)): one name for the field's value, the bits above as flags.
  if (set->access_mask != 0) {
    int64_t field = value & set->access_mask;
    for (size_t i = 0; i < set->count; ++i)
      if (set->names[i].value == field && (set->names[i].value & ~set->access_mask) == 0) {
        add(set->names[i].name);
        rest &= ~static_cast<uint64_t>(set->access_mask);
        break;
      }
  }
  for (size_t i = 0; i < set->count && rest != 0; ++i) {
    auto bits = static_cast<uint64_t>(set->names[i].value);
    if (bits == 0 || (set->access_mask != 0 && (bits & ~static_cast<uint64_t>(set->access_mask)) == 0)) continue;
    if ((rest & bits) == bits) {
      add(set->names[i].name);
      rest &= ~bits;
    }
  }
  if (rest != 0) {
    char b[24];
    std::snprintf(b, sizeof b, "%#llx", static_cast<unsigned long long>(rest));
    add(b);
  }
  if (out.empty()) {
    for (size_t i = 0; i < set->count; ++i)
      if (set->names[i].value == 0) return set->names[i].name;
    return "0";
  }
  return out;
}

}  // namespace ft::symbolic
