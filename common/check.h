// Always-on invariant checks. A failed check is a bug in functracer: it prints what
// broke (the caller adds tid and registers where they matter) and aborts. Failures of
// the environment are not checks; they are Result errors.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FT_CHECK(cond, ...)                                                          \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "functracer: internal error at %s:%d: check '%s' failed: ", \
                   __FILE__, __LINE__, #cond);                                       \
      std::fprintf(stderr, __VA_ARGS__);                                             \
      std::fputc('\n', stderr);                                                      \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)
