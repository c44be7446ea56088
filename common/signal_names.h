// Signal names as functracer writes them in trace records ("signal" and "killed",
// doc/trace-format.md), in the stream, in its messages and in reports of traces
// whose records carry no name: "SIGSEGV" for 11, "signal 42" for a number without an
// abbreviation (real-time signals, numbers out of range).
//
// SignalName formats into a buffer of its own, without allocating: the engine's
// fatal-signal handlers use it (signal-safety(7)). glibc's sigabbrev_np(3) only
// indexes a constant table.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ft {

class SignalName {
 public:
  explicit SignalName(int sig);
  const char* c_str() const { return text_; }
  std::string_view view() const { return {text_, size_}; }

 private:
  char text_[24];  // "signal -2147483648" at the most
  size_t size_ = 0;
};

inline std::string signal_name(int sig) { return std::string(SignalName(sig).view()); }

}  // namespace ft
