/* apitest: a plugin that exercises what version 2 of the plugin API added, for
 * tests/integration/test_plugin_api.py. It writes what it sees into the trace
 * (so it needs -o), and the test judges the records:
 *
 *   api_module    each `module` callback: path, base, end, build_id, main, loaded,
 *                 and a backtrace taken in the callback (frames)
 *   api_offers    before each api_module record and when the process ends: the
 *                 symbols offered since the previous `module` callback (n), and how
 *                 many of them did not belong to the module that callback announced
 *                 (stray: another path, an address outside [base, end), another
 *                 is_main_program, or no module announced at all)
 *   api_call, api_return
 *                 events of the functions named by -a, with the tag, depth and a
 *                 backtrace; the i-th pattern (from 0) is tagged
 *                 (i << 8) | strlen(instance), except the first, left at 0
 *   api_sys       entries and exits of write(2) (x86-64 system call 1) with their
 *                 arguments, result and a backtrace
 *   api_writes    at the end of the process: write(2) calls on fd 1, the bytes
 *                 they asked to write and the bytes written
 *   api_event     every lifecycle event: kind, value, address
 *   api_checks    at the end of the process: expectations the plugin checks
 *                 itself (the tag is 0 when `symbol` is called; host->arg and
 *                 host->retval agree with ft_syscall at a system call stop)
 *
 * Every record names the instance (its file name without ".so"), so that two
 * copies of the plugin can run side by side with their own tags. */
#include <dlfcn.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include <functracer/plugin.h>

#define MAX_PATTERNS 32
#define MAX_FRAMES 16
#define SYS_WRITE 1

static const ft_host_api *host;
static char instance[64] = "apitest";

static char *patterns[MAX_PATTERNS];
static size_t npatterns;

/* The module announced by the last `module` callback (loaded), and the offers since. */
static char window_path[4096];
static ft_addr window_base, window_end;
static int window_main, window_open;
static uint64_t window_offers, window_stray;

static uint64_t tag_not_zero; /* `symbol` called with *tag != 0 */

/* Per process (a handful at most). */
struct proc {
  int pid;
  uint64_t writes, bytes_asked, bytes_written;
  uint64_t arg_mismatch, retval_mismatch;
  int in_fd1_write; /* the thread in a write(2) on fd 1 (tid), 0: none */
};
static struct proc procs[64];

static struct proc *proc_of(int pid) {
  for (size_t i = 0; i < sizeof procs / sizeof procs[0]; ++i)
    if (procs[i].pid == pid) return &procs[i];
  for (size_t i = 0; i < sizeof procs / sizeof procs[0]; ++i)
    if (procs[i].pid == 0) {
      memset(&procs[i], 0, sizeof procs[i]);
      procs[i].pid = pid;
      return &procs[i];
    }
  return &procs[0]; /* more processes than this test ever makes */
}

static void field_str(ft_field *f, const char *key, const char *s) {
  *f = (ft_field){.key = key, .kind = FT_FIELD_STRING, .s = s};
}
static void field_int(ft_field *f, const char *key, int64_t i) {
  *f = (ft_field){.key = key, .kind = FT_FIELD_INT, .i = i};
}
static void field_hex(ft_field *f, const char *key, uint64_t u) {
  *f = (ft_field){.key = key, .kind = FT_FIELD_HEX, .u = u};
}
static void field_list(ft_field *f, const char *key, const uint64_t *list, size_t n) {
  *f = (ft_field){.key = key, .kind = FT_FIELD_HEX_LIST, .list = list, .list_len = n};
}

static void write_offers(ft_ctx *ctx) {
  ft_field f[4];
  field_str(&f[0], "plugin", instance);
  field_str(&f[1], "module", window_open ? window_path : "");
  field_int(&f[2], "n", (int64_t)window_offers);
  field_int(&f[3], "stray", (int64_t)window_stray);
  host->record(ctx, "api_offers", f, 4);
  window_offers = window_stray = 0;
}

static void on_module(void *data, ft_ctx *ctx, const ft_module *mod) {
  (void)data;
  write_offers(ctx);
  uint64_t frames[MAX_FRAMES];
  int n = host->backtrace(ctx, frames, MAX_FRAMES);
  ft_field f[9];
  field_str(&f[0], "plugin", instance);
  field_str(&f[1], "path", mod->path);
  field_hex(&f[2], "base", mod->base);
  field_hex(&f[3], "end", mod->end);
  field_str(&f[4], "build_id", mod->build_id);
  field_int(&f[5], "main", mod->is_main_program);
  field_int(&f[6], "loaded", mod->loaded);
  field_list(&f[7], "frames", frames, n > 0 ? (size_t)n : 0);
  field_int(&f[8], "pid", host->pid(ctx));
  host->record(ctx, "api_module", f, 9);
  window_open = mod->loaded;
  if (mod->loaded) {
    strncpy(window_path, mod->path, sizeof window_path - 1);
    window_base = mod->base;
    window_end = mod->end;
    window_main = mod->is_main_program;
  }
}

static unsigned on_symbol(void *data, const ft_symbol *sym, uint64_t *tag) {
  (void)data;
  ++window_offers;
  if (!window_open || strcmp(sym->module, window_path) != 0 || sym->address < window_base ||
      sym->address >= window_end || !sym->is_main_program != !window_main)
    ++window_stray;
  if (*tag != 0) ++tag_not_zero;
  for (size_t i = 0; i < npatterns; ++i)
    if (fnmatch(patterns[i], sym->name, 0) == 0) {
      if (i > 0) *tag = ((uint64_t)i << 8) | strlen(instance);
      return FT_TRACE_ENTRY | FT_TRACE_RETURN;
    }
  return 0;
}

