/*
 * functracer plugin API — a versioned C ABI.
 *
 * A plugin is a shared object that exports one function:
 *
 *     const ft_plugin *functracer_plugin_init(const ft_host_api *host);
 *
 * functracer dlopens the plugin (by name from its plugin directory, or by path), calls
 * the init function once with the host's table of helpers, and checks the returned
 * table's api_version against FT_PLUGIN_API_MIN_VERSION..FT_PLUGIN_API_VERSION: a plugin built for another
 * version is refused with a clear message. Init returns NULL to refuse to run (after
 * printing why through host->warn).
 *
 * Threading: every callback runs on functracer's single tracing thread, while the
 * traced thread named by the context is stopped. A context (ft_ctx) is valid only
 * during the callback that received it.
 *
 * Which functions are traced is decided by the plugins: when a module is mapped, each
 * plugin's `module` callback hears of it, then for every function symbol in it the host
 * asks each plugin's `symbol` callback, which returns FT_TRACE_* flags (0: not
 * interested) and may tag the function with a number of its choosing. A function is
 * traced if any plugin wants it; call/return events go to the plugins that asked for
 * them, each with its own tag.
 *
 * Nothing C++ crosses this boundary; all strings are NUL-terminated UTF-8 or raw bytes
 * as in the program.
 */
#ifndef FUNCTRACER_PLUGIN_H
#define FUNCTRACER_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FT_PLUGIN_API_VERSION 3u
/* The oldest version still loaded: a version-2 plugin has no `capture`, and its calls
 * always take a stop. */
#define FT_PLUGIN_API_MIN_VERSION 2u
/* The version of the host's table (ft_host_api), unchanged since version 2: a plugin
 * checks host->api_version against it. */
#define FT_HOST_API_VERSION 2u

typedef uint64_t ft_addr;     /* an address in the traced process */
typedef struct ft_ctx ft_ctx; /* opaque: the event being delivered */

/* What a plugin wants for a function (returned by ft_plugin.symbol). */
enum {
  FT_TRACE_ENTRY = 1u << 0,  /* report calls */
  FT_TRACE_RETURN = 1u << 1, /* report returns (hijacks the return address) */
  FT_TRACE_PARAMS = 1u << 2, /* look up parameter types (ft_function.params): in DWARF,
                                else the -F prototype files, the built-in prototypes
                                of the C library, a C++ name's parameter types */
  /* With FT_TRACE_RETURN: this plugin's `ret` callback for the function uses only the
   * return registers (retval, fp_arg 0), time, depth, pid and tid — no memory, no
   * backtrace. When every plugin that wants the function's returns says so, its
   * returns are handled inside the traced process without a stop and delivered at the
   * process's next stop, in order, before any later event of that process; read_memory
   * and read_string then fail and backtrace finds no frames. Not honoured for a
   * function whose return is a string (ret_kind FT_PARAM_STRING, with FT_TRACE_PARAMS):
   * its returns stop, so the string can be read. */
  FT_TRACE_RETURN_VALUE = 1u << 3,
};

/* A function symbol offered to plugins when its module is mapped. */
typedef struct ft_symbol {
  const char *name;      /* as in the symbol table (mangled); PLT stubs are "NAME@plt" */
  const char *demangled; /* demangled C++ name; for other names, equal to name */
  const char *module;    /* path of the module that defines it */
  ft_addr address;       /* run-time address of its entry */
  uint64_t size;
  int is_plt;            /* a PLT stub of the module */
  int is_main_program;   /* defined in the main executable */
} ft_symbol;

/* Kinds of values in integer registers, from DWARF. FT_PARAM_INTEGER is unsigned,
 * FT_PARAM_SIGNED signed (sign-extend from the size); FT_PARAM_VOID only as a
 * return kind. */
enum ft_param_kind {
  FT_PARAM_INTEGER,
  FT_PARAM_POINTER,
  FT_PARAM_STRING,
  FT_PARAM_FLOAT,
  FT_PARAM_OTHER,
  FT_PARAM_SIGNED,
  FT_PARAM_VOID,
};

