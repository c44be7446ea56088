#include "arch/calling_convention.h"

namespace ft::arch {

ArgRegisters arg_registers_x86_64(const FunctionType& fn) {
  // A large struct's address goes in rdi and comes back in rax; floats in xmm0..xmm7.
  return assign_in_order(fn, MemoryReturn::FirstArgument, 8);
}

}  // namespace ft::arch
