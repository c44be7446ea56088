// Unit tests of the small pieces in common/ that the engine and the post-processor
// share: demangling, hex, signal names, the clock. The load bias has its own test
// (load_bias_test.cc), on real ELF files and real mappings.
#include <gtest/gtest.h>
#include <signal.h>
#include <time.h>

#include <charconv>
#include <cstdint>
#include <string>

#include "common/clock.h"
#include "common/demangle.h"
#include "common/hex.h"
#include "common/signal_names.h"

namespace ft {
namespace {

// ---------------------------------------------------------------------------
// Demangling

TEST(Demangle, CxxNames) {
  EXPECT_EQ(demangle("_Z3fooi"), "foo(int)");
  EXPECT_EQ(demangle("_ZN6Worker3runEv"), "Worker::run()");
  EXPECT_EQ(demangle("_ZNK2ns3Foo3barERKSs"), "ns::Foo::bar(std::string const&) const");
  EXPECT_EQ(demangle("_Z3fooi.cold"), "foo(int) [clone .cold]");
}

TEST(Demangle, PltAndVersionSuffixes) {
  EXPECT_EQ(demangle("_Z3fooi@plt"), "foo(int)@plt");
  EXPECT_EQ(demangle("puts@plt"), "puts@plt");
  EXPECT_EQ(demangle("_Znwm@GLIBCXX_3.4"), "operator new(unsigned long)@GLIBCXX_3.4");
  EXPECT_EQ(demangle("memcpy@@GLIBC_2.14"), "memcpy@@GLIBC_2.14");
}

TEST(Demangle, OtherNamesUnchanged) {
  EXPECT_EQ(demangle("main"), "main");
  EXPECT_EQ(demangle("i"), "i");  // would demangle as a type
  EXPECT_EQ(demangle("_Z"), "_Z");
  EXPECT_EQ(demangle("_Zxyz"), "_Zxyz");
  EXPECT_EQ(demangle(""), "");
  EXPECT_EQ(demangle("@plt"), "@plt");
}

TEST(Demangle, StripParameters) {
  EXPECT_EQ(strip_parameters("foo(int)"), "foo");
  EXPECT_EQ(strip_parameters("ns::Foo::bar(std::string const&) const"), "ns::Foo::bar");
  EXPECT_EQ(strip_parameters("operator()(int)"), "operator()");
  EXPECT_EQ(strip_parameters("foo(int) [clone .cold]"), "foo [clone .cold]");
  EXPECT_EQ(strip_parameters("foo(int)@plt"), "foo@plt");
  EXPECT_EQ(strip_parameters("void apply<void (*)(int)>(void (*)(int))"),
            "void apply<void (*)(int)>");
  EXPECT_EQ(strip_parameters("Foo::operator int() &&"), "Foo::operator int");
  EXPECT_EQ(strip_parameters("main"), "main");
  EXPECT_EQ(strip_parameters("puts@plt"), "puts@plt");
  EXPECT_EQ(strip_parameters("(int)"), "(int)");
  EXPECT_EQ(strip_parameters("broken)"), "broken)");
}

TEST(Demangle, Cache) {
  Demangler d;
  EXPECT_EQ(d.full("_Z4facti"), "fact(int)");
  EXPECT_EQ(d.short_name("_Z4facti"), "fact");
  EXPECT_EQ(&d.full("_Z4facti"), &d.full("_Z4facti"));
}

// ---------------------------------------------------------------------------
// Hex

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
