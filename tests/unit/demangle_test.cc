// Demangling for the reports (common/demangle.h): C++ names with their @plt, symbol
// version and clone suffixes, names that are not mangled, parameters stripped for the
// short form, and the cache.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

#include "common/demangle.h"

namespace ft::post {
namespace {

struct Case {
  std::string_view in;
  std::string_view want;
};

void expect_each(std::string (*fn)(std::string_view), std::initializer_list<Case> cases) {
  for (const Case& c : cases) EXPECT_EQ(fn(c.in), c.want) << "input: " << c.in;
}

TEST(Demangle, CxxNames) {
  expect_each(demangle, {
      {"_Z3fooi", "foo(int)"},
      {"_ZN6Worker3runEv", "Worker::run()"},
      {"_ZNK2ns3Foo3barERKSs", "ns::Foo::bar(std::string const&) const"},
      {"_Z3fooi.cold", "foo(int) [clone .cold]"},
  });
}

TEST(Demangle, PltAndVersionSuffixes) {
  expect_each(demangle, {
      {"_Z3fooi@plt", "foo(int)@plt"},
      {"puts@plt", "puts@plt"},
      {"_Znwm@GLIBCXX_3.4", "operator new(unsigned long)@GLIBCXX_3.4"},
      {"memcpy@@GLIBC_2.14", "memcpy@@GLIBC_2.14"},
  });
}

TEST(Demangle, OtherNamesUnchanged) {
  expect_each(demangle, {
      {"main", "main"},
      {"i", "i"},  // would demangle as a type
      {"_Z", "_Z"},
      {"_Zxyz", "_Zxyz"},
      {"", ""},
      {"@plt", "@plt"},
  });
}

TEST(Demangle, StripParameters) {
  expect_each(strip_parameters, {
      {"foo(int)", "foo"},
      {"ns::Foo::bar(std::string const&) const", "ns::Foo::bar"},
      {"operator()(int)", "operator()"},
      {"foo(int) [clone .cold]", "foo [clone .cold]"},
      {"foo(int)@plt", "foo@plt"},
      {"void apply<void (*)(int)>(void (*)(int))", "void apply<void (*)(int)>"},
      {"Foo::operator int() &&", "Foo::operator int"},
      {"main", "main"},
      {"puts@plt", "puts@plt"},
      {"(int)", "(int)"},
      {"broken)", "broken)"},
  });
}

TEST(Demangle, Cache) {
  Demangler d;
  EXPECT_EQ(d.full("_Z4facti"), "fact(int)");
  EXPECT_EQ(d.short_name("_Z4facti"), "fact");
  EXPECT_EQ(&d.full("_Z4facti"), &d.full("_Z4facti"));
}

}  // namespace
}  // namespace ft::post
