/* Calls that go from library to library: the program calls libchain_a.so,
 * which calls libchain_b.so, which calls back into libchain_a.so; the program
 * also calls libchain_b.so directly. Both libraries are linked in (found
 * through the rpath $ORIGIN) and count their own calls; the program checks
 * those counts against what it computes from the calls it made and prints them.
 *
 *   libchain [ROUNDS]   (default 6) */
#include <stdio.h>
#include <stdlib.h>

#include "libchain.h"
#include "tracee.h"

static unsigned long c_main;

/* The library functions recomputed here, without calling them. */
static long mix(long x) { return (x * 31 + 7) % 1009; }

static long run_value(long n) {
  long s = 0;
  for (long i = 0; i < n; ++i) {
    for (long j = 0; j < 3; ++j) s += mix(i + j);
    s += (i - 1) + 1;
  }
  return s * 3 + mix(n);
}

TRACED long lc_main(int rounds) {
  BUMP(c_main);
  long s = 0;
  for (int r = 0; r < rounds; ++r) {
    long v = lca_run(r + 2);
    CHECK(v == run_value(r + 2));
    s += v + lcb_mix(r);
  }
  return s;
}

int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 6;
  CHECK(rounds >= 0 && rounds <= 1000);
  long s = lc_main(rounds);

  /* lca_run(n) makes n lca_step calls; each lca_step calls lcb_mix 3 times and
   * lcb_apply once, which calls lca_leaf; lca_run ends with one lcb_fold, which
   * calls lcb_mix. lc_main calls lcb_mix once per round as well. */
  unsigned long steps = 0;
  for (int r = 0; r < rounds; ++r) steps += (unsigned long)r + 2;
  unsigned long want_run = rounds, want_step = steps, want_leaf = steps;
  unsigned long want_apply = steps, want_fold = rounds;
  unsigned long want_mix = 3 * steps + 2 * (unsigned long)rounds;
  CHECK(chain_a_run_calls == want_run);
  CHECK(chain_a_step_calls == want_step);
  CHECK(chain_a_leaf_calls == want_leaf);
  CHECK(chain_b_apply_calls == want_apply);
  CHECK(chain_b_fold_calls == want_fold);
  CHECK(chain_b_mix_calls == want_mix);

  printf("rounds=%d sum=%ld\n", rounds, s);
  printf("calls lc_main=%lu lca_run=%lu lca_step=%lu lca_leaf=%lu lcb_mix=%lu lcb_fold=%lu "
         "lcb_apply=%lu\n",
         c_main, chain_a_run_calls, chain_a_step_calls, chain_a_leaf_calls, chain_b_mix_calls,
         chain_b_fold_calls, chain_b_apply_calls);
  return 0;
}