/* Where a parameter is: integer argument registers are 0..5 (x86-64: rdi rsi rdx rcx
 * r8 r9; for a function of Go's internal ABI, Go's: rax rbx rcx rdi rsi r8),
 * floating-point argument registers FT_REG_FP0 + n (x86-64: xmm0..xmm7). */
#define FT_REG_FP0 8

/* A traced function, as seen in call/return events. */
typedef struct ft_function {
  const char *name;
  const char *demangled;
  const char *module;
  ft_addr address;
  uint64_t tag; /* what this plugin's `symbol` callback set for it (0 by default) */
  /* The parameters (from DWARF or a prototype, see FT_TRACE_PARAMS), in declaration order, with the register the calling
   * convention puts each in (a struct returned in memory adds its hidden pointer
   * first; the list stops at a parameter whose registers cannot be known, such as a
   * struct passed by value other than those of param_members' register form, or one
   * passed on the stack). */
  int nparams;                       /* -1: unknown (no DWARF, or FT_TRACE_PARAMS not asked) */
  const enum ft_param_kind *params;  /* nparams entries */
  const uint8_t *param_sizes;        /* nparams entries: bytes (8 when unknown) */
  const int8_t *param_regs;          /* nparams entries: 0..5, or FT_REG_FP0 + n */
  int ret_kind;                      /* enum ft_param_kind, or -1 when unknown */
  unsigned ret_size;                 /* bytes (8 when unknown) */
  /* Added to version 2 after its first release; hosts that fill them say so with
   * ft_host_api.function_size >= FT_FUNCTION_SIZE_WITH_FORMATS (older hosts' tables
   * end before that member: check host->size first). Both NULL when nparams is -1. */
  const char *const *param_labels;   /* nparams entries: "this" for a C++ member
                                        function's object pointer, else "" */
  const char *const *param_formats;  /* nparams entries: the set of symbolic constants
                                        an integer holds ("O_flags", "LC_category",
                                        ...: functracer/symbolic_values.h), else "" */
  /* Added after param_formats; filled when ft_host_api.function_size >=
   * FT_FUNCTION_SIZE_WITH_MEMBERS. nparams entries (NULL when nparams is -1): the
   * structure a parameter is or points to, from DWARF, one level deep, else "":
   *   DESC   := ['*' | '^'] BODY
   *                           '*': the register holds its address (a pointer, a C++
   *                           reference or `this`); '^': it holds the address of the
   *                           parameter itself, a class the C++ ABI passes by
   *                           invisible reference (std::string); without either, the
   *                           structure's bytes
   *                           are in param_sizes[i] bytes of the integer registers
   *                           from param_regs[i] on (kind FT_PARAM_OTHER, 9..16 bytes
   *                           take two registers, a Go slice's 24 bytes three)
   *   BODY   := 'S' | '{' MEMBER (';' MEMBER)* [';...'] '}'
   *                           'S': libstdc++'s std::string (text pointer at offset 0,
   *                           length at 8), or without '*'/'^' a Go string (the same
   *                           two words in two registers); '...': more members not
   *                           described
   *   MEMBER := NAME ':' CODE '@' OFFSET (bytes, decimal)
   *   CODE   := i1|i2|i4|i8 (signed) | u1|u2|u4|u8 | p (pointer) | s (char *) |
   *             f4|f8 | cN (an array of N chars) | S (std::string) | o (other) */
  const char *const *param_members;
  /* Added after param_members; filled when ft_host_api.function_size >=
   * FT_FUNCTION_SIZE_WITH_RET_MEMBERS: the structure the function returns in its
   * return registers, in the grammar above without '*' or '^' ("S": a Go string
   * result, its text pointer in retval and its length in arg(ctx, 1) at the return),
   * else "". Reading it needs the traced memory at the return: the host stops there. */
  const char *ret_members;
} ft_function;

