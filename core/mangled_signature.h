// MangledSignature: the parameters of a C++ function read from its demangled name,
// for modules without DWARF. An Itanium-mangled name encodes the parameter types
// (`_ZN3geo5Shape5scaleEdi` -> "geo::Shape::scale(double, int)"), so their registers
// are known; the return type is not encoded (except for template instances) and is
// left unknown, so the return value is shown raw.
//
// Member functions get `this` first. The demangled text alone does not say whether
// "a::f" is a member of class a or a function of namespace a, so a function counts as
// a member when its name says so (a const/volatile/ref-qualified function, a
// constructor or destructor) or when its qualifier is a class the module has a
// constructor, destructor or const member function of (`classes`). A static member
// function of such a class is taken for a member too: its first value is shown as
// `this`. A function that returns a class in memory passes the return slot's address
// first; the name cannot tell, so its arguments are shown one register late.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>

#include "core/dwarf_params.h"

namespace ft {

// The class a member function belongs to, if its name says it is one: "ns::Foo::bar(int) const"
// -> "ns::Foo", "ns::Foo::Foo(int)" -> "ns::Foo"; "" otherwise.
std::string class_named_by(std::string_view demangled);

// nullopt when the name is not a demangled function name or a parameter type is not
// understood.
std::optional<Signature> mangled_signature(std::string_view demangled,
                                           const std::unordered_set<std::string>& classes);

}  // namespace ft
