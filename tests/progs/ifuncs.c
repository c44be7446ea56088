/* IFUNCs: functions whose implementation a resolver picks at load time.
 *
 *   ifuncs N [LIBPATH]
 *
 * Calls, N times each: strlen and memcpy through pointers (glibc IFUNCs; the
 * calls go straight to the implementation the resolver chose, no PLT stub), strdup
 * (which calls strlen and memcpy inside libc, through libc's own IRELATIVE
 * slots), and if_twice, an IFUNC of this program whose resolver reads a table of
 * relocated pointers (so it only answers correctly once the program is
 * relocated). With LIBPATH, dlopens that library and calls its IFUNC if_lib_add N
 * times. Prints results and its counts; libc's own calls of strlen and memcpy
 * (stdio, start-up) are not counted here, which is why the test compares two
 * values of N. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracee.h"

static size_t (*volatile p_strlen)(const char*) = strlen;
static void* (*volatile p_memcpy)(void*, const void*, size_t) = memcpy;

static unsigned long c_twice;

TRACED static long twice_add(long x) {
  BUMP(c_twice);
  return x + x;
}
TRACED static long twice_shift(long x) {
  BUMP(c_twice);
  return x << 1;
}
static long (*const twice_impls[])(long) = {twice_add, twice_shift};
static long (*resolve_twice(void))(long) { return twice_impls[1]; }
long if_twice(long x) __attribute__((ifunc("resolve_twice")));

int main(int argc, char** argv) {
  CHECK(argc >= 2);
  int n = atoi(argv[1]);
  static const char text[] = "relocated implementations";
  char buf[64];
  size_t lens = 0;
  long sum = 0;
  for (int i = 0; i < n; ++i) {
    lens += p_strlen(text + (i % 8));
    p_memcpy(buf, text, sizeof text);
    CHECK(memcmp(buf, text, sizeof text) == 0);
    char* d = strdup(text + (i % 4));
    CHECK(d != NULL && d[0] == text[i % 4]);
    free(d);
    sum += if_twice(i);
  }
  CHECK(sum == (long)n * (n - 1));
  long lib_sum = 0;
  if (argc >= 3) {
    void* h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      fprintf(stderr, "dlopen: %s\n", dlerror());
      return 1;
    }
    long (*add)(long, long) = (long (*)(long, long))dlsym(h, "if_lib_add");
    CHECK(add != NULL);
    for (int i = 0; i < n; ++i) lib_sum += add(i, 1);
    CHECK(lib_sum == (long)n * (n - 1) / 2 + n);
    CHECK(dlclose(h) == 0);
  }
  printf("lens=%zu sum=%ld lib_sum=%ld\n", lens, sum, lib_sum);
  printf("calls if_twice=%lu\n", c_twice);
  return 0;
}
