/* The memory the in-process recorder shares with functracer, and the protocol both
 * sides follow on it (doc/internals.md §8b).
 *
 * One region per traced address space, mapped shared into the process and into
 * functracer (a memfd). It holds a header, a table from a thread's thread pointer to
 * its ring, and one ring per thread: the thread writes events into its ring in the
 * process (the producer), functracer reads them at its next stop or when it wakes up
 * to drain (the consumer). Nothing on the producer's side takes a lock, makes a
 * system call or waits: a full ring loses the event and counts it.
 *
 * Why a thread pointer: the recorder runs on the thread that made the call and must
 * find that thread's ring without a system call. The thread pointer (x86-64 fs base,
 * read with rdfsbase; AArch64 tpidr_el0) is per thread and readable in one
 * instruction. Where the kernel does not let programs read the fs base (no FSGSBASE),
 * the recorder reads fs:0 instead, which the TLS ABI has hold the thread pointer itself
 * (glibc, musl); a thread whose word there is something else gets no ring
 * (tp_self_word). functracer enters a thread's key while the thread is stopped (its first
 * stop, attach, or a stop on the slow path after the program changed its thread
 * pointer); only functracer writes the table, so the producer only reads it. A thread
 * whose key is not there takes the stop path.
 *
 * Producers on one ring: the thread, and a signal handler that interrupts it inside
 * the recorder and calls a recorded function itself. Space is therefore reserved
 * with a compare-and-swap on head (one instruction: atomic with respect to the same
 * thread's signal handlers), the record written, then committed by storing its size
 * last (release). The consumer reads records in ring order and stops at one whose
 * size is still 0: an interrupted producer's record is read once it is committed,
 * before the handler's records reserved after it.
 *
 * Consumer: copies a committed record out, zeroes its bytes (a producer's next lap
 * finds size 0 there) and then advances tail (release): the space is free again.
 *
 * This header is C and freestanding (it is compiled into the recorder, which runs in
 * the traced process without a C library) as well as C++ (functracer, the tests).
 */
#ifndef FUNCTRACER_CORE_RECORDER_ABI_H
#define FUNCTRACER_CORE_RECORDER_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FT_REC_MAGIC 0x31304345525446ull /* "FTREC01" */
#define FT_REC_VERSION 5u
#define FT_REC_MAX_THREADS 1024u /* rings in a region */
#define FT_REC_KEYS 2048u        /* key table entries: a power of two, twice the rings */
#define FT_REC_KEY_EMPTY 0ull
#define FT_REC_KEY_REMOVED 1ull  /* a thread that is gone: lookups go on past it */
#define FT_REC_NO_RING UINT64_MAX
#define FT_REC_MAX_FRAMES 128u   /* open recorded frames per thread whose return is hooked */

/* Kinds of event record. */
enum {
  FT_REC_CALL = 1,   /* a recorded function was entered */
  FT_REC_RETURN = 2, /* it returned (the return hook in the process) */
  FT_REC_WALK = 3,   /* a call stack walked in the process for FT_UNWIND_VERIFY: the call
                        itself takes the stop path, whose walk it is compared with */
};

/* One thread's key: its thread pointer and its ring's index. */
struct ft_rec_key {
  uint64_t tp;   /* FT_REC_KEY_EMPTY, FT_REC_KEY_REMOVED, or a thread pointer */
  uint64_t ring; /* index of the ring; written before tp */
};

/* The head of one ring; its data (ring_bytes) follows, 64-byte aligned. */
struct ft_rec_ring {
  uint64_t head;        /* bytes reserved by producers since the ring was set up */
  uint64_t tail;        /* bytes consumed by functracer */
  uint64_t lost_events; /* events a full ring could not take */
  uint64_t lost_bytes;
  uint64_t pad0;
  uint64_t stack_end;   /* end of the thread's stack (a walk reads nothing at or above it); 0:
                           unknown, no walk */
  uint64_t pad[2];
};

