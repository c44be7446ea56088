/* The in-process recorder (core/recorder.h). Runs in the traced process, on the thread
 * that made the call, between the trampoline's register save and the function's
 * first instruction (or between a function's return and its caller): no C library, no
 * system call, no lock, no floating-point register, no data of its own. */
#include "core/recorder.h"

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
  uint64_t words[2 + FT_REC_MAX_ARGS];
  words[FT_REC_CALL_SLOT] = (uint64_t)slot;
  words[FT_REC_CALL_RETURN_TO] = *slot;
  for (unsigned i = 0; i < nargs; ++i) words[FT_REC_CALL_ARGS + i] = args[i];
  struct ft_rec_event ev = {0};
  ev.kind = FT_REC_CALL;
  ev.nwords = (uint16_t)(2 + nargs);
  ev.fn = FT_REC_SITE_FN(site);
  ev.flags = hook ? FT_REC_HOOKED : 0;
  ev.tsc = tsc;
  if (ft_rec_write_event(r, ring_bytes, &ev, words) != 0) {
    /* Lost (counted in the ring): its return must not be reported either. */
    if (hook) __atomic_fetch_sub(&r->depth, 1, __ATOMIC_RELAXED);
    return FT_REC_PASS;
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
  /* A full ring loses the return (counted); the frame is popped all the same, and
   * functracer reports the call's frame as lost when it sees the loss. */
  (void)ft_rec_write_event(r, h->ring_bytes, &ev, words);
  __atomic_store_n(&r->depth, depth - 1, __ATOMIC_RELAXED);
  return real_ret;
}
