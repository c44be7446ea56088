// The prototype language (core/c_prototype.h), the built-in libc table, parameter
// types from demangled C++ names (core/mangled_signature.h), symbolic values
// (functracer/symbolic_values.h) and the registers the calling convention gives them.
#include <fcntl.h>
#include <locale.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include "arch/arch.h"
#include "core/builtin_prototypes.h"
#include "core/c_prototype.h"
#include "core/mangled_signature.h"
#include "core/register_signature.h"
#include "functracer/symbolic_values.h"

namespace ft {
namespace {

using Kind = ParamInfo::Kind;

CPrototype parse(std::string_view text) {
  auto p = parse_c_prototype(text);
  EXPECT_TRUE(p.ok()) << text << ": " << (p.ok() ? "" : p.error().message);
  return p.ok() ? *p : CPrototype{};
}

std::string error_of(std::string_view text) {
  auto p = parse_c_prototypes(text, "protos.h");
  return p.ok() ? "(no error)" : p.error().message;
}

TEST(CPrototype, IntegersAndNames) {
  CPrototype p = parse("int add3(int a, int b, int c);");
  EXPECT_EQ(p.name, "add3");
  ASSERT_EQ(p.sig.params.size(), 3u);
  EXPECT_EQ(p.sig.params[1].name, "b");
  EXPECT_EQ(p.sig.params[1].kind, Kind::Integer);
  EXPECT_EQ(p.sig.params[1].size, 4);
  EXPECT_TRUE(p.sig.params[1].is_signed);
  EXPECT_FALSE(p.sig.returns_void);
  EXPECT_EQ(p.sig.ret.size, 4);
}

TEST(CPrototype, StringsPointersAndTypedefs) {
  CPrototype p = parse("size_t mystrlen(const char *s)");
  ASSERT_EQ(p.sig.params.size(), 1u);
  EXPECT_EQ(p.sig.params[0].kind, Kind::String);
  EXPECT_EQ(p.sig.ret.kind, Kind::Integer);
  EXPECT_EQ(p.sig.ret.size, 8);
  EXPECT_FALSE(p.sig.ret.is_signed);
  p = parse("char *strtok(char *s, const char * const delim);");
  EXPECT_EQ(p.sig.ret.kind, Kind::String);
  EXPECT_EQ(p.sig.params[1].kind, Kind::String);
  p = parse("long strtol(const char *s, char **end, int base);");
  EXPECT_EQ(p.sig.params[1].kind, Kind::Pointer);  // char ** is not a string
  p = parse("int f(unsigned char *bytes, struct stat *st, FILE *f, void *v, char name[]);");
  EXPECT_EQ(p.sig.params[0].kind, Kind::String);
  EXPECT_EQ(p.sig.params[1].kind, Kind::Pointer);
  EXPECT_EQ(p.sig.params[2].kind, Kind::Pointer);
  EXPECT_EQ(p.sig.params[3].kind, Kind::Pointer);
  EXPECT_EQ(p.sig.params[4].kind, Kind::String);
  EXPECT_EQ(p.sig.params[4].name, "name");
}

TEST(CPrototype, FloatsAndWidths) {
  CPrototype p = parse("double scale(double x, int n);");
  EXPECT_EQ(p.sig.params[0].kind, Kind::Float);
  EXPECT_EQ(p.sig.params[0].size, 8);
  EXPECT_EQ(p.sig.ret.kind, Kind::Float);
  p = parse("float f(float, long double ld, unsigned short u, signed char c, long long ll, _Bool b);");
  EXPECT_EQ(p.sig.params[0].size, 4);
  EXPECT_EQ(p.sig.params[1].kind, Kind::Other);
  EXPECT_EQ(p.sig.params[2].size, 2);
  EXPECT_FALSE(p.sig.params[2].is_signed);
  EXPECT_EQ(p.sig.params[3].size, 1);
  EXPECT_TRUE(p.sig.params[3].is_signed);
  EXPECT_EQ(p.sig.params[4].size, 8);
  EXPECT_EQ(p.sig.params[5].size, 1);
}

TEST(CPrototype, VoidVariadicFunctionPointersEnums) {
  CPrototype p = parse("void f(void);");
  EXPECT_TRUE(p.sig.returns_void);
  EXPECT_TRUE(p.sig.params.empty());
  p = parse("int printf(const char *format, ...);");
  EXPECT_TRUE(p.variadic);
  EXPECT_EQ(p.sig.params.size(), 1u);
  p = parse("int atexit(void (*function)(void), enum color c);");
  EXPECT_EQ(p.sig.params[0].kind, Kind::Pointer);
  EXPECT_EQ(p.sig.params[0].name, "function");
  EXPECT_EQ(p.sig.params[1].kind, Kind::Integer);
  p = parse("int open(const char *path, O_flags flags, ...);");
  EXPECT_EQ(p.sig.params[1].format, "O_flags");
  EXPECT_EQ(p.sig.params[1].size, 4);
}

TEST(CPrototype, FilesSkipCommentsAndNameTheBadLine) {
  auto ok = parse_c_prototypes("# header\n\n// a comment\nint a(int x); /* trailing */\n/* one\n two */\nint b(void);\n",
                               "p.h");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->size(), 2u);
  EXPECT_EQ(error_of("int a(int);\nint b(frob x);\n"), "protos.h:2: unknown type 'frob' in 'frob' (parameter 1 of 'b')");
  EXPECT_EQ(error_of("int a(int x"), "protos.h:1: missing ')' after the parameters of 'a'");
  EXPECT_EQ(error_of("int a;"), "protos.h:1: no parameter list in 'int a;'");
  EXPECT_EQ(error_of("int a(..., int x);"), "protos.h:1: '...' is not the last parameter of 'a'");
  EXPECT_EQ(error_of("int a(int x) b;"), "protos.h:1: unexpected 'b' after the parameters of 'a'");
  EXPECT_EQ(error_of("struct s a(int x);"),
            "protos.h:1: 'a' returns a struct or union by value, whose registers depend on its layout: declare it as "
            "returning void");
  EXPECT_EQ(error_of("int a(unsigned signed x);"), "protos.h:1: both signed and unsigned in 'unsigned signed' (parameter 1 of 'a')");
  EXPECT_EQ(error_of("int a(int x) $"), "protos.h:1: unexpected '$'");
  EXPECT_EQ(error_of("/* open"), "protos.h: unterminated /* comment");
}

TEST(BuiltinPrototypes, TableParsesAndCoversTheCommonFunctions) {
  const auto& table = builtin_prototypes();
  EXPECT_GT(table.size(), 150u);
  auto find = [&](const std::string& n) -> const CPrototype* {
    for (const auto& p : table)
      if (p.name == n) return &p;
    return nullptr;
  };
  for (const char* n : {"open", "strlen", "setlocale", "malloc", "fork", "clock_gettime", "socket", "pow"})
    EXPECT_NE(find(n), nullptr) << n;
  EXPECT_EQ(find("setlocale")->sig.params[0].format, "LC_category");
  EXPECT_EQ(find("setlocale")->sig.ret.kind, Kind::String);
  EXPECT_TRUE(builtin_prototypes_apply("/usr/lib/x86_64-linux-gnu/libc.so.6"));
  EXPECT_TRUE(builtin_prototypes_apply("/lib/x86_64-linux-gnu/libm.so.6"));
  EXPECT_FALSE(builtin_prototypes_apply("/usr/lib/x86_64-linux-gnu/libcrypt.so.1"));
  EXPECT_FALSE(builtin_prototypes_apply("/usr/bin/ls"));
}

TEST(SymbolicValues, FlagsAndEnumerations) {
  EXPECT_EQ(symbolic::format("O_flags", O_RDONLY), "O_RDONLY");
  EXPECT_EQ(symbolic::format("O_flags", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC), "O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC");
  EXPECT_EQ(symbolic::format("O_flags", O_RDWR | O_SYNC), "O_RDWR|O_SYNC");
  EXPECT_EQ(symbolic::format("O_flags", O_RDWR | O_TMPFILE), "O_RDWR|O_TMPFILE");
  EXPECT_EQ(symbolic::format("O_flags", 0x40000000), "O_RDONLY|0x40000000");
  EXPECT_EQ(symbolic::format("LC_category", LC_ALL), "LC_ALL");
  EXPECT_EQ(symbolic::format("LC_category", 99), "99");
  EXPECT_EQ(symbolic::format("AT_dirfd", AT_FDCWD), "AT_FDCWD");
  EXPECT_EQ(symbolic::format("AT_dirfd", 5), "5");
  EXPECT_EQ(symbolic::format("SOCK_type", SOCK_STREAM | SOCK_CLOEXEC), "SOCK_STREAM|SOCK_CLOEXEC");
  EXPECT_EQ(symbolic::format("PROT_flags", 0), "PROT_NONE");
  EXPECT_EQ(symbolic::format("ACCESS_mode", 0), "F_OK");
  EXPECT_EQ(symbolic::format("SIG_number", 9), "SIGKILL");
  EXPECT_EQ(symbolic::format("no_such_set", 7), "7");
}

TEST(MangledSignature, ParameterTypesAndThis) {
  std::unordered_set<std::string> none;
  auto s = mangled_signature("geo::Shape::scaled(double, int) const", none);
  ASSERT_TRUE(s);
  ASSERT_EQ(s->params.size(), 3u);
  EXPECT_EQ(s->params[0].name, "this");
  EXPECT_EQ(s->params[1].kind, Kind::Float);
  EXPECT_EQ(s->params[2].kind, Kind::Integer);
  s = mangled_signature("geo::Shape::Shape(double)", none);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->params[0].name, "this");
  EXPECT_TRUE(s->returns_void);
  // A namespace function is no member; a class the module has a constructor of is.
  s = mangled_signature("geo::area(int, unsigned char, char const*)", none);
  ASSERT_TRUE(s);
  ASSERT_EQ(s->params.size(), 3u);
  EXPECT_EQ(s->params[1].size, 1);
  EXPECT_EQ(s->params[2].kind, Kind::String);
  s = mangled_signature("geo::Shape::area(int)", {"geo::Shape"});
  EXPECT_EQ(s->params[0].name, "this");
  s = mangled_signature("f(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, "
                        "int (*)(int), long&&)", none);
  ASSERT_TRUE(s);
  ASSERT_EQ(s->params.size(), 3u);
  for (const auto& p : s->params) EXPECT_EQ(p.kind, Kind::Pointer);
  s = mangled_signature("int max<int>(int, int)", none);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->ret.kind, Kind::Integer);
  s = mangled_signature("operator new(unsigned long)", none);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->params.size(), 1u);
  EXPECT_EQ(class_named_by("a::B::~B()"), "a::B");
  EXPECT_EQ(class_named_by("a::f(int)"), "");
  EXPECT_FALSE(mangled_signature("not_a_function", none));
}

TEST(RegisterSignature, PrototypesTakeTheConventionsRegisters) {
  // double scale(double x, int n): x in xmm0, n in edi; the format and the label follow.
  CPrototype p = parse("double scale(double x, int n, O_flags f);");
  RegisterSignature rs = register_signature(arch::host(), p.sig);
  ASSERT_EQ(rs.args.size(), 3u);
  EXPECT_EQ(rs.args[0].reg, FT_REG_FP0);
  EXPECT_EQ(rs.args[1].reg, 0);
  EXPECT_EQ(rs.args[2].reg, 1);
  EXPECT_STREQ(rs.args[2].format, "O_flags");
  EXPECT_EQ(rs.ret_kind, FT_PARAM_FLOAT);
  auto m = mangled_signature("geo::Shape::scaled(double, int) const", {});
  rs = register_signature(arch::host(), *m);
  EXPECT_STREQ(rs.args[0].label, "this");
  EXPECT_EQ(rs.args[0].reg, 0);
  EXPECT_EQ(rs.args[1].reg, FT_REG_FP0);
  EXPECT_EQ(rs.args[2].reg, 1);
  EXPECT_EQ(rs.ret_kind, -1);  // not in the name
}

}  // namespace
}  // namespace ft
