/* Functions that look at their own return address: glibc's dlsym finds the calling
 * object from it (RTLD_NEXT: "the next object after the caller"), dlopen picks the
 * caller's namespace. Traced with their returns, they must still see the real
 * return address, or RTLD_NEXT fails ("RTLD_NEXT used in code not dynamically
 * loaded") and the program with it.
 *
 *   dlcaller */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracee.h"

static unsigned long c_next, c_open;

TRACED void* dc_next(const char* name) {
  BUMP(c_next);
  return dlsym(RTLD_NEXT, name);
}

TRACED void* dc_open(const char* lib) {
  BUMP(c_open);
  return dlopen(lib, RTLD_NOW | RTLD_LOCAL);
}

int main(void) {
  size_t (*len)(const char*) = (size_t(*)(const char*))dc_next("strlen");
  CHECK(len != NULL);
  CHECK(len("abc") == 3);
  CHECK(dc_next("puts") != NULL);
  void* m = dc_open("libm.so.6");
  CHECK(m != NULL);
  double (*cosine)(double) = (double (*)(double))dlsym(m, "cos");
  CHECK(cosine != NULL && cosine(0.0) == 1.0);
  CHECK(dlclose(m) == 0);
  printf("ok\n");
  printf("calls dc_next=%lu dc_open=%lu dlsym=3 dlopen=1\n", c_next, c_open);
  return 0;
}
