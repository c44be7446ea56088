// heapdiff: two versions of one program for the post-processor's diff report
// (tests/integration/test_heap_reports.py). Built twice, -DVERSION=1 and -DVERSION=2:
// version 2 fixes the leak in parse_config and fills the cache with fewer blocks;
// stable() does the same in both. Only the numbers below differ, so every allocation
// is on the same line in both builds, while the code addresses differ.
//
// Manifest (stdout): "allocs FUNCTION COUNT BYTES" and "leak FUNCTION BLOCKS BYTES".
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if VERSION == 1
#define CONFIG_LEAKS 3
#define CACHE_BLOCKS 100
#else
#define CONFIG_LEAKS 0
#define CACHE_BLOCKS 40
#endif
#define CONFIG_BLOCKS 3

static void* keep[CONFIG_BLOCKS + 1];

__attribute__((noinline)) void parse_config(void) {
  char* parts[CONFIG_BLOCKS];
  for (int i = 0; i < CONFIG_BLOCKS; ++i) parts[i] = malloc(64);
  for (int i = 0; i < CONFIG_BLOCKS; ++i) {
    if (i < CONFIG_LEAKS) {
      keep[i] = parts[i];
    } else {
      free(parts[i]);
    }
  }
}

__attribute__((noinline)) long fill_cache(void) {
  long sum = 0;
  char* blocks[CACHE_BLOCKS];
  for (int i = 0; i < CACHE_BLOCKS; ++i) {
    blocks[i] = malloc(32);
    memset(blocks[i], i, 32);
  }
  for (int i = 0; i < CACHE_BLOCKS; ++i) {
    sum += blocks[i][0];
    free(blocks[i]);
  }
  return sum;
}

__attribute__((noinline)) void stable(void) {
  for (int i = 0; i < 10; ++i) {
    char* p = malloc(16);
    if (i == 9) {
      keep[CONFIG_BLOCKS] = p;
    } else {
      free(p);
    }
  }
}

int main(void) {
  parse_config();
  long sum = fill_cache();
  stable();
  printf("allocs parse_config %d %d\n", CONFIG_BLOCKS, CONFIG_BLOCKS * 64);
  if (CONFIG_LEAKS > 0) printf("leak parse_config %d %d\n", CONFIG_LEAKS, CONFIG_LEAKS * 64);
  printf("allocs fill_cache %d %d\n", CACHE_BLOCKS, CACHE_BLOCKS * 32);
  printf("allocs stable 10 160\nleak stable 1 16\n");
  return sum < 0;
}
