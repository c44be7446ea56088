// x86-64 decoding helpers shared by the code that rewrites instructions: the entry
// breakpoint's relocator (arch/x86_64/relocator.cc) and the entry patch analysis
// (arch/x86_64/entry_patch.cc). Internal to arch/x86_64.
//
// Capstone decodes an instruction (length, class, operands); the bytes that matter
// for rewriting (prefixes, branch opcodes, the RIP-relative disp32) are located here
// and cross-checked against the raw encoding, because some of Capstone 4's encoding
// fields are unreliable (disp_size is reported as 2 for operand-size-prefixed and
// some VEX instructions although a RIP-relative displacement is always 4 bytes).
#pragma once

#include <capstone/capstone.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ft::arch::x86 {

inline constexpr size_t kMaxX86InsnLength = 15;
// jmp rel32
inline constexpr size_t kJmpRel32Length = 5;
// jmp qword ptr [rip+0]; .quad target
inline constexpr size_t kJmpAbsLength = 14;

struct InsnDeleter {
  void operator()(cs_insn* insn) const { cs_free(insn, 1); }
};
using InsnPtr = std::unique_ptr<cs_insn, InsnDeleter>;

// A Capstone handle for x86-64 with instruction details, one per thread so that
// decoding can run on any thread (decoder()). Opening one is costly (Capstone builds
// its instruction tables for each handle on first use): one per call made planting
// the breakpoints of 100,000 functions take seconds.
class Decoder {
 public:
  Decoder();
  ~Decoder();
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  bool ok() const { return ok_; }
  // The first instruction of `code` at `addr`; nullptr if it does not decode.
  InsnPtr decode(std::span<const uint8_t> code, uint64_t addr) const;
  csh handle() const { return handle_; }

 private:
  csh handle_ = 0;
  bool open_ = false;
  bool ok_ = false;
};

// This thread's decoder.
const Decoder& decoder();

inline bool fits_int32(int64_t v) {
  return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}

inline int32_t read_le32(const uint8_t* p) {
  uint32_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return static_cast<int32_t>(v);
}

inline void put_le32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

inline void put_le64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

inline void write_le32(uint8_t* p, int32_t v) {
  const auto u = static_cast<uint32_t>(v);
  std::memcpy(p, &u, sizeof u);
}

// Signed distance from `from` to `to` (modular; user-space addresses never wrap).
inline int64_t distance(uint64_t from, uint64_t to) { return static_cast<int64_t>(to - from); }

// Appends a jump to `target`, for code that will live at code_addr + out.size():
// `jmp rel32` when it reaches, else `jmp [rip+0]` followed by the absolute address.
void emit_jump(std::vector<uint8_t>& out, uint64_t code_addr, uint64_t target);

// Legacy prefixes and REX in front of the opcode.
struct Prefixes {
  size_t length = 0;          // bytes before the opcode (legacy prefixes + REX)
  bool operand_size = false;  // 0x66
  bool address_size = false;  // 0x67
  bool fs_gs = false;         // 0x64 / 0x65 segment override
  bool ds = false;            // 0x3e: `notrack` on an indirect jmp or call
};

Prefixes scan_prefixes(std::span<const uint8_t> insn);

enum class BranchKind { None, Call, Jump, CondJump, CountJump };

// A relative branch recognised from its opcode: `rel` is the signed displacement
// that ends the instruction.
struct RelBranch {
  BranchKind kind = BranchKind::None;
  uint8_t cond = 0;    // CondJump: the condition nibble of 0x7X / 0x0F 0x8X
  uint8_t opcode = 0;  // CountJump: 0xE0..0xE3 (loopne, loope, loop, jrcxz)
  int64_t rel = 0;
};

RelBranch parse_rel_branch(std::span<const uint8_t> insn, const Prefixes& p);

bool in_group(const cs_insn& insn, uint8_t group);
bool is_port_io(unsigned id);
// int3 or int 3.
bool is_breakpoint_trap(const cs_insn& insn);

// The RIP-relative memory operand of an instruction, located in its bytes.
struct RipOperand {
  size_t disp_offset = 0;  // offset of the disp32 in the instruction
  int32_t disp = 0;
  uint8_t size = 0;  // operand size in bytes as reported by Capstone
};

// Finds the RIP-relative operand, if any. Sets `error` when the instruction looks
// RIP-relative but its displacement cannot be located with confidence.
std::optional<RipOperand> find_rip_operand(const cs_insn& insn, std::string& error);

// "mnemonic operands", for logs.
std::string insn_text(const cs_insn& insn);

}  // namespace ft::arch::x86
