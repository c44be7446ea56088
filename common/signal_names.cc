#include "common/signal_names.h"

#include <string.h>

#include <charconv>

namespace ft {

SignalName::SignalName(int sig) {
  auto put = [&](std::string_view s) {
    for (char c : s)
      if (size_ < sizeof text_ - 1) text_[size_++] = c;
  };
  if (const char* abbrev = sigabbrev_np(sig)) {
    put("SIG");
    put(abbrev);
  } else {
    put("signal ");
    auto res = std::to_chars(text_ + size_, text_ + sizeof text_ - 1, sig);
    size_ = static_cast<size_t>(res.ptr - text_);
  }
  text_[size_] = '\0';
}

}  // namespace ft