#define FT_FUNCTION_SIZE_WITH_FORMATS (offsetof(ft_function, param_formats) + sizeof(const char *const *))
#define FT_FUNCTION_SIZE_WITH_MEMBERS (offsetof(ft_function, param_members) + sizeof(const char *const *))
#define FT_FUNCTION_SIZE_WITH_RET_MEMBERS (offsetof(ft_function, ret_members) + sizeof(const char *))

/* A module (executable, shared library) mapped into or unmapped from a process. */
typedef struct ft_module {
  const char *path;    /* as mapped (/proc/PID/maps) */
  ft_addr base, end;   /* its mapping, end exclusive */
  const char *build_id; /* lowercase hex, "" if none */
  int is_main_program;
  int loaded;          /* 1: mapped (its symbols are offered next); 0: unmapped */
} ft_module;

/* A system call stop (ft_plugin.syscall). */
typedef struct ft_syscall {
  long nr;           /* x86-64 system call number; at an exit, -1 if its entry was not seen */
  int is_exit;       /* 0: entry (args valid), 1: exit (ret valid) */
  uint64_t args[6];  /* at entry */
  int64_t ret;       /* at exit: the result, -errno on failure */
} ft_syscall;

/* Lifecycle events (ft_plugin.event). */
enum ft_event_kind {
  FT_EVENT_PROCESS_CREATED, /* tracing of a process started (launch, attach, fork);
                               value: the traced parent's pid for a forked child, else 0;
                               address: 1 when attached (-p), else 0;
                               text: "launch", "attach", "fork", or "vfork" (a child that
                               runs on its parent's memory until it execs or exits) */
  FT_EVENT_THREAD_CREATED,
  FT_EVENT_THREAD_EXITED,   /* value: exit status */
  FT_EVENT_EXEC,            /* text: new executable */
  FT_EVENT_SIGNAL,          /* value: signal number delivered to the program; text: its name */
  FT_EVENT_EXITED,          /* value: exit status of the process */
  FT_EVENT_KILLED,          /* value: signal number; address: faulting address or 0 */
  FT_EVENT_DETACHED,        /* tracing interrupted: functracer lets go of the process,
                               which runs on untraced (detach on SIGINT/SIGTERM, -p) */
};

typedef struct ft_event {
  enum ft_event_kind kind;
  int64_t value;
  ft_addr address;
  const char *text;
} ft_event;

/* A field of a record written to the trace (see doc/trace-format.md). */
enum ft_field_kind { FT_FIELD_INT, FT_FIELD_HEX, FT_FIELD_STRING, FT_FIELD_HEX_LIST };
typedef struct ft_field {
  const char *key; /* [a-z0-9_]+ */
  enum ft_field_kind kind;
  int64_t i;          /* FT_FIELD_INT */
  uint64_t u;         /* FT_FIELD_HEX */
  const char *s;      /* FT_FIELD_STRING (NUL-terminated) */
  const uint64_t *list; /* FT_FIELD_HEX_LIST */
  size_t list_len;
} ft_field;

