/* The in-process recorder (core/recorder.h). Runs in the traced process, on the thread
 * that made the call, between the trampoline's register save and the function's
 * first instruction (or between a function's return and its caller): no C library, no
 * system call, no lock, no floating-point register, no data of its own. */
#include "core/recorder.h"

/* The walk itself: static, so that the entry calls it without a relocation (the image
 * is not linked). */
static int walk(const struct ft_rec_unwind_index* u, uint64_t sp, uint64_t bp, uint64_t stack_end,
                uint64_t return_stub, const struct ft_rec_frame* frames, uint64_t depth, uint64_t* out, int max,
                int* complete) {
  *complete = 0;
  const uint64_t lo = sp;
  if (max <= 0 || sp + 8 > stack_end) return 0;
  /* At the entry: the caller is at the return address, with its stack pointer one
   * word up and its frame pointer untouched. */
  uint64_t slot = sp;
  uint64_t pc = *(const uint64_t*)slot;
  sp += 8;
  int n = 0;
  for (;;) {
    if (pc == return_stub && return_stub != 0) {
      uint64_t real = 0;
      /* Tail-call partners share a slot; the inner one's real return is the stub. */
      for (uint64_t k = depth; k > 0; --k)
        if (frames[k - 1].slot == slot && frames[k - 1].real_ret != return_stub) {
          real = frames[k - 1].real_ret;
          break;
        }
      if (real == 0) return n;
      pc = real;
    }
    out[n++] = pc;
    if (n == max) return n;
    /* A return address is one past its call: the caller's rule is the call's. */
    const struct ft_rec_unwind_row* r = ft_rec_unwind_find(u, pc - 1);
    if (!r || (r->flags & FT_REC_NO_RULE)) return n;
    if (r->flags & FT_REC_OUTERMOST) {
      *complete = 1;
      return n;
    }
    uint64_t cfa = ((r->flags & FT_REC_CFA_BP) ? bp : sp) + (uint64_t)(int64_t)r->cfa_off;
    uint64_t ra_at = cfa + (uint64_t)(8 * (int64_t)r->ra_off8);
    if (ra_at < lo || ra_at > stack_end - 8 || cfa <= sp) return n;
    if (r->flags & FT_REC_BP_SAVED) {
      uint64_t bp_at = cfa + (uint64_t)(8 * (int64_t)r->bp_off8);
      if (bp_at < lo || bp_at > stack_end - 8) return n;
      bp = *(const uint64_t*)bp_at;
    } else if (r->flags & FT_REC_BP_LOST) {
      bp = 0;
    }
    slot = ra_at;
    pc = *(const uint64_t*)ra_at;
    sp = cfa;
    if (pc == 0) {
      *complete = 1;
      return n;
    }
  }
}

