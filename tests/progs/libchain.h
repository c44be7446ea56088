/* The interfaces of libchain_a.so and libchain_b.so (see libchain.c). */
#ifndef FT_LIBCHAIN_H
#define FT_LIBCHAIN_H

long lcb_mix(long x);
long lcb_fold(long acc, long x);
long lcb_apply(long (*fn)(long), long x);
extern unsigned long chain_b_mix_calls, chain_b_fold_calls, chain_b_apply_calls;

long lca_leaf(long x);
long lca_step(long x);
long lca_run(long n);
extern unsigned long chain_a_run_calls, chain_a_step_calls, chain_a_leaf_calls;

#endif