/* A call whose return is hooked: where its return address was and what it was. */
struct ft_rec_frame {
  uint64_t slot;     /* stack address of the return address, now the return stub's */
  uint64_t real_ret;
  uint64_t fn;
};

/* ---- what a fork child inherits as its own ----
 *
 * The region is not excluded from fork: a child forked after functracer died must
 * find the tables its traps need (the guard, below), and the code it runs through
 * (trampolines, the return stub) reads the region. Two things must not be shared with
 * a child, and live in private memory the process maps beside the region (the "own"
 * part, ft_rec_own), which a fork copies:
 *   - each ring's hooked frames: a child returns from the calls its forking thread was
 *     in through its copy of them, while the parent goes on with its own;
 *   - whether the region is this process's (`owner`, in the own part's first page,
 *     which is wiped on fork: MADV_WIPEONFORK). A child whose region it is not (its
 *     functracer died before taking the child in hand, or let it go) records nothing:
 *     every entry goes straight to the function, every hooked return to its real
 *     return address, and its traps are handled as after functracer's death.
 * functracer reads and writes the own part through the process's memory (it is not
 * shared), only while the thread concerned is stopped. */
struct ft_rec_stack {
  uint64_t depth;    /* frames[] in use: calls whose return is hooked, outermost first */
  uint64_t pad;
  struct ft_rec_frame frames[FT_REC_MAX_FRAMES];
};

struct ft_rec_own {
  uint64_t owner;    /* 1: the region is this process's; 0 in a fork child (wiped) */
  uint64_t pad[511]; /* the rest of the wiped page */
  struct ft_rec_stack stacks[FT_REC_MAX_THREADS]; /* by ring index */
};
#define FT_REC_OWN_WIPED 4096u /* bytes at the own part's start wiped on fork */
#define FT_REC_OWN_BYTES ((sizeof(struct ft_rec_own) + 4095) & ~(uint64_t)4095)

struct ft_rec_header {
  uint64_t magic;
  uint32_t version;
  uint32_t max_threads;
  uint64_t ring_bytes;   /* data bytes per ring: a power of two, at least 4 KiB */
  uint64_t rings_offset; /* of ring 0's ft_rec_ring, from the region's start */
  uint64_t ring_stride;  /* from one ring's ft_rec_ring to the next one's */
  uint64_t enabled;      /* 0: record nothing (tracing toggled off, detaching) */
  uint64_t no_ring;      /* entries whose thread had no ring: they took the stop path */
  uint64_t own;            /* address of the own part (struct ft_rec_own) in the process */
  uint64_t return_stub;   /* the code a hooked return goes to (written into the slot) */
  uint64_t unwind_offset; /* of the frame rules in use (ft_rec_unwind_index), 0: none yet */
  uint64_t verify_walks;  /* FT_UNWIND_VERIFY: walk, write an FT_REC_WALK and take the stop path */
  uint64_t guard_offset;  /* of the guard (struct ft_rec_guard): surviving functracer's death */
  uint64_t tp_self_word;  /* 1: the thread pointer is read as the word it points at (x86-64 fs:0,
                             the TLS ABI's pointer to itself), 0: from the register */
  uint64_t pad[2];
  struct ft_rec_key keys[FT_REC_KEYS];
};

/* An event as it sits in a ring: whole 8-byte words. The first word (size, kind,
 * nwords) is written last; positions and sizes are multiples of 8 and so is a ring's
 * size, so no word ever wraps. */
struct ft_rec_event {
  uint32_t size;   /* of the whole record, a multiple of 8; 0 until committed */
  uint16_t kind;   /* FT_REC_CALL, FT_REC_RETURN */
  uint16_t nwords; /* words[] that follow */
  uint32_t fn;     /* the function's id */
  uint32_t flags;
  uint64_t tsc;    /* time stamp counter at the event */
  uint64_t words[];
};

#define FT_REC_EVENT_HEADER ((uint32_t)sizeof(struct ft_rec_event))
#define FT_REC_MAX_WORDS 64u

