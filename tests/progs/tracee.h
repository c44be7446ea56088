/* Shared helpers for the tracee programs in tests/progs.
 *
 * Every program checks its own results and prints, on stdout, a deterministic
 * result plus lines the integration harness reads back:
 *
 *   calls NAME=N NAME=N ...            how often each function under test ran
 *   unwound REASON NAME=N ...          frames that never return normally
 *                                      (REASON: longjmp, exception, exit)
 *   per_thread NAME=N tids=T           T threads each called NAME exactly N times
 *   follow calls NAME=N ...            counts over all processes, when traced with -f
 *   proc_calls LABEL NAME=N ...        one process's own counts, when traced with -f:
 *                                      one line per process (the launched one included),
 *                                      no two alike, so that the counts tell which trace
 *                                      file is which process's. LABEL is PARENT/NAME
 *                                      for a process that PARENT started by running
 *                                      the program again (fork/vfork/posix_spawn and
 *                                      exec); the launched process has a LABEL
 *                                      without "/".
 *
 * Functions under test are marked TRACED so that -O2 keeps exactly one
 * out-of-line copy of each: no inlining, no clones (.isra/.constprop/.part),
 * no identical-code folding, and no caller-side use of the body (noipa).
 */
#ifndef FT_TRACEE_H
#define FT_TRACEE_H

#if defined(__GNUC__) && !defined(__clang__)
#define TRACED __attribute__((noinline, noclone, noipa, used))
#else
#define TRACED __attribute__((noinline, used))
#endif

#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

/* Counting calls. BUMP is a plain increment: multi-threaded programs count in
 * per-thread memory and add up after the joins. Kernel uprobes (the bpftrace
 * oracle) refuse to probe an instruction with a LOCK prefix, so an atomic
 * increment as the first instruction of a function would hide it from them;
 * BUMP_ATOMIC is used on purpose in one place (tc_other) to give the tracer
 * such an entry instruction to relocate. */
#define BUMP(counter) ((counter)++)
#define BUMP_ATOMIC(counter) __atomic_fetch_add(&(counter), 1, __ATOMIC_RELAXED)

#endif
