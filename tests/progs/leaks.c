/* Known heap leaks from every allocator entry point of the C library, among
 * many allocations that are freed again (tests/integration/test_memtrace.py).
 *
 *   leaks            leak the blocks listed below, free everything else
 *   leaks badfree    the same, and first release one block twice and free a
 *                    pointer that malloc never returned (see bad_frees())
 *
 * Every leak comes from its own function, at one call site, so that the
 * innermost frame of each leaked block's backtrace (the return address in the
 * function that called the allocator) names that function:
 *
 *   function                 blocks  bytes each  entry point
 *   leak_malloc                 3        100     malloc
 *   leak_calloc                 2        120     calloc (5 x 24)
 *   leak_realloc_grow           2        200     realloc (grown from a 16-byte malloc)
 *   leak_realloc_shrink         2         40     realloc (shrunk from a 500-byte malloc)
 *   leak_realloc_null           3         72     realloc (realloc(NULL, 72))
 *   leak_reallocarray           2        108     reallocarray (9 x 12, grown from 4 x 12)
 *   leak_memalign               2        130     memalign (alignment 64)
 *   leak_posix_memalign         3       1000     posix_memalign (alignment 256)
 *   leak_aligned_alloc          2         96     aligned_alloc (alignment 32)
 *   leak_valloc                 1       3000     valloc
 *   leak_pvalloc                1       5000     pvalloc (5000 requested; glibc
 *                                                rounds the block up to a page)
 *   leak_strdup                 2         23     malloc, called inside libc by strdup
 *
 * strdup is not an allocator entry point of its own: glibc's strdup calls
 * malloc, so the block is recorded as a malloc whose backtrace starts with the
 * return address inside strdup (libc) and goes on with leak_strdup.
 *
 * The program allocates nothing else that stays live: stdout gets a static
 * buffer before the first output (a buffer stdio allocates is never freed),
 * and nothing else in libc that keeps memory is called.
 *
 * Output, on stdout, read back by the test (the same traced and untraced):
 *   leak FUNCTION blocks=N bytes=S entry=ENTRY [align=A] [inner=F]
 *        FUNCTION leaks N blocks of S requested bytes each, through the
 *        allocator entry point ENTRY (linkage name), with alignment A; inner=F:
 *        the program calls F, which calls ENTRY inside the library
 *   leak_total blocks=N bytes=S
 *   alloc_failed ENTRY=N ...     calls that returned no memory, per entry point
 *   events allocs=N frees=M      successful allocations and releases of live
 *                                blocks, counted the way trace-format.md 3.5
 *                                records them (realloc = free + alloc, ...)
 *   bad_free double=1 unknown=1  (badfree mode only)
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tracee.h"

/* Sizes and pointers pass through volatile variables so that the compiler
 * cannot fold the calls (realloc(NULL, n) into malloc(n), a failing malloc of
 * a constant huge size) or drop malloc/free pairs. */
static volatile size_t huge = SIZE_MAX / 2;
static void* volatile null_ptr;
static void* volatile sink;

static char stdout_buf[1 << 16];

/* Loop counts the compiler cannot see, so that it keeps one call site per
 * leaking function instead of unrolling the loop into several (every call
 * site is a backtrace of its own). */
static int count(int n) {
  volatile int v = n;
  return v;
}

static unsigned long n_allocs, n_frees;

/* Every leaked block stays reachable from here. */
#define KEPT_MAX 64
static void* kept[KEPT_MAX];
static int n_kept;

static void keep(void* p, size_t n) {
  CHECK(p != NULL);
  CHECK(malloc_usable_size(p) >= n);
  CHECK(n_kept < KEPT_MAX);
  kept[n_kept++] = p;
  if (n) ((unsigned char*)p)[n - 1] = 0x5a;
  ++n_allocs;
}

struct leak {
  const char* fn;
  const char* entry;
  const char* inner;
  int blocks;
  size_t bytes;
  size_t align;
};

#define LEAKS_MAX 32
static struct leak leaks[LEAKS_MAX];
static int n_leaks;

