// Result<T>: the one error regime for failures of the environment (a process that
// vanished, a file that is not ELF, a permission refused). Broken invariants are not
// Results: they are FT_CHECK failures (see check.h).
#pragma once

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <variant>

namespace ft {

struct Error {
  int code = 0;         // errno value when the failure came from the system, else 0
  std::string message;  // one line, names the thing that failed

  static Error from_errno(int err, std::string what) {
    return Error{err, std::move(what) + ": " + std::strerror(err)};
  }
  static Error msg(std::string what) { return Error{0, std::move(what)}; }
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}             // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}         // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : err_(std::move(error)), ok_(false) {}  // NOLINT

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return err_; }

 private:
  Error err_;
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace ft
