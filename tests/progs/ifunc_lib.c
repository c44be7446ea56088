/* A library with an IFUNC of its own, loaded with dlopen by ifuncs.c. The
 * resolver reads a table of pointers that only holds the right addresses once
 * the dynamic linker has relocated the library. */
#include "tracee.h"

TRACED static long add_plain(long a, long b) { return a + b; }
TRACED static long add_twisted(long a, long b) { return b + a; }

static long (*const add_impls[])(long, long) = {add_plain, add_twisted};
static long (*resolve_add(void))(long, long) { return add_impls[1]; }
long if_lib_add(long a, long b) __attribute__((ifunc("resolve_add")));
