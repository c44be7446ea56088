// Unit tests of the small pieces in common/ that the engine and the post-processor
// share: hex, signal names, the clock. Demangling (demangle_test.cc) and the load
// bias (load_bias_test.cc, on real ELF files and real mappings) have their own.
#include <gtest/gtest.h>
#include <signal.h>
#include <time.h>

#include <charconv>
#include <cstdint>
#include <string>

#include "common/clock.h"
#include "common/hex.h"
#include "common/signal_names.h"

namespace ft {
namespace {

TEST(Hex, BytesTwoDigitsEachInOrder) {
  const unsigned char bytes[] = {0x0a, 0xff, 0x00, 0x5c};
  EXPECT_EQ(bytes_to_hex(bytes), "0aff005c");
  EXPECT_EQ(bytes_to_hex({}), "");
  const unsigned char all[] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
  EXPECT_EQ(bytes_to_hex(all), "0123456789abcdef");
}

TEST(Hex, NumberLikeHashXFormat) {
  EXPECT_STREQ(HexNumber(0).c_str(), "0x0");
  EXPECT_STREQ(HexNumber(0x7f00).c_str(), "0x7f00");
  EXPECT_STREQ(HexNumber(UINT64_MAX).c_str(), "0xffffffffffffffff");
  // Every digit count, against the library's formatting.
  for (int shift = 0; shift < 64; ++shift) {
    for (uint64_t v : {uint64_t{1} << shift, (uint64_t{1} << shift) - 1, (uint64_t{0xa5} << shift)}) {
      char want[24] = {'0', 'x'};
      auto res = std::to_chars(want + 2, want + sizeof want, v, 16);
      EXPECT_EQ(HexNumber(v).view(), std::string_view(want, static_cast<size_t>(res.ptr - want)));
    }
  }
}

// ---------------------------------------------------------------------------
// Signal names

TEST(SignalNames, NamedSignals) {
  EXPECT_EQ(signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(signal_name(SIGUSR1), "SIGUSR1");
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGHUP), "SIGHUP");
  EXPECT_STREQ(SignalName(SIGABRT).c_str(), "SIGABRT");
  EXPECT_EQ(SignalName(SIGBUS).view(), "SIGBUS");
}

TEST(SignalNames, NumbersWithoutName) {
  EXPECT_EQ(signal_name(SIGRTMIN + 1), "signal " + std::to_string(SIGRTMIN + 1));
  EXPECT_EQ(signal_name(0), "signal 0");
  EXPECT_EQ(signal_name(-1), "signal -1");
  EXPECT_EQ(signal_name(INT32_MIN), "signal -2147483648");
  EXPECT_STREQ(SignalName(1000).c_str(), "signal 1000");
}

// ---------------------------------------------------------------------------
// Clock

TEST(Clock, MonotonicNanoseconds) {
  timespec before{};
  clock_gettime(CLOCK_MONOTONIC, &before);
  uint64_t a = monotonic_ns();
  uint64_t b = monotonic_ns();
  timespec after{};
  clock_gettime(CLOCK_MONOTONIC, &after);
  auto ns = [](const timespec& ts) {
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  };
  EXPECT_LE(ns(before), a);
  EXPECT_LE(a, b);
  EXPECT_LE(b, ns(after));
}

}  // namespace
}  // namespace ft
