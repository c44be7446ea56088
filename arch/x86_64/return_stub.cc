#include <cstring>

#include "arch/return_stub.h"
#include "common/check.h"

namespace ft::arch {
namespace {

// tops[k] and the record base are patched in at the marked offsets.
//   push r11; push r10; pushfq
//   movabs r11, &tops[k]; mov r10, [r11]; test r10, r10; jz slow
//   shl r10, 6; movabs r11, record_base; add r10, r11      ; the innermost record
//   lea r11, [rsp+16]; cmp r11, [r10]; jne slow            ; is it this return's slot?
//   mov [r10+16], rax; mov [r10+24], rdx; movq [r10+32], xmm0
//   push rax; push rdx; rdtsc; shl rdx, 32; or rax, rdx; mov [r10+40], rax; pop rdx; pop rax
//   mov r11, [r10+8]                                          ; the real return address
//   movabs r10, &tops[k]; dec qword [r10]                     ; popped: visible to functracer
//   popfq; pop r10; xchg [rsp], r11; ret                      ; r11 restored, off to real_ret
// slow:
//   popfq; pop r10; pop r11; int3
constexpr size_t kSize = 112;
constexpr size_t kSlowTrap = 0x6f;
constexpr uint8_t kStub[kSize] = {
    0x41, 0x53, 0x41, 0x52, 0x9c, 0x49, 0xbb, 0, 0, 0, 0, 0, 0, 0, 0,  // movabs r11 @7
    0x4d, 0x8b, 0x13, 0x4d, 0x85, 0xd2, 0x74, 0x53, 0x49, 0xc1, 0xe2, 0x06,
    0x49, 0xbb, 0, 0, 0, 0, 0, 0, 0, 0,  // movabs r11 @29
    0x4d, 0x01, 0xda, 0x4c, 0x8d, 0x5c, 0x24, 0x10, 0x4d, 0x3b, 0x1a, 0x75, 0x38,
    0x49, 0x89, 0x42, 0x10, 0x49, 0x89, 0x52, 0x18, 0x66, 0x41, 0x0f, 0xd6, 0x42, 0x20,
    0x50, 0x52, 0x0f, 0x31, 0x48, 0xc1, 0xe2, 0x20, 0x48, 0x09, 0xd0, 0x49, 0x89, 0x42, 0x28,
    0x5a, 0x58, 0x4d, 0x8b, 0x5a, 0x08,
    0x49, 0xba, 0, 0, 0, 0, 0, 0, 0, 0,  // movabs r10 @87
    0x49, 0xff, 0x0a, 0x9d, 0x41, 0x5a, 0x4c, 0x87, 0x1c, 0x24, 0xc3,
    0x9d, 0x41, 0x5a, 0x41, 0x5b, 0xcc};
constexpr size_t kTopImm1 = 7, kRecordBaseImm = 29, kTopImm2 = 87;
static_assert(kStub[kSlowTrap] == 0xcc && kStub[kTopImm1 - 2] == 0x49 && kStub[kRecordBaseImm - 2] == 0x49 &&
              kStub[kTopImm2 - 2] == 0x49);
// The record layout the instructions above encode (shl 6, the displacements).
static_assert(kReturnRecordSize == 64 && kReturnRecordSlot == 0 && kReturnRecordRealRet == 8 &&
              kReturnRecordRet == 16 && kReturnRecordRet2 == 24 && kReturnRecordFpRet == 32 &&
              kReturnRecordClock == 40);

void write(std::span<uint8_t> out, uint64_t top_addr, uint64_t record_base) {
  FT_CHECK(out.size() >= kSize, "return stub buffer of %zu bytes", out.size());
  std::memcpy(out.data(), kStub, kSize);
  std::memcpy(out.data() + kTopImm1, &top_addr, 8);
  std::memcpy(out.data() + kRecordBaseImm, &record_base, 8);
  std::memcpy(out.data() + kTopImm2, &top_addr, 8);
}

}  // namespace

const ReturnStub kX86_64ReturnStub = {kSize, kSlowTrap, write};

}  // namespace ft::arch