static void note_leak(const char* fn, const char* entry, const char* inner, int blocks,
                      size_t bytes, size_t align) {
  CHECK(n_leaks < LEAKS_MAX);
  struct leak l = {fn, entry, inner, blocks, bytes, align};
  leaks[n_leaks++] = l;
}

/* ---- the leaks ---------------------------------------------------------- */

TRACED void leak_malloc(void) {
  for (int i = 0, n = count(3); i < n; ++i) {
    void* p = malloc(100);
    keep(p, 100);
  }
  note_leak("leak_malloc", "malloc", NULL, 3, 100, 0);
}

TRACED void leak_calloc(void) {
  for (int i = 0, n = count(2); i < n; ++i) {
    unsigned char* p = calloc(5, 24);
    CHECK(p && p[0] == 0 && p[119] == 0);
    keep(p, 120);
  }
  note_leak("leak_calloc", "calloc", NULL, 2, 120, 0);
}

TRACED void leak_realloc_grow(void) {
  for (int i = 0, n = count(2); i < n; ++i) {
    char* p = malloc(16);
    CHECK(p);
    ++n_allocs;
    memcpy(p, "grow me please!", 16);
    sink = p;
    char* q = realloc(p, 200);
    CHECK(q && memcmp(q, "grow me please!", 16) == 0);
    ++n_frees;
    keep(q, 200);
  }
  note_leak("leak_realloc_grow", "realloc", NULL, 2, 200, 0);
}

TRACED void leak_realloc_shrink(void) {
  for (int i = 0, n = count(2); i < n; ++i) {
    char* p = malloc(500);
    CHECK(p);
    ++n_allocs;
    memset(p, 'x', 500);
    sink = p;
    char* q = realloc(p, 40);
    CHECK(q && q[39] == 'x');
    ++n_frees;
    keep(q, 40);
  }
  note_leak("leak_realloc_shrink", "realloc", NULL, 2, 40, 0);
}

TRACED void leak_realloc_null(void) {
  for (int i = 0, n = count(3); i < n; ++i) {
    void* p = realloc(null_ptr, 72);
    keep(p, 72);
  }
  note_leak("leak_realloc_null", "realloc", NULL, 3, 72, 0);
}

TRACED void leak_reallocarray(void) {
  for (int i = 0, n = count(2); i < n; ++i) {
    int* p = reallocarray(null_ptr, 4, 12);
    CHECK(p);
    ++n_allocs;
    p[0] = 7;
    sink = p;
    int* q = reallocarray(p, 9, 12);
    CHECK(q && q[0] == 7);
    ++n_frees;
    keep(q, 108);
  }
  note_leak("leak_reallocarray", "reallocarray", NULL, 2, 108, 0);
}

TRACED void leak_memalign(void) {
  for (int i = 0, n = count(2); i < n; ++i) {
    void* p = memalign(64, 130);
    CHECK(((uintptr_t)p & 63) == 0);
    keep(p, 130);
  }
  note_leak("leak_memalign", "memalign", NULL, 2, 130, 64);
}

TRACED void leak_posix_memalign(void) {
  for (int i = 0, n = count(3); i < n; ++i) {
    void* p = NULL;
    int rc = posix_memalign(&p, 256, 1000);
    CHECK(rc == 0 && ((uintptr_t)p & 255) == 0);
    keep(p, 1000);
  }
  note_leak("leak_posix_memalign", "posix_memalign", NULL, 3, 1000, 256);
}

TRACED void leak_aligned_alloc(void) {
  for (int i = 0, n = count(2); i < n; ++i) {
    void* p = aligned_alloc(32, 96);
    CHECK(((uintptr_t)p & 31) == 0);
    keep(p, 96);
  }
  note_leak("leak_aligned_alloc", "aligned_alloc", NULL, 2, 96, 32);
}

