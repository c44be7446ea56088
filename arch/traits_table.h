// The Traits of each architecture (arch/<arch>/traits.cc), for the lookup in
// arch/arch.cc. Callers use arch::traits() and arch::traits_for_machine().
#pragma once

#include "arch/arch.h"

namespace ft::arch {

extern const Traits kX86_64Traits;
extern const Traits kAArch64Traits;

}  // namespace ft::arch
