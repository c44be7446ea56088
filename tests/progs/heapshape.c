// heapshape: a heap of known shape for the post-processor's heap reports (peak,
// temporary, allocators, histogram, leaks with filters and --at;
// tests/integration/test_heap_reports.py).
//
// The program keeps its own account of every block it allocates and prints it as a
// manifest on stdout at the end, written with write(2) so that stdio allocates
// nothing. Lines ("FUNCTION" is the function that calls malloc):
//   peak BYTES BLOCKS                  the most bytes it ever had live
//   peak_live FUNCTION BYTES BLOCKS    per function, what was live at that moment
//   temporary FUNCTION COUNT           blocks freed with no other allocation by the
//                                      thread since they were allocated
//   allocs FUNCTION COUNT BYTES        every allocation
//   leak FUNCTION BLOCKS BYTES         never freed
//   size SIZE COUNT                    allocations of each size
//   thread TID                         the thread that runs leaky_thread
// The peak comes before the thread is created, because pthread_create allocates
// inside libc.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { kTable = 50, kBatch = 20, kChurn = 1000, kPairs = 100, kFuncs = 8, kSizes = 16 };

struct Account {
  const char* fn;
  long live_bytes, live_blocks;
  long peak_bytes, peak_blocks;  // live when the program's peak was reached
  long allocs, alloc_bytes, temporary, leak_blocks, leak_bytes;
};

static struct Account accounts[kFuncs];
static long sizes[kSizes][2];
static long live_bytes, live_blocks, peak_bytes, peak_blocks;
static long thread_tid;

static struct Account* account(const char* fn) {
  for (int i = 0; i < kFuncs; ++i) {
    if (accounts[i].fn == NULL) accounts[i].fn = fn;
    if (strcmp(accounts[i].fn, fn) == 0) return &accounts[i];
  }
  abort();
}

static void count_size(long size) {
  for (int i = 0; i < kSizes; ++i) {
    if (sizes[i][1] == 0) sizes[i][0] = size;
    if (sizes[i][0] == size) {
      ++sizes[i][1];
      return;
    }
  }
  abort();
}

static void note_alloc(const char* fn, long size) {
  struct Account* a = account(fn);
  ++a->allocs;
  a->alloc_bytes += size;
  a->live_bytes += size;
  ++a->live_blocks;
  count_size(size);
  live_bytes += size;
  ++live_blocks;
  if (live_bytes > peak_bytes) {
    peak_bytes = live_bytes;
    peak_blocks = live_blocks;
    for (int i = 0; i < kFuncs; ++i) {
      accounts[i].peak_bytes = accounts[i].live_bytes;
      accounts[i].peak_blocks = accounts[i].live_blocks;
    }
  }
}

static void note_free(const char* fn, long size, int temporary) {
  struct Account* a = account(fn);
  a->live_bytes -= size;
  --a->live_blocks;
  a->temporary += temporary;
  live_bytes -= size;
  --live_blocks;
}

static void* xmalloc(size_t n) {
  void* p = malloc(n);
  if (p == NULL) abort();
  memset(p, 0x5a, n);
  return p;
}

static char* table[kTable];

__attribute__((noinline)) void build_table(void) {
  for (int i = 0; i < kTable; ++i) {
    table[i] = xmalloc(200);
    note_alloc("build_table", 200);
  }
}

__attribute__((noinline)) void load_batch(void) {
  char* batch[kBatch];
  for (int i = 0; i < kBatch; ++i) {
    batch[i] = xmalloc(4096);
    note_alloc("load_batch", 4096);
  }
  for (int i = 0; i < kBatch; ++i) {
    free(batch[i]);
    note_free("load_batch", 4096, i == kBatch - 1);  // the last one: nothing since
  }
}

__attribute__((noinline)) void drop_half(void) {
  for (int i = 0; i < kTable / 2; ++i) {
    free(table[i]);
    note_free("build_table", 200, 0);
  }
}

__attribute__((noinline)) long churn(void) {
  long sum = 0;
  for (int i = 0; i < kChurn; ++i) {
    char* p = xmalloc(48);
    note_alloc("churn", 48);
    sum += p[i % 48];
    free(p);
    note_free("churn", 48, 1);
  }
  return sum;
}

// a then b, free a, free b: b is freed with no allocation after it (temporary), a is
// not (b was allocated after it).
__attribute__((noinline)) void interleaved(void) {
  for (int i = 0; i < kPairs; ++i) {
    char* a = xmalloc(40);
    note_alloc("interleaved", 40);
    char* b = xmalloc(24);
    note_alloc("interleaved", 24);
    free(a);
    note_free("interleaved", 40, 0);
    free(b);
    note_free("interleaved", 24, 1);
  }
}

__attribute__((noinline)) void leak_some(void) {
  for (int i = 0; i < 4; ++i) {
    xmalloc(100);
    note_alloc("leak_some", 100);
  }
}

__attribute__((noinline)) void leak_big(void) {
  for (int i = 0; i < 2; ++i) {
    xmalloc(3000);
    note_alloc("leak_big", 3000);
  }
}

__attribute__((noinline)) void* leaky_thread(void* arg) {
  (void)arg;
  thread_tid = syscall(SYS_gettid);
  for (int i = 0; i < 3; ++i) {
    xmalloc(72);
    note_alloc("leaky_thread", 72);
  }
  return NULL;
}

static void say(const char* format, ...) {
  char line[256];
  va_list ap;
  va_start(ap, format);
  int n = vsnprintf(line, sizeof line, format, ap);
  va_end(ap);
  if (write(1, line, (size_t)n) != n) abort();
}

int main(void) {
  build_table();
  load_batch();
  drop_half();
  long sum = churn();
  interleaved();
  leak_some();
  leak_big();
  pthread_t t;
  if (pthread_create(&t, NULL, leaky_thread, NULL) != 0 || pthread_join(t, NULL) != 0) abort();

  say("peak %ld %ld\n", peak_bytes, peak_blocks);
  for (int i = 0; i < kFuncs && accounts[i].fn; ++i) {
    struct Account* a = &accounts[i];
    if (a->peak_blocks > 0) say("peak_live %s %ld %ld\n", a->fn, a->peak_bytes, a->peak_blocks);
    if (a->temporary > 0) say("temporary %s %ld\n", a->fn, a->temporary);
    say("allocs %s %ld %ld\n", a->fn, a->allocs, a->alloc_bytes);
    if (a->live_blocks > 0) say("leak %s %ld %ld\n", a->fn, a->live_blocks, a->live_bytes);
  }
  for (int i = 0; i < kSizes && sizes[i][1]; ++i) say("size %ld %ld\n", sizes[i][0], sizes[i][1]);
  say("thread %ld\n", thread_tid);
  return sum == -1;
}
