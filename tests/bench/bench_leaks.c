/* Input for the post-processor benchmark: N heap blocks allocated through
 * four different call paths, most of them freed, some leaked.
 *
 *   bench_leaks [N]     N defaults to 20000
 *
 * Iteration i allocates one block through path i % 4:
 *
 *   0: main -> bench_run -> make_record -> malloc
 *   1: main -> bench_run -> parse_line -> tokenize -> xcalloc -> calloc
 *   2: main -> bench_run -> build_tree -> node_new -> xmalloc -> malloc
 *   3: main -> bench_run -> cache_put -> cache_grow -> xmalloc -> malloc
 *
 * and keeps it in a ring of 4096 slots, freeing the block the slot held
 * before, so that about 4096 blocks are live at any time and addresses vary.
 * Every 997th block (i % 997 == 0, all four paths) is dropped from the ring
 * without being freed: a leak. The blocks still in the ring at the end are
 * freed. So the run makes N allocations and N - L frees, L = ceil(N / 997).
 *
 * stdout: "allocs=N frees=F leaked=L leaked_bytes=B" (the same in every run)
 * stderr: "bench_leaks: n=N loop_ns=T" (time of the allocating loop alone)
 *
 * stdout has a static buffer, so that the only heap blocks are the loop's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__GNUC__) && !defined(__clang__)
#define TRACED __attribute__((noinline, noclone, noipa, used))
#else
#define TRACED __attribute__((noinline, used))
#endif

#define RING 4096

static char stdout_buf[4096];
static void* ring[RING];
static long frees;
static long leaked;
static unsigned long leaked_bytes;
static volatile int sink;

static size_t block_size(long i) { return 16 + (size_t)((i * 7) % 128) * 8; }

TRACED void* xmalloc(size_t n) {
  void* p = malloc(n);
  if (!p) abort();
  return p;
}

TRACED void* xcalloc(size_t nmemb, size_t size) {
  void* p = calloc(nmemb, size);
  if (!p) abort();
  return p;
}

TRACED void* make_record(size_t n) {
  unsigned char* p = malloc(n);
  if (!p) abort();
  memset(p, 1, n);
  return p;
}

TRACED void* tokenize(size_t n) {
  unsigned char* p = xcalloc(n / 8, 8);
  p[0] = 2;
  return p;
}

TRACED void* parse_line(size_t n) {
  void* p = tokenize(n);
  sink = 1; /* after the call: not a tail call */
  return p;
}

TRACED void* node_new(size_t n) {
  unsigned char* p = xmalloc(n);
  memset(p, 3, n);
  return p;
}

TRACED void* build_tree(size_t n) {
  void* p = node_new(n);
  sink = 2;
  return p;
}

TRACED void* cache_grow(size_t n) {
  unsigned char* p = xmalloc(n);
  p[n - 1] = 4;
  return p;
}

TRACED void* cache_put(size_t n) {
  void* p = cache_grow(n);
  sink = 3;
  return p;
}

TRACED void bench_run(long n) {
  for (long i = 0; i < n; ++i) {
    size_t size = block_size(i);
    void* p;
    switch (i % 4) {
      case 0: p = make_record(size); break;
      case 1: p = parse_line(size); break;
      case 2: p = build_tree(size); break;
      default: p = cache_put(size); break;
    }
    void** slot = &ring[i % RING];
    if (*slot) {
      free(*slot);
      ++frees;
    }
    if (i % 997 == 0) {
      *slot = NULL; /* lost: a leak */
      ++leaked;
      leaked_bytes += size;
    } else {
      *slot = p;
    }
  }
  for (int s = 0; s < RING; ++s) {
    if (ring[s]) {
      free(ring[s]);
      ring[s] = NULL;
      ++frees;
    }
  }
}

int main(int argc, char** argv) {
  setvbuf(stdout, stdout_buf, _IOFBF, sizeof stdout_buf);
  long n = argc > 1 ? atol(argv[1]) : 20000;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  bench_run(n);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  long long ns = (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
  printf("allocs=%ld frees=%ld leaked=%ld leaked_bytes=%lu\n", n, frees, leaked, leaked_bytes);
  fprintf(stderr, "bench_leaks: n=%ld loop_ns=%lld\n", n, ns);
  return 0;
}
