/* The in-process recorder: the code functracer puts into a traced process to record
 * calls and returns there, without a ptrace stop (doc/internals.md §8b).
 *
 * It is plain C without a C library, compiled twice: freestanding into the image
 * functracer copies into the process (no relocations, no data of its own, no
 * floating-point or vector registers: it runs between a function's entry and its
 * first instruction, where all of them may hold arguments), and natively into the
 * unit tests. Architecture-specific work — saving registers, reading the thread
 * pointer and the time stamp counter, the trap of the stop path — is done by the
 * entry trampolines and the return stub that call it (arch/).
 */
#ifndef FUNCTRACER_CORE_RECORDER_H
#define FUNCTRACER_CORE_RECORDER_H

#include <stdint.h>

#include "core/recorder_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a function's trampoline passes as `site`: the function's id in the low 32
 * bits, then what to record. */
#define FT_REC_SITE_FN(site) ((uint32_t)(site))
#define FT_REC_SITE_RETURN (1ull << 32) /* hook the return */
#define FT_REC_SITE_NARGS_SHIFT 40      /* integer argument registers to record, 0..6 */
#define FT_REC_SITE_NARGS(site) ((unsigned)(((site) >> FT_REC_SITE_NARGS_SHIFT) & 0xff))
#define FT_REC_MAX_ARGS 6u
#define FT_REC_SITE_FRAMES_SHIFT 48     /* return addresses to record (a call stack), 0..48 */
#define FT_REC_SITE_FRAMES(site) ((unsigned)(((site) >> FT_REC_SITE_FRAMES_SHIFT) & 0xff))
#define FT_REC_MAX_STACK 48u
/* What the entry trampoline saved, in this order (args[] of ft_recorder_entry). */
enum { FT_REC_SAVED_ARGS = 0, FT_REC_SAVED_RAX = 6, FT_REC_SAVED_R10, FT_REC_SAVED_R11, FT_REC_SAVED_BP };

/* Words of the records, after the common header (struct ft_rec_event). */
enum {
  FT_REC_CALL_SLOT = 0,     /* where the return address is (the stack pointer at the entry) */
  FT_REC_CALL_RETURN_TO,    /* the return address */
  FT_REC_CALL_ARGS,         /* the argument registers, nargs of them (in flags), then the
                               call stack's return addresses, the rest of the words */
  FT_REC_RETURN_SLOT = 0,   /* the call's slot (the stack pointer after the return, minus 8) */
  FT_REC_RETURN_TO,         /* the real return address */
  FT_REC_RETURN_VALUE,      /* the return registers: two integer, one floating point */
  FT_REC_RETURN_VALUE2,
  FT_REC_RETURN_FP,
  FT_REC_RETURN_WORDS,
  FT_REC_WALK_SLOT = 0,     /* the call's slot, then the walk's return addresses */
  FT_REC_WALK_FRAMES,
};
/* Event flags. */
#define FT_REC_HOOKED 1u /* a call whose return is hooked: a FT_REC_RETURN follows */
#define FT_REC_STACK_COMPLETE 2u /* the call stack reached the outermost frame */
#define FT_REC_FLAGS_NARGS(flags) (((flags) >> 8) & 0xffu)

/* Results of ft_recorder_entry. */
#define FT_REC_PASS 0u /* go on into the function */
#define FT_REC_STOP 1u /* take the stop path: functracer handles this entry with a stop (no
                          ring for the thread, frames too deep, or a ring without room) */

/* At a function's entry. args: the registers the trampoline saved (FT_REC_SAVED_*: the
 * integer argument registers in the calling convention's order first, the frame
 * pointer last); slot: the address of the return address (the stack pointer at the
 * entry, x86-64); tp: the thread pointer; tsc: the time stamp counter. */
uint64_t ft_recorder_entry(struct ft_rec_header* h, uint64_t site, const uint64_t* args, uint64_t* slot, uint64_t tp,
                           uint64_t tsc);

/* At a hooked return (the return stub): sp_after is the stack pointer after the
 * return, rets the return registers (two integer, one floating point). Returns the
 * real return address to go on at, or 0 for the stop path (a return that is not the
 * innermost hooked one of this thread: a longjmp skipped frames, a stack switched). */
uint64_t ft_recorder_return(struct ft_rec_header* h, uint64_t sp_after, const uint64_t* rets, uint64_t tp,
                            uint64_t tsc);

/* A call stack from a function's entry: sp is the stack pointer there ([sp] holds the
 * return address), bp the frame pointer register, stack_end the end of the thread's
 * stack (nothing at or above it is read; nothing below sp either). Writes at most max
 * return addresses into out, innermost first, and returns how many. A return address
 * that is the return stub (h->return_stub) is given as the real one the thread's
 * hooked frame (in `frames`, `depth` of them) holds for that slot. The walk stops at a
 * frame without a rule it can follow (*complete = 0) or at the outermost frame
 * (*complete = 1). */
int ft_recorder_walk(const struct ft_rec_unwind_index* u, uint64_t sp, uint64_t bp, uint64_t stack_end,
                     uint64_t return_stub, const struct ft_rec_frame* frames, uint64_t depth, uint64_t* out, int max,
                     int* complete);

/* The program's SIGTRAP handler while functracer is attached (recorder_abi.h, "surviving
 * functracer's death"): reached through a stub that adds the region's header to the
 * kernel's three arguments. x86-64 only (the machine context's layout). */
void ft_recorder_trap(int sig, void* info, void* ucontext, struct ft_rec_header* h);

#ifdef __cplusplus
}
#endif

#endif
