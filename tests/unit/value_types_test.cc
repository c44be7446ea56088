// The type codes calltrace records for arguments and return values ("i4,s,f8>v",
// postproc/value_types.h): parsing, refusing what is not a valid list, and formatting a
// raw register value by its type.
#include <gtest/gtest.h>

#include <string_view>

#include "postproc/value_types.h"

namespace ft::post {
namespace {

TEST(ValueTypes, ParseAndFormat) {
  auto t = parse_value_types("i4,u8,p,s>v");
  ASSERT_TRUE(t.has_value());
  ASSERT_EQ(t->args.size(), 4u);
  EXPECT_EQ(t->args[0].kind, 'i');
  EXPECT_EQ(t->args[0].size, 4u);
  EXPECT_EQ(t->ret.kind, 'v');
  for (std::string_view good : {">?", "p,p,p,p,p,p,f8,f8,f8,f8,f8,f8,f8,f8>v"}) {  // 14 arguments
    EXPECT_TRUE(parse_value_types(good).has_value()) << good;
  }
  for (std::string_view bad : {
           "i4",                                      // no '>'
           "i4,>i4",                                  // empty code
           "i3>i4",                                   // no such size
           "p,p,p,p,p,p,f8,f8,f8,f8,f8,f8,f8,f8,p>v",  // 15 arguments
           "f>v",                                     // a float needs its size
       }) {
    EXPECT_FALSE(parse_value_types(bad).has_value()) << bad;
  }
  EXPECT_EQ(format_value({'i', 4, ""}, 0xffffffff), "-1");
  EXPECT_EQ(format_value({'i', 8, ""}, 0x8000000000000000ull), "-9223372036854775808");
  EXPECT_EQ(format_value({'u', 1, ""}, 0x1ff), "255");
  EXPECT_EQ(format_value({'u', 8, ""}, ~0ull), "18446744073709551615");
  EXPECT_EQ(format_value({'p', 8, ""}, 0x1000), "0x1000");
  EXPECT_EQ(format_value({'v', 8, ""}, 7), "");
  EXPECT_EQ(format_value({'f', 8, ""}, 0x3ff8000000000000ull), "1.5");   // 1.5 as a double
  EXPECT_EQ(format_value({'f', 4, ""}, 0xdeadbeefc0200000ull), "-2.5");  // low 4 bytes: -2.5f
}

TEST(ValueTypes, SymbolicSets) {
  auto t = parse_value_types("s,i4=O_flags>i4");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->args[1].format, "O_flags");
  EXPECT_EQ(format_value(t->args[1], 0x80241), "O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC");  // 01101 | 02000000
  EXPECT_EQ(format_value(t->args[1], 0), "O_RDONLY");
  for (std::string_view bad : {"p=O_flags>v", "i4=>v"}) EXPECT_FALSE(parse_value_types(bad).has_value()) << bad;
}

TEST(ValueTypes, StructuresInTwoRegisters) {
  auto t = parse_value_types("o16,i4,o>v");
  ASSERT_TRUE(t.has_value());
  ASSERT_EQ(t->args.size(), 3u);
  EXPECT_EQ(int_registers(t->args[0]), 2u);
  EXPECT_EQ(type_code(t->args[0]), "o16");
  EXPECT_EQ(int_registers(t->args[1]), 1u);
  EXPECT_EQ(int_registers(t->args[2]), 1u);
  EXPECT_EQ(type_code(t->args[2]), "o");
  EXPECT_FALSE(parse_value_types("o25>v").has_value());
  EXPECT_FALSE(parse_value_types("o30>v").has_value());
  EXPECT_FALSE(parse_value_types("o8>v").has_value());
}

TEST(ValueTypes, GoSlicesInThreeRegisters) {
  auto t = parse_value_types("o24,u1,o16>i8");
  ASSERT_TRUE(t.has_value());
  ASSERT_EQ(t->args.size(), 3u);
  EXPECT_EQ(int_registers(t->args[0]), 3u);
  EXPECT_EQ(type_code(t->args[0]), "o24");
  EXPECT_EQ(int_registers(t->args[1]), 1u);
  EXPECT_EQ(int_registers(t->args[2]), 2u);
}

}  // namespace
}  // namespace ft::post
