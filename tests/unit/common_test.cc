// Unit tests of the small pieces in common/ that the engine and the post-processor
// share: demangling, hex, signal names, the clock. The load bias has its own test
// (load_bias_test.cc), on real ELF files and real mappings.
#include <gtest/gtest.h>

#include "common/demangle.h"

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

}  // namespace
}  // namespace ft