uint64_t ft_recorder_entry(struct ft_rec_header* h, uint64_t site, const uint64_t* args, uint64_t* slot, uint64_t tp,
                           uint64_t tsc) {
  if (!__atomic_load_n(&h->enabled, __ATOMIC_RELAXED) || !ft_rec_is_owner(h)) return FT_REC_PASS;
  struct ft_rec_ring* r = ft_rec_find(h, tp);
  if (!r) {
    __atomic_fetch_add(&h->no_ring, 1, __ATOMIC_RELAXED);
    return FT_REC_STOP;
  }
  uint64_t ring_bytes = h->ring_bytes;
  unsigned nargs = FT_REC_SITE_NARGS(site);
  if (nargs > FT_REC_MAX_ARGS) nargs = FT_REC_MAX_ARGS;
  int hook = (site & FT_REC_SITE_RETURN) != 0;
  uint64_t index = ft_rec_ring_index(h, r);
  struct ft_rec_stack* st = &ft_rec_own_of(h)->stacks[index];
  uint64_t depth = 0;
  if (hook) {
    /* The frame is taken before anything is written: a signal handler interrupting
     * here and recording calls of its own takes the next one, and gives it back
     * before this code goes on (unless it longjmps out: the stop path sorts that out
     * when the stale frame is met). */
    depth = __atomic_fetch_add(&st->depth, 1, __ATOMIC_RELAXED);
    if (depth >= FT_REC_MAX_FRAMES) {
      __atomic_fetch_sub(&st->depth, 1, __ATOMIC_RELAXED);
      return FT_REC_STOP; /* deeper than the frames kept here: the trampoline's stop */
    }
  }
  uint64_t words[2 + FT_REC_MAX_ARGS + FT_REC_MAX_STACK];
  words[FT_REC_CALL_SLOT] = (uint64_t)slot;
  words[FT_REC_CALL_RETURN_TO] = *slot;
  for (unsigned i = 0; i < nargs; ++i) words[FT_REC_CALL_ARGS + i] = args[i];
  unsigned nframes = FT_REC_SITE_FRAMES(site);
  if (nframes > FT_REC_MAX_STACK) nframes = FT_REC_MAX_STACK;
  int complete = 0, got = 0;
  if (nframes) {
    uint64_t uoff = __atomic_load_n(&h->unwind_offset, __ATOMIC_ACQUIRE);
    uint64_t stack_end = r->stack_end;
    if (uoff == 0 || stack_end == 0) {
      if (hook) __atomic_fetch_sub(&st->depth, 1, __ATOMIC_RELAXED);
      return FT_REC_STOP; /* no rules or no stack bounds yet: the stop path walks it */
    }
    const struct ft_rec_unwind_index* u = (const struct ft_rec_unwind_index*)((const char*)h + uoff);
    uint64_t in_use = hook ? depth : __atomic_load_n(&st->depth, __ATOMIC_RELAXED);
    if (in_use > FT_REC_MAX_FRAMES) in_use = FT_REC_MAX_FRAMES;
    got = walk(u, (uint64_t)slot, args[FT_REC_SAVED_BP], stack_end, h->return_stub,
                           st->frames, in_use, words + 2 + nargs, (int)nframes, &complete);
    if (got < (int)nframes && !complete) {
      /* A frame without a rule the walk follows: the stop path takes the whole stack. */
      if (hook) __atomic_fetch_sub(&st->depth, 1, __ATOMIC_RELAXED);
      return FT_REC_STOP;
    }
    if (__atomic_load_n(&h->verify_walks, __ATOMIC_RELAXED)) {
      /* The walk alone, for functracer to compare with libunwind's on the same stack at
       * the stop path's trap; the call is the stop path's. */
      if (hook) __atomic_fetch_sub(&st->depth, 1, __ATOMIC_RELAXED);
      struct ft_rec_event wv = {0};
      wv.kind = FT_REC_WALK;
      wv.nwords = (uint16_t)(FT_REC_WALK_FRAMES + (unsigned)got);
      wv.fn = FT_REC_SITE_FN(site);
      wv.flags = complete ? FT_REC_STACK_COMPLETE : 0;
      wv.tsc = tsc;
      words[1 + nargs] = (uint64_t)slot; /* just before the frames */
      (void)ft_rec_write_event(r, ring_bytes, &wv, words + 1 + nargs);
      return FT_REC_STOP;
    }
  }
  struct ft_rec_event ev = {0};
  ev.kind = FT_REC_CALL;
  ev.nwords = (uint16_t)(2 + nargs + (unsigned)got);
  ev.fn = FT_REC_SITE_FN(site);
  ev.flags = (hook ? FT_REC_HOOKED : 0) | (complete ? FT_REC_STACK_COMPLETE : 0) | nargs << 8;
  ev.tsc = tsc;
  /* A ring without room for the call and its return: the stop path, where functracer
   * empties the ring before it handles the call (nothing is lost; the program waits for
   * that one stop). Only a signal handler taking the room between this check and the
   * reservation can make a record lost (counted in the ring). */
  uint64_t need = FT_REC_EVENT_HEADER + 8u * ev.nwords + (hook ? FT_REC_EVENT_HEADER + 8u * FT_REC_RETURN_WORDS : 0);
  if (__atomic_load_n(&r->head, __ATOMIC_RELAXED) - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) + need > ring_bytes ||
      ft_rec_write_event(r, ring_bytes, &ev, words) != 0) {
    if (hook) __atomic_fetch_sub(&st->depth, 1, __ATOMIC_RELAXED);
    return FT_REC_STOP;
  }
  if (hook) {
    struct ft_rec_frame* f = st->frames + depth;
    f->slot = (uint64_t)slot;
    f->real_ret = *slot;
    f->fn = ev.fn;
    *slot = h->return_stub;
  }
  return FT_REC_PASS;
}