/* Helpers functracer offers to plugins. */
typedef struct ft_host_api {
  uint32_t api_version; /* FT_HOST_API_VERSION */
  uint32_t size;        /* sizeof(ft_host_api) of the host */

  /* Session configuration: "audit" (the -a patterns), "output" (the -o dir, NULL when
   * streaming to stderr), "backtrace_depth" (-b), "backtrace_all" ("1" with -A),
   * "monitor" (-M sizes), "quiet" ("1" with -q), "main_stripped" (the path of the
   * main executable when it has no symbol table), "main_go" (its path when the Go
   * toolchain built it). NULL when not set. */
  const char *(*option)(const char *name);
  void (*warn)(const char *message); /* one line on stderr, prefixed "functracer: " */

  /* The event's process and thread, time (CLOCK_MONOTONIC ns) and call depth. */
  int (*pid)(ft_ctx *ctx);
  int (*tid)(ft_ctx *ctx);
  uint64_t (*time_ns)(ft_ctx *ctx);
  unsigned (*depth)(ft_ctx *ctx);

  /* Integer argument i (0..5) at a call (of a Go function: Go's internal ABI's
   * registers, see FT_REG_FP0; at a Go function's return, its result registers), the
   * return value at a return. */
  uint64_t (*arg)(ft_ctx *ctx, unsigned i);
  uint64_t (*retval)(ft_ctx *ctx);

  /* Read the traced process's memory. Return bytes read, or -1. read_string stops at
   * NUL or n-1 bytes and always terminates buf. */
  long (*read_memory)(ft_ctx *ctx, ft_addr addr, void *buf, size_t n);
  long (*read_string)(ft_ctx *ctx, ft_addr addr, char *buf, size_t n);

  /* Append a record to the trace of ctx's process (sequence number, tid and time are
   * added by the host). With no output directory the trace is streamed to stderr. */
  void (*record)(ft_ctx *ctx, const char *type, const ft_field *fields, size_t nfields);
  /* When streaming (no -o): print one human-readable line for ctx's thread on stderr,
   * prefixed with the pid/tid. Ignored when writing trace files. */
  void (*print)(ft_ctx *ctx, const char *line);

  /* The low 8 bytes of floating-point argument register i (0..7; x86-64: xmm i) at a
   * call, or of the floating-point return register (i = 0) at a return. Costs one
   * more request to the kernel per event; 0 if it cannot be read. */
  uint64_t (*fp_arg)(ft_ctx *ctx, unsigned i);

  /* The call stack of ctx's thread, through libunwind: at most max return addresses,
   * innermost first, starting with the return address of the traced function (the
   * caller's pc) at a call or return event, with the thread's pc at other events.
   * Return addresses functracer replaced with its trampoline are given as the real
   * ones. Returns the number of frames written (0 when none can be found). Costs one
   * read of the stack per event plus unwind-table lookups, which are cached. */
  int (*backtrace)(ft_ctx *ctx, ft_addr *frames, int max);

  /* The process ctx's thread belongs to. It is pid(ctx) except for a vfork child
   * that functracer does not follow (-f): until it execs or exits it runs on its
   * parent's memory, so its calls are reported as the parent's (pid(ctx) is the
   * parent, tid(ctx) the child) — but it has its own file descriptors, signal
   * state and so on. */
  int (*thread_pid)(ft_ctx *ctx);

  /* sizeof(ft_function) of the host: the members of ft_function a plugin may read
   * (param_labels and param_formats when >= FT_FUNCTION_SIZE_WITH_FORMATS). Added to
   * version 2 after its first release: read it only when `size` covers it. */
  uint32_t function_size;
} ft_host_api;

/* A traced process's memory at a moment it is about to be lost to functracer: at
 * its end (the exit stop of its last thread, after atexit handlers and destructors
 * ran, before the kernel releases the address space) or just before a detach. For
 * plugins that look at the whole memory at once (memtrace's leak scan). The memory
 * is read with host->read_memory on the snapshot's context; every thread of the
 * process is stopped or gone while the callback runs. */
typedef struct ft_snapshot_thread {
  int tid;
  ft_addr sp;            /* its stack pointer (at its exit stop, for a thread gone) */
  ft_addr stack_end;     /* end of the mapping that holds sp, 0 if none does */
  const uint64_t *regs;  /* its general-purpose registers (x86-64: struct
                            user_regs_struct, as 64-bit words), NULL for a thread whose
                            registers are gone */
  size_t nregs;
} ft_snapshot_thread;

typedef struct ft_snapshot_region {
  ft_addr start, end;    /* a mapping of /proc/PID/maps, end exclusive */
  uint64_t offset;       /* file offset of start */
  int readable, writable, executable;
  const char *path;      /* "" for anonymous memory, "[heap]", "[stack]", a file */
} ft_snapshot_region;

typedef struct ft_snapshot {
  const char *reason;    /* "exit" or "detach" */
  const ft_snapshot_thread *threads;
  size_t nthreads;
  const ft_snapshot_region *regions; /* in address order */
  size_t nregions;
} ft_snapshot;

