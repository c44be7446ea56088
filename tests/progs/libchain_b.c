/* The bottom library of libchain: arithmetic, one function that calls another
 * inside this library, and one that calls back into its caller's library.
 * Each function counts its own calls in an exported counter. */
#include "tracee.h"

unsigned long chain_b_mix_calls, chain_b_fold_calls, chain_b_apply_calls;

TRACED long lcb_mix(long x) {
  BUMP(chain_b_mix_calls);
  return (x * 31 + 7) % 1009;
}

TRACED long lcb_fold(long acc, long x) {
  BUMP(chain_b_fold_calls);
  return acc * 3 + lcb_mix(x);
}

TRACED long lcb_apply(long (*fn)(long), long x) {
  BUMP(chain_b_apply_calls);
  return fn(x) + 1;
}