uint64_t ft_recorder_return(struct ft_rec_header* h, uint64_t sp_after, const uint64_t* rets, uint64_t tp,
                            uint64_t tsc) {
  struct ft_rec_ring* r = ft_rec_find(h, tp);
  struct ft_rec_own* own = ft_rec_own_of(h);
  if (!r || !own) return 0;
  struct ft_rec_stack* st = &own->stacks[ft_rec_ring_index(h, r)];
  uint64_t depth = __atomic_load_n(&st->depth, __ATOMIC_RELAXED);
  if (depth == 0 || depth > FT_REC_MAX_FRAMES) return 0;
  struct ft_rec_frame* f = st->frames + (depth - 1);
  if (f->slot != sp_after - 8) return 0;
  uint64_t real_ret = f->real_ret;
  if (!ft_rec_is_owner(h)) {
    /* A fork child on its parent's region: back to the caller, nothing recorded. */
    __atomic_store_n(&st->depth, depth - 1, __ATOMIC_RELAXED);
    return real_ret;
  }
  uint64_t words[FT_REC_RETURN_WORDS];
  words[FT_REC_RETURN_SLOT] = f->slot;
  words[FT_REC_RETURN_TO] = real_ret;
  words[FT_REC_RETURN_VALUE] = rets[0];
  words[FT_REC_RETURN_VALUE2] = rets[1];
  words[FT_REC_RETURN_FP] = rets[2];
  struct ft_rec_event ev = {0};
  ev.kind = FT_REC_RETURN;
  ev.nwords = FT_REC_RETURN_WORDS;
  ev.fn = (uint32_t)f->fn;
  ev.tsc = tsc;
  /* A ring without room (the calls made since took it): the stop path, with the frame
   * still there for functracer to pop; nothing is lost. */
  uint32_t size = FT_REC_EVENT_HEADER + 8u * FT_REC_RETURN_WORDS;
  if (__atomic_load_n(&r->head, __ATOMIC_RELAXED) - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) + size > h->ring_bytes ||
      ft_rec_write_event(r, h->ring_bytes, &ev, words) != 0)
    return 0;
  __atomic_store_n(&st->depth, depth - 1, __ATOMIC_RELAXED);
  return real_ret;
}

int ft_recorder_walk(const struct ft_rec_unwind_index* u, uint64_t sp, uint64_t bp, uint64_t stack_end,
                     uint64_t return_stub, const struct ft_rec_frame* frames, uint64_t depth, uint64_t* out, int max,
                     int* complete) {
  return walk(u, sp, bp, stack_end, return_stub, frames, depth, out, max, complete);
}

/* ---- surviving functracer's death: the SIGTRAP handler (recorder_abi.h) ---- */

#if defined(__x86_64__)

#define TRAP_SIGTRAP 5
#define TRAP_SI_KERNEL 0x80
#define TRAP_SA_SIGINFO 4ull
#define TRAP_SA_RESETHAND 0x80000000ull
#define TRAP_FLAG 0x100ull
/* ucontext_t on x86-64: uc_flags, uc_link, a stack_t (24 bytes), then the general
 * registers of the machine context (REG_RSP 15, REG_RIP 16, REG_EFL 17). */
#define UC_GREGS 40
#define GREG_RSP 15
#define GREG_RIP 16
#define GREG_EFL 17

static long trap_syscall(long nr, long a, long b, long c, long d) {
  long ret;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
  return ret;
}

/* As the stubs read it (h->tp_self_word). The thread came through a trampoline: its
 * fs base points at readable memory. */
static uint64_t trap_thread_pointer(const struct ft_rec_header* h) {
  uint64_t tp;
  if (h->tp_self_word)
    __asm__ volatile("movq %%fs:0, %0" : "=r"(tp));
  else
    __asm__ volatile("rdfsbase %0" : "=r"(tp));
  return tp;
}

/* Puts the byte the breakpoint at `at` replaced back, through /proc/self/mem (the
 * text is read-only; the kernel writes through that file as for a debugger). One
 * byte: another thread sees the int3 or the original instruction, never half. */
