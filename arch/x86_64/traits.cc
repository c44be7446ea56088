#include <elf.h>

#include "arch/traits_table.h"

namespace ft::arch {
namespace {

// DWARF register numbers (System V psABI, x86-64 supplement, figure 3.36).
constexpr Reg kRax = 0, kRdx = 1, kRcx = 2, kRsi = 4, kRdi = 5, kRbp = 6, kRsp = 7, kR8 = 8, kR9 = 9,
              kR10 = 10;

constexpr Reg kGoArgs[] = {kRax, 3 /* rbx */, kRcx, kRdi, kRsi, kR8, kR9, kR10, 11 /* r11 */};

constexpr uint8_t kInt3[] = {0xcc};
constexpr uint8_t kSyscallStub[] = {0x0f, 0x05, 0xcc};  // syscall; int3

}  // namespace

const Traits kX86_64Traits = {
    .arch = Arch::X86_64,
    .name = "x86_64",
    .title = "x86-64",
    .elf_machine = EM_X86_64,
    .trap = kInt3,
    .trap_pc_advance = 1,
    .stack_pointer = kRsp,
    .frame_pointer = kRbp,
    .go_g = 14,
    .go_args = kGoArgs,
    .syscall = {.number = kRax,
                .args = {kRdi, kRsi, kRdx, kR10, kR8, kR9},
                .ret = kRax,
                .restart = kX86_64OrigRax,
                .no_restart = ~uint64_t{0},
                .stub = kSyscallStub,
                .insn_size = 2},
    .call = {.args = {kRdi, kRsi, kRdx, kRcx, kR8, kR9},
             .ret = kRax,
             .ret2 = kRdx,
             .zero = kRax,
             .return_address = CallConvention::ReturnAddress::Pushed,
             .link = kNoReg,
             .stack_align = 16},
    .return_stub = &kX86_64ReturnStub,
    .recorder = &kX86_64RecorderStubs,
    .plt_relocations = {.jump_slot = R_X86_64_JUMP_SLOT, .glob_dat = R_X86_64_GLOB_DAT, .irelative = R_X86_64_IRELATIVE},
    .plt_header_size = 16,
    .plt_entry_size = 16,
    .plt_max_stub_size = 16,
    .decode_plt = decode_plt_x86_64,
    .relocate = relocate_x86_64,
    .plan_entry_patch = plan_entry_patch_x86_64,
    .branch_targets = branch_targets_x86_64,
    .is_return_address = is_return_address_x86_64,
    .function_exits = function_exits_x86_64,
    .arg_registers = arg_registers_x86_64,
};

}  // namespace ft::arch
