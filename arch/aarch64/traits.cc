#include <elf.h>

#include "arch/traits_table.h"

namespace ft::arch {
namespace {

// DWARF register numbers (DWARF for the Arm 64-bit Architecture): x0..x30 are 0..30.
constexpr Reg kX0 = 0, kX1 = 1, kX2 = 2, kX3 = 3, kX4 = 4, kX5 = 5, kX8 = 8, kX29 = 29, kX30 = 30,
              kSp = 31;

constexpr Reg kGoArgs[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};  // x0..x15

constexpr uint8_t kBrk0[] = {0x00, 0x00, 0x20, 0xd4};  // brk #0
constexpr uint8_t kSyscallStub[] = {0x01, 0x00, 0x00, 0xd4,   // svc #0
                                    0x00, 0x00, 0x20, 0xd4};  // brk #0

}  // namespace

const Traits kAArch64Traits = {
    .arch = Arch::AArch64,
    .name = "aarch64",
    .title = "AArch64",
    .elf_machine = EM_AARCH64,
    .trap = kBrk0,
    .trap_pc_advance = 0,  // the exception reports the brk's own address
    .stack_pointer = kSp,
    .frame_pointer = kX29,
    .go_g = 28,
    .go_args = kGoArgs,
    .syscall = {.number = kX8,
                .args = {kX0, kX1, kX2, kX3, kX4, kX5},
                .ret = kX0,
                .restart = kNoReg,  // NT_ARM_SYSTEM_CALL register set
                .no_restart = ~uint64_t{0},
                .stub = kSyscallStub,
                .insn_size = 4},
    .call = {.args = {kX0, kX1, kX2, kX3, kX4, kX5},
             .ret = kX0,
             .ret2 = kX1,
             .zero = kNoReg,
             .return_address = CallConvention::ReturnAddress::LinkRegister,
             .link = kX30,
             .stack_align = 16},
    .return_stub = nullptr,
    .recorder = nullptr,
    .plt_relocations = {.jump_slot = R_AARCH64_JUMP_SLOT, .glob_dat = R_AARCH64_GLOB_DAT, .irelative = R_AARCH64_IRELATIVE},
    .plt_header_size = 32,
    .plt_entry_size = 16,
    .plt_max_stub_size = 24,  // 16 bytes, 24 with BTI
    .decode_plt = decode_plt_aarch64,
    .relocate = relocate_aarch64,
    .plan_entry_patch = plan_entry_patch_aarch64,
    .branch_targets = branch_targets_aarch64,
    .is_return_address = is_return_address_aarch64,
    .function_exits = function_exits_aarch64,
    .arg_registers = arg_registers_aarch64,
};

}  // namespace ft::arch
