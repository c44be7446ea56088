// Calls whose arguments functracer must show without DWARF (test_prototypes.py):
// protolib's functions (a -F prototype file) and the C library's (the built-in
// prototypes, with libc's debug files hidden). Every call prints what it passed and
// what it got, as "CALL name(args) = result": the oracle for the trace.
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int pl_add3(int a, int b, int c);
size_t pl_strlen(const char *s);
double pl_scale(double x, int n);
float pl_halve(float x);
char *pl_greet(const char *who);
long pl_sum(int n, ...);

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "/etc/hostname";
  const char *out = argc > 2 ? argv[2] : "/dev/null";
  printf("CALL pl_add3(1, -2, 300) = %d\n", pl_add3(1, -2, 300));
  printf("CALL pl_strlen(\"copyright\") = %zu\n", pl_strlen("copyright"));
  printf("CALL pl_scale(2.5, 3) = %g\n", pl_scale(2.5, 3));
  printf("CALL pl_halve(5) = %g\n", (double)pl_halve(5.0f));
  printf("CALL pl_greet(\"world\") = \"%s\"\n", pl_greet("world"));
  printf("CALL pl_sum(3) = %ld\n", pl_sum(3, 10, 20, 30));
  int fd = open(path, O_RDONLY);
  printf("CALL open(\"%s\", O_RDONLY) = %d\n", path, fd);
  if (fd >= 0) close(fd);
  fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  printf("CALL open(\"%s\", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC) = %d\n", out, fd);
  if (fd >= 0) close(fd);
  volatile const char *word = "copyright";  // not folded into a constant
  printf("CALL strlen(\"copyright\") = %zu\n", strlen((const char *)word));
  const char *loc = setlocale(LC_ALL, "");
  printf("CALL setlocale(LC_ALL, \"\") = \"%s\"\n", loc ? loc : "(null)");
  volatile double base = 2.0;
  printf("CALL pow(2, 10) = %g\n", pow(base, 10));
  return 0;
}
