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
// Whether thread tid runs with a shadow stack (x86 CET: "shstk" among the
// x86_Thread_features of its status, Linux 6.6 and later).
bool shadow_stack_on(pid_t tid);
// Whether a status line of x86_Thread_features (the text after the colon) says shstk.
bool features_say_shadow_stack(std::string_view features);
// Whether this kernel on this CPU offers shadow stacks to programs (the user_shstk
// flag of /proc/cpuinfo); FT_ASSUME_SHADOW_STACKS=1 says yes on any machine (to test
// how functracer treats programs marked for them).
bool kernel_offers_shadow_stacks();
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