static int trap_restore_byte(uint64_t at, uint8_t byte) {
  /* "/proc/self/mem", built in registers: the image has no data. */
  volatile uint64_t path[2];
  path[0] = 0x65732f636f72702full; /* "/proc/se" */
  path[1] = 0x00006d656d2f666cull; /* "lf/mem\0\0" */
  long fd = trap_syscall(257 /* openat */, -100 /* AT_FDCWD */, (long)path, 02 | 02000000 /* O_RDWR|O_CLOEXEC */, 0);
  if (fd < 0) return -1;
  volatile uint8_t b = byte;
  long n = trap_syscall(18 /* pwrite64 */, fd, (long)&b, 1, (long)at);
  (void)trap_syscall(3 /* close */, fd, 0, 0, 0);
  return n == 1 ? 0 : -1;
}

/* The real return address for a return that trapped with its slot at `slot`: from the
 * thread's recorded frames (popping it and those above it), else from the return
 * table. 0 when neither knows it. */
static uint64_t trap_real_return(struct ft_rec_header* h, const struct ft_rec_guard* g, uint64_t slot) {
  struct ft_rec_ring* r = g->rings ? ft_rec_find(h, trap_thread_pointer(h)) : 0;
  if (r && ft_rec_own_of(h)) {
    struct ft_rec_stack* st = &ft_rec_own_of(h)->stacks[ft_rec_ring_index(h, r)];
    uint64_t depth = __atomic_load_n(&st->depth, __ATOMIC_RELAXED);
    if (depth > FT_REC_MAX_FRAMES) depth = FT_REC_MAX_FRAMES;
    struct ft_rec_frame* frames = st->frames;
    for (uint64_t k = depth; k > 0; --k)
      if (frames[k - 1].slot == slot && frames[k - 1].real_ret != h->return_stub) {
        __atomic_store_n(&st->depth, k - 1, __ATOMIC_RELAXED);
        return frames[k - 1].real_ret;
      }
  }
  return ft_rec_return_find(g, slot);
}

static int trap_in_areas(const struct ft_rec_guard* g, uint64_t at) {
  uint64_t n = g->nareas < FT_REC_AREAS ? g->nareas : FT_REC_AREAS;
  for (uint64_t i = 0; i < n; ++i)
    if (at >= g->areas[i][0] && at < g->areas[i][1]) return 1;
  return 0;
}

/* A trap of ours: functracer is gone. Nothing is recorded any more (nobody reads it). */
static void trap_ours(struct ft_rec_header* h, struct ft_rec_guard* g) {
  /* (A fork child leaves the recording of the process whose region it is alone.) */
  if (ft_rec_is_owner(h)) __atomic_store_n(&h->enabled, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&g->gone, 1, __ATOMIC_RELEASE);
  __atomic_fetch_add(&g->handled, 1, __ATOMIC_RELAXED);
}

/* What the program would have had without us: its own handler, or the default
 * action (SIGTRAP's: the program dies, with a core dump where they are on). */
static void trap_forward(int sig, void* info, void* uc, struct ft_rec_guard* g) {
  uint64_t handler = g->old_action.handler;
  uint64_t flags = g->old_action.flags;
  int code = ((const int*)info)[2];
  if (handler == 1 /* SIG_IGN */ && code <= 0) return; /* sent by a process: ignored */
  if (handler <= 1) {
    /* SIG_DFL, or SIG_IGN for a trap the kernel raised (it overrides the ignoring):
     * the default action, by the same signal once this handler is out of the way. */
    struct ft_rec_kaction dfl = {0, 0, 0, 0};
    (void)trap_syscall(13 /* rt_sigaction */, sig, (long)&dfl, 0, 8);
    uint64_t set = 1ull << (sig - 1);
    long pid = trap_syscall(39 /* getpid */, 0, 0, 0, 0);
    long tid = trap_syscall(186 /* gettid */, 0, 0, 0, 0);
    (void)trap_syscall(234 /* tgkill */, pid, tid, sig, 0);
    (void)trap_syscall(14 /* rt_sigprocmask */, 1 /* SIG_UNBLOCK */, (long)&set, 0, 8);
    return;
  }
  if (flags & TRAP_SA_RESETHAND) g->old_action.handler = 0;
  if (flags & TRAP_SA_SIGINFO)
    ((void (*)(int, void*, void*))handler)(sig, info, uc);
  else
    ((void (*)(int))handler)(sig);
}

