#include "core/procfs.h"

#include <linux/kcmp.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

namespace ft {

std::string status_field(pid_t tid, std::string_view name) {
  std::ifstream f("/proc/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.size() > name.size() && line.starts_with(name) && line[name.size()] == ':')
      return line.substr(name.size() + 1);
  return {};
}

pid_t tgid_of(pid_t tid) { return static_cast<pid_t>(std::atol(status_field(tid, "Tgid").c_str())); }

bool features_say_shadow_stack(std::string_view features) {
  size_t at = 0;
  while (at < features.size()) {
    size_t start = features.find_first_not_of(" \t", at);
    if (start == std::string_view::npos) break;
    size_t end = features.find_first_of(" \t", start);
    if (end == std::string_view::npos) end = features.size();
    if (features.substr(start, end - start) == "shstk") return true;
    at = end;
  }
  return false;
}

bool shadow_stack_on(pid_t tid) { return features_say_shadow_stack(status_field(tid, "x86_Thread_features")); }

bool kernel_offers_shadow_stacks() {
  static const bool offered = [] {
    if (const char* v = std::getenv("FT_ASSUME_SHADOW_STACKS"); v && std::string_view(v) == "1") return true;
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
      if (line.starts_with("flags")) return (line + " ").find(" user_shstk ") != std::string::npos;
    return false;
  }();
  return offered;
}

bool same_address_space(pid_t a, pid_t b) {
  long rc = ::syscall(SYS_kcmp, a, b, KCMP_VM, 0, 0);
  return rc == 0;
}

std::string read_link(const std::string& p) {
  char buf[4096];
  ssize_t n = ::readlink(p.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return {};
  return std::string(buf, static_cast<size_t>(n));
}

std::string exe_of(pid_t pid) {
  std::string exe = read_link("/proc/" + std::to_string(pid) + "/exe");
  static constexpr std::string_view kDeleted = " (deleted)";
  if (exe.ends_with(kDeleted)) exe.resize(exe.size() - kDeleted.size());
  return exe;
}

std::string read_cmdline(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::string out, arg;
  auto flush = [&] {
    bool plain = !arg.empty() && arg.find_first_not_of(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == std::string::npos;
    if (!out.empty()) out += ' ';
    if (plain) {
      out += arg;
    } else {
      out += '\'';
      for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
    arg.clear();
  };
  for (char c : raw) {
    if (c == 0) flush();
    else arg += c;
  }
  if (!arg.empty()) flush();
  return out;
}

std::string find_in_path(const std::string& prog) {
  if (prog.find('/') != std::string::npos) return prog;
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t colon = p.find(':', start);
    if (colon == std::string::npos) colon = p.size();
    std::string dir = p.substr(start, colon - start);
    if (dir.empty()) dir = ".";
    std::string cand = dir + "/" + prog;
    if (::access(cand.c_str(), X_OK) == 0) {
      struct stat st {};
      if (::stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return cand;
    }
    start = colon + 1;
  }
  return {};
}

}  // namespace ft
