/* C library functions that have several symbols at one address in glibc (puts and
 * _IO_puts; fopen, fopen64 and _IO_fopen; free, cfree and __libc_free; malloc and
 * __libc_malloc; snprintf and __snprintf; fclose and _IO_fclose), called a known number
 * of times each: functracer -c must count them under the names the program calls, as
 * ltrace -c does (tests/integration/test_summary_aliases.py). */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  char buf[32];
  for (int i = 0; i < 3; ++i) {
    snprintf(buf, sizeof buf, "line %d", i);
    puts(buf);
  }
  for (int i = 0; i < 2; ++i) {
    FILE* f = fopen("/proc/self/stat", "r");
    if (!f) return 1;
    fclose(f);
  }
  for (int i = 0; i < 4; ++i) free(malloc(16 + (size_t)i));
  /* With _FILE_OFFSET_BITS=64 (the build's default) <stdio.h> makes fopen a call of
   * fopen64: the name the program calls. */
#ifdef __USE_FILE_OFFSET64
  const char* fopen_name = "fopen64";
#else
  const char* fopen_name = "fopen";
#endif
  printf("calls snprintf=3 puts=3 %s=2 fclose=2 malloc=4 free=4\n", fopen_name);
  return 0;
}