TRACED void leak_valloc(void) {
  void* p = valloc(3000);
  CHECK(((uintptr_t)p & (uintptr_t)(sysconf(_SC_PAGESIZE) - 1)) == 0);
  keep(p, 3000);
  note_leak("leak_valloc", "valloc", NULL, 1, 3000, 0);
}

TRACED void leak_pvalloc(void) {
  void* p = pvalloc(5000);
  CHECK(((uintptr_t)p & (uintptr_t)(sysconf(_SC_PAGESIZE) - 1)) == 0);
  keep(p, 5000);
  note_leak("leak_pvalloc", "pvalloc", NULL, 1, 5000, 0);
}

TRACED void leak_strdup(void) {
  char text[] = "leaked by leak_strdup!";
  char* volatile src = text; /* not a constant the compiler could fold */
  for (int i = 0, n = count(2); i < n; ++i) {
    char* p = strdup(src);
    CHECK(p && strcmp(p, text) == 0);
    keep(p, sizeof text);
  }
  note_leak("leak_strdup", "malloc", "strdup", 2, sizeof text, 0);
}

/* ---- allocations that are freed ----------------------------------------- */

static void release(void* p) {
  CHECK(p != NULL);
  free(p);
  ++n_frees;
}

static void* got(void* p, size_t n) {
  CHECK(p != NULL);
  CHECK(malloc_usable_size(p) >= n);
  sink = p;
  ++n_allocs;
  return p;
}

TRACED void pairs_malloc(int n) {
  for (int i = 0; i < n; ++i) {
    size_t sz = 1 + (size_t)(i * 37) % 3000;
    release(got(malloc(sz), sz));
  }
  /* Blocks held at the same time, freed in another order. */
  void* held[256];
  for (int i = 0; i < 256; ++i) held[i] = got(malloc(8 + (size_t)i * 3), 8 + (size_t)i * 3);
  for (int i = 255; i >= 0; i -= 2) release(held[i]);
  for (int i = 0; i < 256; i += 2) release(held[i]);
  /* A few large blocks, which glibc maps on their own. */
  for (int i = 0; i < 8; ++i) release(got(malloc(300000 + (size_t)i), 300000 + (size_t)i));
  /* malloc(0) returns a block that must be freed like any other. */
  for (int i = 0; i < 50; ++i) release(got(malloc(0), 0));
}

TRACED void pairs_calloc(int n) {
  for (int i = 0; i < n; ++i) {
    size_t k = 1 + (size_t)i % 50;
    unsigned char* p = got(calloc(k, 16), k * 16);
    CHECK(p[k * 16 - 1] == 0);
    release(p);
  }
}

TRACED void pairs_realloc_chain(int n) {
  for (int i = 0; i < n; ++i) {
    char* p = got(realloc(null_ptr, 8), 8);
    memset(p, 'a' + i % 26, 8);
    size_t sz = 8;
    for (int step = 0; step < 10; ++step) {
      size_t nsz = sz * 2 + (size_t)step;
      char* q = realloc(p, nsz);
      CHECK(q && q[sz - 1] == 'a' + i % 26);
      memset(q + sz, 'a' + i % 26, nsz - sz);
      ++n_frees;
      got(q, nsz);
      p = q;
      sz = nsz;
    }
    for (int step = 0; step < 3; ++step) {
      sz /= 3;
      char* q = realloc(p, sz);
      CHECK(q && q[sz - 1] == 'a' + i % 26);
      ++n_frees;
      got(q, sz);
      p = q;
    }
    if (i % 2) {
      /* realloc(p, 0) frees p and returns NULL (glibc): only a release. */
      void* r = realloc(p, 0);
      CHECK(r == NULL);
      ++n_frees;
    } else {
      release(p);
    }
  }
}

TRACED void pairs_reallocarray(int n) {
  for (int i = 0; i < n; ++i) {
    long* p = got(reallocarray(null_ptr, 3, sizeof(long)), 3 * sizeof(long));
    p[2] = i;
    long* q = reallocarray(p, 40 + (size_t)i % 7, sizeof(long));
    CHECK(q && q[2] == i);
    ++n_frees;
    got(q, 40 * sizeof(long));
    release(q);
  }
}

