/* Dies of SIGSEGV: cr_fault writes through a null struct pointer, to the
 * field at offset 0x10, so the faulting address is 0x10. Everything the
 * harness needs is printed (and flushed) before the crash. */
#include <stdio.h>
#include <stdlib.h>

#include "tracee.h"

struct node {
  long key;
  long hash;
  int value; /* offset 0x10 */
};

static struct node* volatile null_node;
static volatile long sink;

TRACED void cr_fault(struct node* n, int v) {
  n->value = v;
  sink = n->value;
}

TRACED int cr_level2(int v) {
  cr_fault(null_node, v);
  sink = v;
  return v + 1;
}

TRACED int cr_level1(int v) {
  int r = cr_level2(v + 1);
  sink = r;
  return r + 1;
}

int main(void) {
  printf("crashing at address 0x10\n");
  printf("calls cr_level1=1 cr_level2=1 cr_fault=1\n");
  printf("unwound exit cr_level1=1 cr_level2=1 cr_fault=1\n");
  fflush(stdout);
  cr_level1(41);
  printf("not reached\n");
  return 1;
}
