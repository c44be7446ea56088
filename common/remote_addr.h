// RemoteAddr: an address in the tracee's address space. A distinct type so it can
// never be confused with (or dereferenced as) a host pointer.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>

namespace ft {

class RemoteAddr {
 public:
  constexpr RemoteAddr() = default;
  constexpr explicit RemoteAddr(uint64_t v) : v_(v) {}

  constexpr uint64_t value() const { return v_; }
  constexpr bool null() const { return v_ == 0; }

  constexpr RemoteAddr operator+(int64_t off) const { return RemoteAddr(v_ + static_cast<uint64_t>(off)); }
  constexpr RemoteAddr operator-(int64_t off) const { return RemoteAddr(v_ - static_cast<uint64_t>(off)); }
  constexpr int64_t operator-(RemoteAddr o) const { return static_cast<int64_t>(v_ - o.v_); }
  constexpr auto operator<=>(const RemoteAddr&) const = default;

 private:
  uint64_t v_ = 0;
};

}  // namespace ft

template <>
struct std::hash<ft::RemoteAddr> {
  size_t operator()(ft::RemoteAddr a) const noexcept { return std::hash<uint64_t>()(a.value()); }
};