static void function_record(ft_ctx *ctx, const char *type, const ft_function *fn) {
  uint64_t frames[MAX_FRAMES];
  int n = host->backtrace(ctx, frames, MAX_FRAMES);
  ft_field f[7];
  field_str(&f[0], "plugin", instance);
  field_str(&f[1], "function", fn->name);
  field_hex(&f[2], "address", fn->address);
  field_str(&f[3], "module", fn->module);
  field_hex(&f[4], "tag", fn->tag);
  field_int(&f[5], "depth", host->depth(ctx));
  field_list(&f[6], "frames", frames, n > 0 ? (size_t)n : 0);
  host->record(ctx, type, f, 7);
}

static void on_call(void *data, ft_ctx *ctx, const ft_function *fn) {
  (void)data;
  function_record(ctx, "api_call", fn);
}

static void on_ret(void *data, ft_ctx *ctx, const ft_function *fn) {
  (void)data;
  function_record(ctx, "api_return", fn);
}

static void on_syscall(void *data, ft_ctx *ctx, const ft_syscall *sc) {
  (void)data;
  struct proc *p = proc_of(host->pid(ctx));
  if (!sc->is_exit) {
    for (unsigned i = 0; i < 6; ++i)
      if (host->arg(ctx, i) != sc->args[i]) ++p->arg_mismatch;
  } else if (host->retval(ctx) != (uint64_t)sc->ret) {
    ++p->retval_mismatch;
  }
  int tid = host->tid(ctx);
  if (sc->nr == SYS_WRITE && !sc->is_exit && sc->args[0] == 1) {
    ++p->writes;
    p->bytes_asked += sc->args[2];
    p->in_fd1_write = tid;
  } else if (sc->nr == SYS_WRITE && sc->is_exit && p->in_fd1_write == tid) {
    if (sc->ret > 0) p->bytes_written += (uint64_t)sc->ret;
    p->in_fd1_write = 0;
  }
  uint64_t frames[MAX_FRAMES];
  int n = host->backtrace(ctx, frames, MAX_FRAMES);
  ft_field f[8];
  field_str(&f[0], "plugin", instance);
  field_str(&f[1], "phase", sc->is_exit ? "exit" : "entry");
  field_int(&f[2], "nr", sc->nr);
  field_int(&f[3], "fd", sc->is_exit ? -1 : (int64_t)sc->args[0]);
  field_int(&f[4], "count", sc->is_exit ? -1 : (int64_t)sc->args[2]);
  field_int(&f[5], "ret", sc->is_exit ? sc->ret : 0);
  field_list(&f[6], "frames", frames, n > 0 ? (size_t)n : 0);
  field_hex(&f[7], "buf", sc->is_exit ? 0 : sc->args[1]);
  host->record(ctx, "api_sys", f, 8);
}

static void on_event(void *data, ft_ctx *ctx, const ft_event *ev) {
  (void)data;
  ft_field f[5];
  field_str(&f[0], "plugin", instance);
  field_int(&f[1], "kind", ev->kind);
  field_int(&f[2], "value", ev->value);
  field_hex(&f[3], "address", ev->address);
  field_str(&f[4], "text", ev->text);
  host->record(ctx, "api_event", f, 5);
  if (ev->kind != FT_EVENT_EXITED && ev->kind != FT_EVENT_KILLED && ev->kind != FT_EVENT_EXEC) return;
  write_offers(ctx);
  struct proc *p = proc_of(host->pid(ctx));
  ft_field w[4];
  field_str(&w[0], "plugin", instance);
  field_int(&w[1], "calls", (int64_t)p->writes);
  field_int(&w[2], "bytes_asked", (int64_t)p->bytes_asked);
  field_int(&w[3], "bytes_written", (int64_t)p->bytes_written);
  host->record(ctx, "api_writes", w, 4);
  ft_field c[4];
  field_str(&c[0], "plugin", instance);
  field_int(&c[1], "tag_not_zero", (int64_t)tag_not_zero);
  field_int(&c[2], "arg_mismatch", (int64_t)p->arg_mismatch);
  field_int(&c[3], "retval_mismatch", (int64_t)p->retval_mismatch);
  host->record(ctx, "api_checks", c, 4);
  if (ev->kind != FT_EVENT_EXEC) p->pid = 0;
}

static void on_finish(void *data) {
  (void)data;
  for (size_t i = 0; i < npatterns; ++i) free(patterns[i]);
}

static ft_plugin plugin = {
    .api_version = FT_PLUGIN_API_VERSION,
    .size = sizeof(ft_plugin),
    .name = "apitest",
    .module = on_module,
    .symbol = on_symbol,
    .call = on_call,
    .ret = on_ret,
    .event = on_event,
    .syscall = on_syscall,
    .finish = on_finish,
};

const ft_plugin *functracer_plugin_init(const ft_host_api *h) {
  if (h->api_version != FT_HOST_API_VERSION) return &plugin;
  host = h;
  /* The instance is named after the file it was loaded from. */
  Dl_info info;
  if (dladdr((void *)&plugin, &info) && info.dli_fname) {
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    size_t len = strcspn(base, ".");
    if (len > 0 && len < sizeof instance) {
      memcpy(instance, base, len);
      instance[len] = 0;
    }
  }
  const char *audit = host->option("audit");
  if (!audit || !host->option("output")) {
    host->warn("apitest: needs -a PATTERNS and -o DIR");
    return NULL;
  }
  const char *s = audit;
  while (*s && npatterns < MAX_PATTERNS) {
    size_t len = strcspn(s, ",");
    if (len > 0) patterns[npatterns++] = strndup(s, len);
    s += len;
    if (*s == ',') ++s;
  }
  return &plugin;
}
