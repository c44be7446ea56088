// The load bias of an ELF file mapped into a process: what to add to a link-time
// address (st_value, p_vaddr, a DWARF address) to get the run-time one. The engine
// needs it to plant breakpoints in a module it finds in /proc/PID/maps; the
// post-processor needs it to turn the addresses of a trace back into link-time ones,
// from the module records (doc/trace-format.md), which may name any mapping of the
// file.
//
// How the kernel maps a PT_LOAD segment (load_elf_binary and elf_map in
// fs/binfmt_elf.c; ld.so's _dl_map_segments does the same for libraries): from the file
// offset p_offset rounded down to the page, at the address bias + p_vaddr rounded down
// the same way (p_vaddr and p_offset are equal modulo the page size). So a mapping
// at `base` with file offset `offset` that starts a segment gives
//     bias = base - (p_vaddr rounded down to the page)
// for the segment whose p_offset rounds down to `offset`. This holds for every mapping
// of the file, not only the first one (offset 0). Where two segments begin in the same
// file page (a small file's read-only data and its RELRO data), both are mapped from
// that offset and the offset alone cannot say which: the first segment is taken, right
// for the lower of the two mappings, which is the one /proc/PID/maps lists first and
// the only one with offset 0 (a module's base).
// A mapping that starts inside a segment (split by mprotect, or made with larger pages
// than `page_size`) is placed by the segment whose file bytes hold `offset`.
// ET_EXEC files are mapped where they say: the bias is 0.
//
// The segments are plain values taken from the program headers, so that the callers
// who read them with libelf or libdwfl (core/elf_image.h, postproc/symbolizer.cc) and
// the tests (which read them from memory with dl_iterate_phdr) share this without
// common/ linking libelf.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace ft {

// A PT_LOAD program header.
struct LoadSegment {
  uint64_t vaddr = 0, memsz = 0, offset = 0, filesz = 0;
  uint32_t flags = 0;  // PF_R | PF_W | PF_X
};

// The page size of x86-64 (and of most AArch64 kernels); a trace read on another
// machine does not say what its page size was.
inline constexpr uint64_t kDefaultPageSize = 4096;

// The bias of the mapping at `base` of file offset `offset` (a multiple of the page
// size, as in /proc/PID/maps) of a file with these PT_LOAD segments; `dyn`: the file
// is ET_DYN (a PIE executable or a shared library). Nothing when no segment of an
// ET_DYN file is mapped at that offset.
std::optional<uint64_t> load_bias(bool dyn, std::span<const LoadSegment> loads, uint64_t base,
                                  uint64_t offset, uint64_t page_size = kDefaultPageSize);

}  // namespace ft
