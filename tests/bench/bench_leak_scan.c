/* A large heap for the leak scan's cost: N blocks of SIZE bytes (default 1,048,576
 * blocks of 1,024 bytes: 1 GiB), chained in lists of 16. Every other list is
 * dropped (its head definitely lost, 15 nodes indirectly lost); the others stay
 * reachable from a table in a global. Then the program exits: the scan runs at the
 * exit stop (functracer) or in valgrind's leak check.
 *
 *   bench_leak_scan [N [SIZE]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void** g_lists;

int main(int argc, char** argv) {
  size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1u << 20;
  size_t size = argc > 2 ? strtoul(argv[2], NULL, 10) : 1024;
  size_t lists = n / 16;
  g_lists = calloc(lists, sizeof *g_lists);
  for (size_t l = 0; l < lists; ++l) {
    void** head = NULL;
    for (int i = 0; i < 16; ++i) {
      void** b = malloc(size);
      memset(b, 0, size);
      b[0] = head;
      head = b;
    }
    g_lists[l] = l % 2 ? NULL : head;
  }
  printf("bench_leak_scan: blocks=%zu size=%zu lost_lists=%zu\n", lists * 16, size, lists / 2);
  return 0;
}