/* Bytes a region with these dimensions takes. */
static inline uint64_t ft_rec_rings_offset(void) { return (sizeof(struct ft_rec_header) + 63) & ~(uint64_t)63; }
static inline uint64_t ft_rec_rings_end(uint64_t ring_bytes) {
  return ft_rec_rings_offset() + (sizeof(struct ft_rec_ring) + ring_bytes) * FT_REC_MAX_THREADS;
}
/* The frame rules for walks (ft_rec_unwind_index) take one of two halves of the unwind
 * area: functracer writes a new index into the half not in use and then switches
 * unwind_offset, so that a walk under way reads a whole index. */
#define FT_REC_UNWIND_BYTES (32ull << 20) /* per half */
static inline uint64_t ft_rec_unwind_area_offset(uint64_t ring_bytes) {
  return (ft_rec_rings_end(ring_bytes) + 4095) & ~(uint64_t)4095;
}
static inline uint64_t ft_rec_guard_offset(uint64_t ring_bytes) {
  return ft_rec_unwind_area_offset(ring_bytes) + 2 * FT_REC_UNWIND_BYTES;
}
static inline uint64_t ft_rec_region_size(uint64_t ring_bytes);

static inline struct ft_rec_ring* ft_rec_ring_at(struct ft_rec_header* h, uint64_t index) {
  return (struct ft_rec_ring*)((char*)h + h->rings_offset + h->ring_stride * index);
}

static inline uint8_t* ft_rec_ring_data(struct ft_rec_ring* r) { return (uint8_t*)(r + 1); }

static inline uint64_t ft_rec_ring_index(const struct ft_rec_header* h, const struct ft_rec_ring* r) {
  return (uint64_t)((const char*)r - ((const char*)h + h->rings_offset)) / h->ring_stride;
}

/* The own part, in the process (the recorder's side). */
static inline struct ft_rec_own* ft_rec_own_of(const struct ft_rec_header* h) { return (struct ft_rec_own*)h->own; }

/* Whether the region is this process's: not a fork child's inherited one. */
static inline int ft_rec_is_owner(const struct ft_rec_header* h) {
  const struct ft_rec_own* o = ft_rec_own_of(h);
  return o && __atomic_load_n(&o->owner, __ATOMIC_RELAXED) == 1;
}

/* Where ring `index`'s hooked frames are, from the own part's start. */
static inline uint64_t ft_rec_stack_offset(uint64_t index) {
  return offsetof(struct ft_rec_own, stacks) + index * sizeof(struct ft_rec_stack);
}

static inline uint64_t ft_rec_key_hash(uint64_t tp) {
  /* Thread pointers are page-aligned-ish and far apart: mix the high bits in. */
  tp ^= tp >> 33;
  tp *= 0xff51afd7ed558ccdull;
  tp ^= tp >> 33;
  return tp & (FT_REC_KEYS - 1);
}

/* ---- surviving functracer's death (doc/internals.md §8d) ----
 *
 * When functracer dies while attached (SIGKILL, the OOM killer), the kernel detaches
 * the threads and the program runs on alone with what functracer planted: entry
 * breakpoints, trampolines whose stop path traps, return addresses replaced by the
 * trampoline or a stub. Each of those traps (an int3) would now kill the program
 * with SIGTRAP. A SIGTRAP handler (ft_recorder_trap, installed at attach) takes them
 * instead: with functracer alive it never sees one of ours (functracer takes the stop
 * and cancels the signal), so a trap of ours reaching it means functracer is gone.
 * It switches recording off and sends the thread on as functracer would have:
 *   - at an entry breakpoint: puts the original byte back (through /proc/self/mem),
 *     and goes on at the function's entry, or at its out-of-line copy;
 *   - at a trampoline's stop-path trap: on to the relocated first instructions;
 *   - at a hooked return (the trampoline, a return stub): to the real return address,
 *     from the thread's recorded frames or from the return table below, which
 *     functracer fills as it replaces return addresses.
 * Any other SIGTRAP is the program's: it goes to the program's own action (saved at
 * the installation), or kills the program as it would have.
 *
 * The tables are written by functracer only, which writes a key last; the handler
 * only reads them. A later attach reads a dead session's guard to take its patches
 * and breakpoints out (ft_rec_patch). */
