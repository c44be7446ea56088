/* Prints its real and effective user ids: "uid=R euid=E". Made setuid-root by
 * test_privilege.py, which checks that under functracer it runs without the
 * privileges (the kernel ignores the setuid bit of a traced exec). */
#include <stdio.h>
#include <unistd.h>

int main(void) {
  printf("uid=%d euid=%d\n", (int)getuid(), (int)geteuid());
  return 0;
}
