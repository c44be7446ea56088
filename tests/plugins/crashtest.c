/* crashtest: a plugin that crashes on purpose, for tests/integration/test_plugin_crash.py.
 *
 * FT_CRASHTEST=KIND:CALLBACK[:N] makes the N-th call (from 1, default 1) of CALLBACK
 * crash, where KIND is
 *   segv    a write through a NULL pointer (SIGSEGV)
 *   abort   abort() (SIGABRT)
 *   fpe     an integer division by zero (SIGFPE)
 *   ill     an undefined instruction (SIGILL)
 *   stack   unbounded recursion (SIGSEGV past the end of the stack)
 * and CALLBACK one of init, module, symbol, call, ret, event, finish. Without
 * FT_CRASHTEST it does not crash.
 *
 * It traces the functions named by -a (globs), entry and return, and writes a
 * crash_call / crash_ret record for each event, so a trace has content before the
 * crash. */
#include <stddef.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include <functracer/plugin.h>

static const ft_host_api *host;
static char kind[16], where[16];
static long crash_at = 1;
static long seen;
static char *patterns[32];
static size_t npatterns;
static volatile int zero;

static long recurse(long n) {
  volatile char frame[1024];
  frame[0] = (char)n;
  if (zero == 1) return frame[0]; /* never: zero stays 0 */
  return recurse(n + 1) + frame[0];
}

static void maybe_crash(const char *callback) {
  if (strcmp(callback, where) != 0 || ++seen != crash_at) return;
  if (strcmp(kind, "segv") == 0) {
    *(volatile int *)(uintptr_t)zero = 1;
  } else if (strcmp(kind, "abort") == 0) {
    abort();
  } else if (strcmp(kind, "fpe") == 0) {
    volatile int x = 7 / zero;
    (void)x;
  } else if (strcmp(kind, "ill") == 0) {
    __builtin_trap();
  } else if (strcmp(kind, "stack") == 0) {
    zero = (int)recurse(0);
  }
}

static unsigned on_symbol(void *data, const ft_symbol *sym, uint64_t *tag) {
  (void)data;
  (void)tag;
  maybe_crash("symbol");
  for (size_t i = 0; i < npatterns; ++i)
    if (fnmatch(patterns[i], sym->name, 0) == 0) return FT_TRACE_ENTRY | FT_TRACE_RETURN;
  return 0;
}

static void record_fn(ft_ctx *ctx, const char *type, const ft_function *fn) {
  ft_field f = {0};
  f.key = "function";
  f.kind = FT_FIELD_STRING;
  f.s = fn->name;
  host->record(ctx, type, &f, 1);
}

static void on_module(void *data, ft_ctx *ctx, const ft_module *m) {
  (void)data, (void)ctx, (void)m;
  maybe_crash("module");
}
static void on_call(void *data, ft_ctx *ctx, const ft_function *fn) {
  (void)data;
  record_fn(ctx, "crash_call", fn);
  maybe_crash("call");
}
static void on_ret(void *data, ft_ctx *ctx, const ft_function *fn) {
  (void)data;
  record_fn(ctx, "crash_ret", fn);
  maybe_crash("ret");
}
static void on_event(void *data, ft_ctx *ctx, const ft_event *ev) {
  (void)data, (void)ctx, (void)ev;
  maybe_crash("event");
}
static void on_finish(void *data) {
  (void)data;
  maybe_crash("finish");
}

/* A version-2 table (no `capture`): such plugins still load, and their calls take a
 * stop each. */
static ft_plugin plugin = {
    2, offsetof(ft_plugin, capture), "crashtest", NULL, on_module, on_symbol, on_call, on_ret,
    NULL, on_event, NULL, on_finish, NULL, NULL,
};

const ft_plugin *functracer_plugin_init(const ft_host_api *h) {
  host = h;
  const char *spec = getenv("FT_CRASHTEST");
  if (spec) {
    char buf[64];
    strncpy(buf, spec, sizeof buf - 1);
    buf[sizeof buf - 1] = 0;
    char *k = strtok(buf, ":"), *w = strtok(NULL, ":"), *n = strtok(NULL, ":");
    if (!k || !w) {
      host->warn("crashtest: FT_CRASHTEST is KIND:CALLBACK[:N]");
      return NULL;
    }
    strncpy(kind, k, sizeof kind - 1);
    strncpy(where, w, sizeof where - 1);
    if (n) crash_at = atol(n);
  }
  const char *audit = host->option("audit");
  if (audit) {
    char *copy = strdup(audit);
    for (char *p = strtok(copy, ","); p && npatterns < 32; p = strtok(NULL, ",")) patterns[npatterns++] = p;
  }
  maybe_crash("init");
  return &plugin;
}
