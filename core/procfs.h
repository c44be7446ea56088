// Small questions answered from /proc (proc(5)) and the kernel: thread groups, shared
// address spaces, links, command lines, and where a program name leads in PATH.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

namespace ft {

// The text after "NAME:" on a line of /proc/TID/status (a thread's own view: SigPnd
// is its private pending set), empty when there is none.
std::string status_field(pid_t tid, std::string_view name);
pid_t tgid_of(pid_t tid);                  // 0 when unknown
bool same_address_space(pid_t a, pid_t b);  // kcmp(2) KCMP_VM
std::string read_link(const std::string& path);
// The executable of a process, without the " (deleted)" of a file removed or replaced
// since it was started.
std::string exe_of(pid_t pid);
// /proc/PID/cmdline as one shell-quoted line.
std::string read_cmdline(pid_t pid);
// execvp's search: a name with a slash as is, else the first executable regular file
// in PATH (empty when none).
std::string find_in_path(const std::string& prog);

}  // namespace ft
