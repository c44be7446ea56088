/* Mutual recursion: is_even/is_odd call each other. At -O2 both calls are
 * tail calls (jmp), so a deep chain shares a single return address. */
#include <stdio.h>
#include <stdlib.h>

#include "tracee.h"

static unsigned long even_calls;
static unsigned long odd_calls;

TRACED int is_odd(unsigned n);

TRACED int is_even(unsigned n) {
  BUMP(even_calls);
  if (n == 0) return 1;
  return is_odd(n - 1);
}

TRACED int is_odd(unsigned n) {
  BUMP(odd_calls);
  if (n == 0) return 0;
  return is_even(n - 1);
}

int main(void) {
  unsigned long want_even = 0, want_odd = 0;
  int evens = 0;
  for (unsigned n = 0; n <= 30; ++n) {
    int e = is_even(n);
    int o = is_odd(n);
    CHECK(e == (n % 2 == 0));
    CHECK(o == (n % 2 == 1));
    evens += e;
    /* is_even(n): n+1 calls alternating, starting with is_even. */
    want_even += n / 2 + 1;
    want_odd += (n + 1) / 2;
    /* is_odd(n): starts with is_odd. */
    want_odd += n / 2 + 1;
    want_even += (n + 1) / 2;
  }
  /* One deep chain. */
  CHECK(is_odd(1001) == 1);
  want_odd += 1001 / 2 + 1;
  want_even += (1001 + 1) / 2;

  CHECK(even_calls == want_even);
  CHECK(odd_calls == want_odd);
  printf("evens=%d\n", evens);
  printf("calls is_even=%lu is_odd=%lu\n", even_calls, odd_calls);
  return 0;
}