TRACED void pairs_aligned(int n) {
  long page = sysconf(_SC_PAGESIZE);
  for (int i = 0; i < n; ++i) {
    size_t align = (size_t)16 << (i % 6);
    size_t sz = 10 + (size_t)i % 400;
    void* p = got(memalign(align, sz), sz);
    CHECK(((uintptr_t)p & (align - 1)) == 0);
    release(p);

    void* q = NULL;
    CHECK(posix_memalign(&q, align, sz) == 0);
    got(q, sz);
    CHECK(((uintptr_t)q & (align - 1)) == 0);
    release(q);

    size_t asz = (sz + align - 1) / align * align;
    void* r = got(aligned_alloc(align, asz), asz);
    CHECK(((uintptr_t)r & (align - 1)) == 0);
    release(r);

    if (i % 4 == 0) {
      void* v = got(valloc(sz), sz);
      CHECK(((uintptr_t)v & (uintptr_t)(page - 1)) == 0);
      release(v);
      void* w = got(pvalloc(sz), sz);
      CHECK(((uintptr_t)w & (uintptr_t)(page - 1)) == 0);
      release(w);
    }
  }
}

TRACED void pairs_strdup(int n) {
  char text[64];
  for (int i = 0; i < n; ++i) {
    snprintf(text, sizeof text, "copy number %d of a string", i);
    char* volatile src = text;
    char* p = got(strdup(src), strlen(text) + 1);
    CHECK(strcmp(p, text) == 0);
    release(p);
  }
}

TRACED void pairs_free_null(int n) {
  for (int i = 0; i < n; ++i) free(null_ptr); /* records nothing */
}

static unsigned long failed_malloc, failed_calloc, failed_realloc, failed_reallocarray,
    failed_posix_memalign, failed_memalign, failed_aligned_alloc, failed_valloc, failed_pvalloc;

TRACED void fail_allocs(void) {
  CHECK(malloc(huge) == NULL);
  ++failed_malloc;
  CHECK(malloc(huge + 1000) == NULL);
  ++failed_malloc;
  CHECK(calloc(huge, 4) == NULL); /* nmemb x size overflows */
  ++failed_calloc;

  /* A failed realloc leaves the block live; it is freed afterwards. */
  char* p = got(malloc(64), 64);
  CHECK(realloc(p, huge) == NULL);
  ++failed_realloc;
  p[63] = 1;
  release(p);

  CHECK(reallocarray(null_ptr, huge, 16) == NULL); /* overflow */
  ++failed_reallocarray;

  void* q = sink;
  CHECK(posix_memalign(&q, 3, 64) == EINVAL); /* not a power of two */
  CHECK(q == sink);
  ++failed_posix_memalign;
  CHECK(posix_memalign(&q, 64, huge) == ENOMEM);
  ++failed_posix_memalign;

  CHECK(memalign(64, huge) == NULL);
  ++failed_memalign;
  CHECK(aligned_alloc(64, huge & ~(size_t)63) == NULL);
  ++failed_aligned_alloc;
  CHECK(valloc(huge) == NULL);
  ++failed_valloc;
  CHECK(pvalloc(huge) == NULL);
  ++failed_pvalloc;
}

/* ---- releases of addresses that are not live (badfree mode) ------------- */

struct chunk_header {
  size_t prev_size;
  size_t size; /* low bits: flags; 2 = IS_MMAPPED */
};
#define CHUNK_IS_MMAPPED 2

/* glibc releases a block that malloc mapped on its own (above the mmap
 * threshold, 128 KiB at first) with munmap_chunk(), which only checks that the
 * chunk header in front of the block describes whole pages, and unmaps them.
 * That allows two bad releases that glibc neither detects nor crashes on:
 *
 *   double:  a 256 KiB block is freed; its pages are mapped again at the same
 *            place (MAP_FIXED_NOREPLACE, nothing else was mapped in between)
 *            with the same chunk header, and the same pointer is freed again.
 *   unknown: a chunk header for two pages of our own mmap is written at their
 *            start, and free() is given the address just after it, which no
 *            allocator ever returned.
 *
 * Both run before anything else, while the threshold is still at its start. */
