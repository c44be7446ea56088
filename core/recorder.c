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
  if (!__atomic_load_n(&h->enabled, __ATOMIC_RELAXED)) return FT_REC_PASS;
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
  uint64_t depth = 0;
  if (hook) {
    /* The frame is taken before anything is written: a signal handler interrupting
     * here and recording calls of its own takes the next one, and gives it back
     * before this code goes on (unless it longjmps out: the stop path sorts that out
     * when the stale frame is met). */
    depth = __atomic_fetch_add(&r->depth, 1, __ATOMIC_RELAXED);
    if (depth >= FT_REC_MAX_FRAMES) {
      __atomic_fetch_sub(&r->depth, 1, __ATOMIC_RELAXED);
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
      if (hook) __atomic_fetch_sub(&r->depth, 1, __ATOMIC_RELAXED);
      return FT_REC_STOP; /* no rules or no stack bounds yet: the stop path walks it */
    }
    const struct ft_rec_unwind_index* u = (const struct ft_rec_unwind_index*)((const char*)h + uoff);
    uint64_t in_use = hook ? depth : __atomic_load_n(&r->depth, __ATOMIC_RELAXED);
    if (in_use > FT_REC_MAX_FRAMES) in_use = FT_REC_MAX_FRAMES;
    got = walk(u, (uint64_t)slot, args[FT_REC_SAVED_BP], stack_end, h->return_stub,
                           ft_rec_frames(h, index), in_use, words + 2 + nargs, (int)nframes, &complete);
    if (got < (int)nframes && !complete) {
      /* A frame without a rule the walk follows: the stop path takes the whole stack. */
      if (hook) __atomic_fetch_sub(&r->depth, 1, __ATOMIC_RELAXED);
      return FT_REC_STOP;
    }
    if (__atomic_load_n(&h->verify_walks, __ATOMIC_RELAXED)) {
      /* The walk alone, for functracer to compare with libunwind's on the same stack at
       * the stop path's trap; the call is the stop path's. */
      if (hook) __atomic_fetch_sub(&r->depth, 1, __ATOMIC_RELAXED);
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
    if (hook) __atomic_fetch_sub(&r->depth, 1, __ATOMIC_RELAXED);
    return FT_REC_STOP;
  }
  if (hook) {
    struct ft_rec_frame* f = ft_rec_frames(h, index) + depth;
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
  if (!r) return 0;
  uint64_t depth = __atomic_load_n(&r->depth, __ATOMIC_RELAXED);
  if (depth == 0 || depth > FT_REC_MAX_FRAMES) return 0;
  struct ft_rec_frame* f = ft_rec_frames(h, ft_rec_ring_index(h, r)) + (depth - 1);
  if (f->slot != sp_after - 8) return 0;
  uint64_t real_ret = f->real_ret;
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
  __atomic_store_n(&r->depth, depth - 1, __ATOMIC_RELAXED);
  return real_ret;
}

int ft_recorder_walk(const struct ft_rec_unwind_index* u, uint64_t sp, uint64_t bp, uint64_t stack_end,
                     uint64_t return_stub, const struct ft_rec_frame* frames, uint64_t depth, uint64_t* out, int max,
                     int* complete) {
  return walk(u, sp, bp, stack_end, return_stub, frames, depth, out, max, complete);
}
