#include "arch/calling_convention.h"

namespace ft::arch {

ArgRegisters arg_registers_aarch64(const FunctionType& fn) {
  // A large struct's address goes in x8, which x0 does not hold on return; floats in
  // v0..v7.
  return assign_in_order(fn, MemoryReturn::OwnRegister, 8);
}

}  // namespace ft::arch
