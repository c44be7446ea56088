/* The middle library of libchain, linked against libchain_b.so: each function
 * calls into libchain_b, lca_leaf is called back from there. Each function
 * counts its own calls in an exported counter. */
#include "libchain.h"
#include "tracee.h"

unsigned long chain_a_run_calls, chain_a_step_calls, chain_a_leaf_calls;

TRACED long lca_leaf(long x) {
  BUMP(chain_a_leaf_calls);
  return x - 1;
}

TRACED long lca_step(long x) {
  BUMP(chain_a_step_calls);
  long s = 0;
  for (long i = 0; i < 3; ++i) s += lcb_mix(x + i);
  return s + lcb_apply(lca_leaf, x);
}

TRACED long lca_run(long n) {
  BUMP(chain_a_run_calls);
  long s = 0;
  for (long i = 0; i < n; ++i) s += lca_step(i);
  return lcb_fold(s, n);
}