/* What a plugin's `call` and `ret` callbacks read of one function's events
 * (ft_plugin.capture, version 3). When every plugin that wants a function's calls
 * declares what it reads and the traced process can record that much by itself, the
 * call is recorded inside the process without a ptrace stop (doc/internals.md §8b)
 * and delivered later, at the process's next stop or when functracer drains the
 * process's buffers — in order per thread, before any later event of that thread —
 * through the ordinary callbacks. Such a delivery answers exactly what was declared:
 * arg(i) for i < int_args, fp_arg(i) for i < fp_args, backtrace its first frame (the
 * return address); read_memory and read_string fail, and an argument past the
 * declaration reads as 0. A function whose
 * declaration asks for more than the process records (today: floating-point
 * arguments, strings, backtraces of more than one frame) takes the stop path, with
 * everything available. */
typedef struct ft_capture {
  unsigned int_args;    /* integer argument registers the call callback reads (0..6) */
  unsigned fp_args;     /* floating-point argument registers it reads (0..8) */
  unsigned strings;     /* integer arguments it reads a string at (bit i: argument i) */
  unsigned backtrace;   /* frames it asks host->backtrace for at the call (0: none; 1: the
                           call site, which a recorded call always has) */
} ft_capture;

/* What a plugin gives functracer. Unused callbacks may be NULL. */
typedef struct ft_plugin {
  uint32_t api_version; /* FT_PLUGIN_API_VERSION, or 2 for a table without `capture` */
  uint32_t size;        /* sizeof(ft_plugin) */
  const char *name;
  void *data;           /* passed back to every callback */

  /* A module was mapped (before its symbols are offered) or unmapped. */
  void (*module)(void *data, ft_ctx *ctx, const ft_module *mod);
  /* FT_TRACE_* flags for sym; *tag (0 on entry) may be set to a value that comes
   * back in ft_function.tag of this plugin's events for that function. */
  unsigned (*symbol)(void *data, const ft_symbol *sym, uint64_t *tag);
  void (*call)(void *data, ft_ctx *ctx, const ft_function *fn);
  void (*ret)(void *data, ft_ctx *ctx, const ft_function *fn);
  /* The frame of fn was left without a return; reason "longjmp", "exception", "exit",
   * "detach". */
  void (*unwound)(void *data, ft_ctx *ctx, const ft_function *fn, const char *reason);
  void (*event)(void *data, ft_ctx *ctx, const ft_event *ev);
  /* System call entries and exits of every traced thread. Opt-in: when any plugin has
   * this callback, threads stop at every system call (two more stops per call). */
  void (*syscall)(void *data, ft_ctx *ctx, const ft_syscall *sc);
  /* End of the session (all processes gone or detached). */
  void (*finish)(void *data);
  /* The process's memory at its end or before a detach (ft_snapshot). Added to
   * version 2 after its first release: a table whose size ends before this member
   * is still loaded, without it. Having it makes every thread's exit one more stop. */
  void (*snapshot)(void *data, ft_ctx *ctx, const ft_snapshot *snap);
  /* Version 3: what the callbacks for fn read (ft_capture), asked once per traced
   * function after `symbol` (fn->params filled when FT_TRACE_PARAMS was asked).
   * Returns 1 when *out (zeroed on entry) covers everything the `call` callback reads
   * for fn, 0 (or NULL) when it needs the stopped thread (any memory, registers,
   * backtraces): its calls then always take a stop. The `ret` callback is governed by
   * FT_TRACE_RETURN_VALUE as before. */
  int (*capture)(void *data, const ft_function *fn, ft_capture *out);
} ft_plugin;

/* The size of a version-2 plugin table without `snapshot`: the smallest accepted. */
#define FT_PLUGIN_MIN_SIZE (offsetof(ft_plugin, snapshot))

typedef const ft_plugin *(*ft_plugin_init_fn)(const ft_host_api *host);
#define FT_PLUGIN_INIT_SYMBOL "functracer_plugin_init"

#ifdef __cplusplus
}
#endif

#endif /* FUNCTRACER_PLUGIN_H */