TRACED void bad_double_free(void) {
  size_t n = 256 * 1024;
  unsigned char* p = got(malloc(n), n);
  struct chunk_header h;
  memcpy(&h, p - sizeof h, sizeof h);
  CHECK(h.size & CHUNK_IS_MMAPPED);
  size_t total = h.prev_size + (h.size & ~(size_t)7);
  volatile uintptr_t block = (uintptr_t)p - sizeof h - h.prev_size;
  release(p);
  void* again = mmap((void*)block, total, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  CHECK((uintptr_t)again == block);
  /* The header is written with volatile stores: for the compiler, stores
   * into a block that is then freed are dead. */
  p = sink; /* the same pointer, laundered: the compiler would rightly object */
  volatile size_t* hp = (volatile size_t*)(p - sizeof h);
  hp[0] = h.prev_size;
  hp[1] = h.size;
  free(p); /* the second release of p: glibc unmaps the pages again */
  sink = NULL;
}

TRACED void bad_wild_free(void) {
  size_t total = 2 * (size_t)sysconf(_SC_PAGESIZE);
  unsigned char* pages =
      mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(pages != MAP_FAILED);
  volatile size_t* hp = (volatile size_t*)pages;
  hp[0] = 0;                         /* prev_size */
  hp[1] = total | CHUNK_IS_MMAPPED; /* size */
  sink = pages + sizeof(struct chunk_header);
  free(sink); /* glibc unmaps the two pages */
  sink = NULL;
}

static void bad_frees(void) {
  bad_double_free();
  bad_wild_free();
}

int main(int argc, char** argv) {
  setvbuf(stdout, stdout_buf, _IOFBF, sizeof stdout_buf);
  int badfree = argc > 1 && strcmp(argv[1], "badfree") == 0;
  if (argc > 1 && !badfree) {
    fprintf(stderr, "usage: leaks [badfree]\n");
    return 2;
  }
  if (badfree) bad_frees();

  pairs_malloc(2000);
  leak_malloc();
  pairs_calloc(800);
  leak_calloc();
  pairs_realloc_chain(150);
  leak_realloc_grow();
  leak_realloc_shrink();
  leak_realloc_null();
  pairs_reallocarray(400);
  leak_reallocarray();
  pairs_aligned(300);
  leak_memalign();
  leak_posix_memalign();
  leak_aligned_alloc();
  leak_valloc();
  leak_pvalloc();
  pairs_strdup(500);
  leak_strdup();
  pairs_free_null(100);
  fail_allocs();

  unsigned long blocks = 0, bytes = 0;
  for (int i = 0; i < n_leaks; ++i) {
    const struct leak* l = &leaks[i];
    printf("leak %s blocks=%d bytes=%zu entry=%s", l->fn, l->blocks, l->bytes, l->entry);
    if (l->align) printf(" align=%zu", l->align);
    if (l->inner) printf(" inner=%s", l->inner);
    printf("\n");
    blocks += (unsigned long)l->blocks;
    bytes += (unsigned long)l->blocks * l->bytes;
  }
  CHECK(blocks == (unsigned long)n_kept);
  printf("leak_total blocks=%lu bytes=%lu\n", blocks, bytes);
  printf("alloc_failed malloc=%lu calloc=%lu realloc=%lu reallocarray=%lu posix_memalign=%lu "
         "memalign=%lu aligned_alloc=%lu valloc=%lu pvalloc=%lu\n",
         failed_malloc, failed_calloc, failed_realloc, failed_reallocarray,
         failed_posix_memalign, failed_memalign, failed_aligned_alloc, failed_valloc,
         failed_pvalloc);
  printf("events allocs=%lu frees=%lu\n", n_allocs, n_frees);
  if (badfree) printf("bad_free double=1 unknown=1\n");
  return 0;
}