#define FT_REC_TRAPS (1u << 18)    /* trap table entries: a power of two */
#define FT_REC_RETURNS (1u << 16)  /* return table entries: a power of two */
#define FT_REC_PATCHES (1u << 16)  /* patched entries kept for a later attach */
#define FT_REC_AREAS 64u           /* out-of-line areas */

/* One trap of ours, by the address of its int3. */
struct ft_rec_trap {
  uint64_t at;     /* the int3's address; 0: an empty entry; FT_REC_TRAP_GONE: one that was
                      taken out (lookups go on past it) */
  uint64_t resume; /* where the thread goes on (a copy of the displaced instructions); 0:
                      put orig back at `at` and go on there */
  uint64_t orig;   /* the byte the int3 replaced (entry breakpoints) */
};
#define FT_REC_TRAP_GONE 1u    /* `at` of an entry taken out: no int3 is ever there */
#define FT_REC_TRAP_RESTORE 1u /* flag in orig's bit 8: the int3 is in the program's code */
#define FT_REC_TRAP_RETURN 2u  /* flag in orig's bit 8: a hooked return's trap (the trampoline, a
                                  return stub's slow path): on to the real return address */

/* A return address functracer replaced: where it is and what it was. */
struct ft_rec_return {
  uint64_t slot; /* 0: an empty entry */
  uint64_t real_ret;
};

/* A patched entry (for a later attach after functracer's death): the bytes before and
 * after the patch. */
struct ft_rec_patch {
  uint64_t at;
  uint32_t len;
  uint32_t pad;
  uint8_t original[24];
  uint8_t patched[24];
};

/* A signal action as rt_sigaction(2) takes it on x86-64 and AArch64. */
struct ft_rec_kaction {
  uint64_t handler;
  uint64_t flags;
  uint64_t restorer;
  uint64_t mask;
};

struct ft_rec_guard {
  uint64_t installed;   /* the handler is the program's SIGTRAP action */
  uint64_t handler;     /* its address */
  uint64_t gone;        /* set by the handler at the first trap of ours: functracer is dead */
  uint64_t handled;     /* traps of ours the handler sent on */
  uint64_t restored;    /* entry breakpoints it took out */
  uint64_t ntraps;      /* entries in use in traps[] */
  uint64_t nreturns;    /* entries in use in returns[] */
  uint64_t npatches;
  uint64_t nareas;
  uint64_t rings;       /* threads record in rings (their thread pointer is readable) */
  uint64_t detached;    /* its functracer detached cleanly: nothing of it is left to answer for */
  uint64_t areas[FT_REC_AREAS][2]; /* [start, end) of the out-of-line areas */
  struct ft_rec_kaction action;     /* the handler's, for functracer's rt_sigaction */
  struct ft_rec_kaction old_action; /* the program's, which other traps go to */
  struct ft_rec_trap traps[FT_REC_TRAPS];
  struct ft_rec_return returns[FT_REC_RETURNS];
  struct ft_rec_patch patches[FT_REC_PATCHES];
};

static inline uint64_t ft_rec_region_size(uint64_t ring_bytes) {
  return ft_rec_guard_offset(ring_bytes) + ((sizeof(struct ft_rec_guard) + 4095) & ~(uint64_t)4095);
}

static inline struct ft_rec_guard* ft_rec_guard_of(struct ft_rec_header* h) {
  return h->guard_offset ? (struct ft_rec_guard*)((char*)h + h->guard_offset) : NULL;
}

static inline uint64_t ft_rec_addr_hash(uint64_t a) {
  a ^= a >> 29;
  a *= 0xbf58476d1ce4e5b9ull;
  a ^= a >> 32;
  return a;
}

