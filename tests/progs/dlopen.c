/* Functions in a library loaded at run time. libdlopen_lib.so is not linked
 * in; the program dlopens it, calls its functions, dlcloses it, and does it
 * again, so its breakpoints must be planted after each dlopen (the module list
 * changes under the tracer) and dropped at dlclose.
 *
 *   dlopen LIBPATH */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "tracee.h"

typedef long (*calc_fn)(long);
typedef unsigned long (*count_fn)(void);

static unsigned long c_round;

TRACED long dl_round(const char* path, int round) {
  BUMP(c_round);
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    exit(1);
  }
  calc_fn outer = (calc_fn)dlsym(h, "dll_outer");
  count_fn count = (count_fn)dlsym(h, "dll_calls");
  CHECK(outer && count);
  long s = 0;
  for (int i = 0; i < 10; ++i) s += outer(i + round);
  /* dll_outer(x) = dll_inner(x) + 1 = 2x + 1; a fresh load starts at 0 calls */
  CHECK(count() == 20);
  CHECK(dlclose(h) == 0);
  return s;
}

int main(int argc, char** argv) {
  CHECK(argc == 2);
  long total = 0;
  for (int round = 0; round < 3; ++round) {
    long s = dl_round(argv[1], round);
    CHECK(s == 2 * (45 + 10 * round) + 10);
    total += s;
  }
  printf("total=%ld\n", total);
  printf("calls dl_round=%lu dll_outer=30 dll_inner=30\n", c_round);
  return 0;
}