void ft_recorder_trap(int sig, void* info, void* ucontext, struct ft_rec_header* h) {
  /* A fork child functracer let go has no region (it is not inherited) and none of
   * our traps: the default action, as it would have had. */
  volatile uint8_t resident;
  if (trap_syscall(27 /* mincore */, (long)h, 4096, (long)&resident, 0) != 0) {
    struct ft_rec_kaction dfl = {0, 0, 0, 0};
    (void)trap_syscall(13 /* rt_sigaction */, sig, (long)&dfl, 0, 8);
    (void)trap_syscall(234 /* tgkill */, trap_syscall(39, 0, 0, 0, 0), trap_syscall(186, 0, 0, 0, 0), sig, 0);
    return;
  }
  struct ft_rec_guard* g = ft_rec_guard_of(h);
  uint64_t* gregs = (uint64_t*)((char*)ucontext + UC_GREGS);
  int code = ((const int*)info)[2];
  if (!g) return;
  if (__atomic_load_n(&g->detached, __ATOMIC_ACQUIRE)) {
    /* functracer detached cleanly: nothing of ours is left; everything is the program's. */
    trap_forward(sig, info, ucontext, g);
    return;
  }
  if (sig == TRAP_SIGTRAP && code == TRAP_SI_KERNEL) {
    /* An int3: the thread is just past it. */
    uint64_t at = gregs[GREG_RIP] - 1;
    const struct ft_rec_trap* t = ft_rec_trap_find(g, at);
    if (!t && at > 0) {
      /* A thread stopped at a trap of ours in functracer's code whose stop functracer
       * had taken in (waited for) but not yet answered when it died: the kernel let it
       * go on past the trap without the signal, onto the int3 that follows every trap
       * there. Handled as that trap. (An entry breakpoint's next byte is the
       * program's: functracer points such a thread back at the breakpoint as soon as
       * it takes its stop in, so that it traps again.) */
      const struct ft_rec_trap* before = ft_rec_trap_find(g, at - 1);
      if (before && !(before->orig & (FT_REC_TRAP_RESTORE << 8))) {
        t = before;
        at -= 1;
        gregs[GREG_RIP] = at + 1;
      }
    }
    if (t && (t->orig & (FT_REC_TRAP_RETURN << 8))) {
      /* A hooked return (the trampoline, a return stub's slow path), or a thread that
       * waited for a held signal. */
      uint64_t real = trap_real_return(h, g, gregs[GREG_RSP] - 8);
      if (real) {
        trap_ours(h, g);
        gregs[GREG_RIP] = real;
        return;
      }
    } else if (t) {
      trap_ours(h, g);
      if (t->orig & (FT_REC_TRAP_RESTORE << 8)) {
        if (*(volatile const uint8_t*)at != 0xcc || trap_restore_byte(at, (uint8_t)t->orig) == 0) {
          __atomic_fetch_add(&g->restored, 1, __ATOMIC_RELAXED);
          gregs[GREG_RIP] = at;
          return;
        }
      }
      if (t->resume) {
        gregs[GREG_RIP] = t->resume;
        return;
      }
    } else if (trap_in_areas(g, at) && *(volatile const uint8_t*)gregs[GREG_RIP] != 0xcc) {
      /* A thread functracer had moved into its own code when it died (a stop it was
       * handling): on from there. */
      trap_ours(h, g);
      return;
    } else if (!trap_in_areas(g, at) && *(volatile const uint8_t*)at != 0xcc) {
      /* No int3 there (any more): a stop functracer was handling when it died, with
       * the thread already sent on. */
      trap_ours(h, g);
      return;
    }
  } else if (sig == TRAP_SIGTRAP && (gregs[GREG_EFL] & TRAP_FLAG) && g->old_action.handler <= 1 &&
             __atomic_load_n(&g->gone, __ATOMIC_ACQUIRE)) {
    /* A single step functracer started and cannot finish: the trap flag off. */
    gregs[GREG_EFL] &= ~TRAP_FLAG;
    return;
  }
  trap_forward(sig, info, ucontext, g);
}

#endif