/* The trap whose int3 is at `at`, or NULL. */
static inline const struct ft_rec_trap* ft_rec_trap_find(const struct ft_rec_guard* g, uint64_t at) {
  if (at == 0) return NULL;
  uint64_t i = ft_rec_addr_hash(at) & (FT_REC_TRAPS - 1);
  for (uint32_t n = 0; n < FT_REC_TRAPS; ++n, i = (i + 1) & (FT_REC_TRAPS - 1)) {
    uint64_t k = __atomic_load_n(&g->traps[i].at, __ATOMIC_ACQUIRE);
    if (k == at) return &g->traps[i];
    if (k == 0) return NULL;
  }
  return NULL;
}

/* The real return address replaced at `slot`, or 0. */
static inline uint64_t ft_rec_return_find(const struct ft_rec_guard* g, uint64_t slot) {
  if (slot == 0) return 0;
  uint64_t i = ft_rec_addr_hash(slot) & (FT_REC_RETURNS - 1);
  for (uint32_t n = 0; n < FT_REC_RETURNS; ++n, i = (i + 1) & (FT_REC_RETURNS - 1)) {
    uint64_t k = __atomic_load_n(&g->returns[i].slot, __ATOMIC_ACQUIRE);
    if (k == slot) return g->returns[i].real_ret;
    if (k == 0) return 0;
  }
  return 0;
}

/* ---- producer side (the recorder, on the thread itself) ---- */

/* The ring of the thread whose thread pointer is tp, or NULL. */
static inline struct ft_rec_ring* ft_rec_find(struct ft_rec_header* h, uint64_t tp) {
  if (tp <= FT_REC_KEY_REMOVED) return NULL;
  uint64_t i = ft_rec_key_hash(tp);
  for (uint32_t n = 0; n < FT_REC_KEYS; ++n, i = (i + 1) & (FT_REC_KEYS - 1)) {
    uint64_t k = __atomic_load_n(&h->keys[i].tp, __ATOMIC_ACQUIRE);
    if (k == tp) {
      uint64_t ring = h->keys[i].ring;
      return ring < h->max_threads ? ft_rec_ring_at(h, ring) : NULL;
    }
    if (k == FT_REC_KEY_EMPTY) return NULL;
  }
  return NULL;
}

/* Reserves size bytes (a multiple of 8) in r: the record's position (head value), or
 * FT_REC_NO_RING when the ring is full (the event is counted lost). */
static inline uint64_t ft_rec_reserve(struct ft_rec_ring* r, uint64_t ring_bytes, uint32_t size) {
  uint64_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
  for (;;) {
    uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    if (head - tail + size > ring_bytes) {
      __atomic_fetch_add(&r->lost_events, 1, __ATOMIC_RELAXED);
      __atomic_fetch_add(&r->lost_bytes, size, __ATOMIC_RELAXED);
      return FT_REC_NO_RING;
    }
    if (__atomic_compare_exchange_n(&r->head, &head, head + size, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return head;
  }
}

/* Stores the 8-byte word v at position pos of the ring (pos a multiple of 8). */
static inline void ft_rec_put_word(struct ft_rec_ring* r, uint64_t ring_bytes, uint64_t pos, uint64_t v) {
  *(uint64_t*)(ft_rec_ring_data(r) + (pos & (ring_bytes - 1))) = v;
}

/* Writes one whole record: ev's fn, flags, tsc and nwords (its size is computed),
 * then the nwords words. Returns 0 when written, -1 when the ring was full. */
static inline int ft_rec_write_event(struct ft_rec_ring* r, uint64_t ring_bytes, const struct ft_rec_event* ev,
                                     const uint64_t* words) {
  uint32_t size = FT_REC_EVENT_HEADER + 8u * ev->nwords;
  uint64_t pos = ft_rec_reserve(r, ring_bytes, size);
  if (pos == FT_REC_NO_RING) return -1;
  ft_rec_put_word(r, ring_bytes, pos + 8, (uint64_t)ev->fn | (uint64_t)ev->flags << 32);
  ft_rec_put_word(r, ring_bytes, pos + 16, ev->tsc);
  for (uint32_t i = 0; i < ev->nwords; ++i) ft_rec_put_word(r, ring_bytes, pos + FT_REC_EVENT_HEADER + 8u * i, words[i]);
  /* The first word last: the record is there once its size is. */
  uint64_t first = (uint64_t)size | (uint64_t)ev->kind << 32 | (uint64_t)ev->nwords << 48;
  __atomic_store_n((uint64_t*)(ft_rec_ring_data(r) + (pos & (ring_bytes - 1))), first, __ATOMIC_RELEASE);
  return 0;
}

/* ---- call stacks walked in the process ---- */

/* The frame rules of the traced modules' code, for walking a thread's stack in the
 * process (ft_recorder_walk): built by functracer from each module's .eh_frame
 * (core/unwind_index.h), one row per run of addresses with the same rule. A row's
 * rule holds from its pc up to the next row's pc; modules are sorted by start. */
struct ft_rec_unwind_row {
  uint64_t pc;      /* run-time address */
  int32_t cfa_off;  /* CFA = (FT_REC_CFA_BP ? rbp : rsp) + cfa_off */
  int8_t ra_off8;   /* the return address is at CFA + 8 * ra_off8 */
  int8_t bp_off8;   /* with FT_REC_BP_SAVED: the caller's rbp is at CFA + 8 * bp_off8 */
  uint8_t flags;
  uint8_t pad;
};
#define FT_REC_CFA_BP 1u     /* the CFA is relative to rbp, else to rsp */
#define FT_REC_BP_SAVED 2u   /* the caller's rbp is saved at CFA + 8 * bp_off8 */
#define FT_REC_BP_LOST 4u    /* the caller's rbp is not known (else: unchanged) */
#define FT_REC_OUTERMOST 8u  /* no caller: the walk ends here (_start, a thread's start) */
#define FT_REC_NO_RULE 16u   /* no rule the walker follows here: the walk stops */

struct ft_rec_unwind_module {
  uint64_t start, end;  /* run-time addresses of its code */
  uint64_t first_row, nrows;
};

struct ft_rec_unwind_index {
  uint64_t nmodules;
  uint64_t nrows;
  /* then nmodules ft_rec_unwind_module, then nrows ft_rec_unwind_row */
};

static inline const struct ft_rec_unwind_module* ft_rec_unwind_modules(const struct ft_rec_unwind_index* u) {
  return (const struct ft_rec_unwind_module*)(u + 1);
}
static inline const struct ft_rec_unwind_row* ft_rec_unwind_rows(const struct ft_rec_unwind_index* u) {
  return (const struct ft_rec_unwind_row*)(ft_rec_unwind_modules(u) + u->nmodules);
}

/* The row whose rule holds at pc, or NULL. */
static inline const struct ft_rec_unwind_row* ft_rec_unwind_find(const struct ft_rec_unwind_index* u, uint64_t pc) {
  const struct ft_rec_unwind_module* m = ft_rec_unwind_modules(u);
  uint64_t lo = 0, hi = u->nmodules;
  while (lo < hi) { /* the last module starting at or below pc */
    uint64_t mid = lo + (hi - lo) / 2;
    if (m[mid].start <= pc) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0 || pc >= m[lo - 1].end || m[lo - 1].nrows == 0) return NULL;
  const struct ft_rec_unwind_module* mod = &m[lo - 1];
  const struct ft_rec_unwind_row* rows = ft_rec_unwind_rows(u) + mod->first_row;
  lo = 0;
  hi = mod->nrows;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (rows[mid].pc <= pc) lo = mid + 1;
    else hi = mid;
  }
  return lo == 0 ? NULL : &rows[lo - 1];
}

#ifdef __cplusplus
}
#endif

#endif
