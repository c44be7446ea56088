#include "core/builtin_prototypes.h"

#include "common/check.h"

namespace ft {
namespace {

constexpr std::string_view kText = R"(
// Files and descriptors
int open(const char *path, O_flags flags, ...);
int open64(const char *path, O_flags flags, ...);
int openat(AT_dirfd dirfd, const char *path, O_flags flags, ...);
int creat(const char *path, mode_t mode);
int close(int fd);
ssize_t read(int fd, void *buf, size_t count);
ssize_t write(int fd, const void *buf, size_t count);
ssize_t pread(int fd, void *buf, size_t count, off_t offset);
ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset);
off_t lseek(int fd, off_t offset, SEEK_whence whence);
int dup(int fd);
int dup2(int oldfd, int newfd);
int pipe(int *fds);
int fcntl(int fd, F_command cmd, ...);
int ioctl(int fd, unsigned long request, ...);
int fsync(int fd);
int ftruncate(int fd, off_t length);
int truncate(const char *path, off_t length);
int isatty(int fd);
int access(const char *path, ACCESS_mode mode);
int faccessat(AT_dirfd dirfd, const char *path, ACCESS_mode mode, AT_flags flags);
int stat(const char *path, struct stat *buf);
int lstat(const char *path, struct stat *buf);
int fstat(int fd, struct stat *buf);
int fstatat(AT_dirfd dirfd, const char *path, struct stat *buf, AT_flags flags);
int unlink(const char *path);
int unlinkat(AT_dirfd dirfd, const char *path, AT_flags flags);
int rename(const char *oldpath, const char *newpath);
int mkdir(const char *path, mode_t mode);
int rmdir(const char *path);
int chdir(const char *path);
int chmod(const char *path, mode_t mode);
int chown(const char *path, uid_t owner, gid_t group);
char *getcwd(void *buf, size_t size);
ssize_t readlink(const char *path, void *buf, size_t size);
char *realpath(const char *path, void *resolved);
DIR *opendir(const char *path);
struct dirent *readdir(DIR *dir);
int closedir(DIR *dir);
void *mmap(void *addr, size_t length, PROT_flags prot, MAP_flags flags, int fd, off_t offset);
int munmap(void *addr, size_t length);
int mprotect(void *addr, size_t length, PROT_flags prot);

// Streams
FILE *fopen(const char *path, const char *mode);
FILE *fopen64(const char *path, const char *mode);
FILE *fdopen(int fd, const char *mode);
FILE *freopen(const char *path, const char *mode, FILE *stream);
int fclose(FILE *stream);
size_t fread(void *buf, size_t size, size_t n, FILE *stream);
size_t fwrite(const void *buf, size_t size, size_t n, FILE *stream);
char *fgets(void *buf, int size, FILE *stream);
int fputs(const char *s, FILE *stream);
int puts(const char *s);
int fputc(int c, FILE *stream);
int putc(int c, FILE *stream);
int putchar(int c);
int fgetc(FILE *stream);
int getc(FILE *stream);
int ungetc(int c, FILE *stream);
int fflush(FILE *stream);
int fseek(FILE *stream, long offset, SEEK_whence whence);
long ftell(FILE *stream);
int fileno(FILE *stream);
int feof(FILE *stream);
int ferror(FILE *stream);
int printf(const char *format, ...);
int fprintf(FILE *stream, const char *format, ...);
int dprintf(int fd, const char *format, ...);
int sprintf(void *buf, const char *format, ...);
int snprintf(void *buf, size_t size, const char *format, ...);
int sscanf(const char *s, const char *format, ...);
void perror(const char *s);

// Strings
size_t strlen(const char *s);
size_t strnlen(const char *s, size_t maxlen);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
int strcasecmp(const char *a, const char *b);
int strncasecmp(const char *a, const char *b, size_t n);
int strcoll(const char *a, const char *b);
char *strcpy(void *dest, const char *src);
char *strncpy(void *dest, const char *src, size_t n);
char *stpcpy(void *dest, const char *src);
char *strcat(char *dest, const char *src);
char *strncat(char *dest, const char *src, size_t n);
char *strchr(const char *s, int c);
char *strrchr(const char *s, int c);
char *strstr(const char *haystack, const char *needle);
char *strpbrk(const char *s, const char *accept);
size_t strspn(const char *s, const char *accept);
size_t strcspn(const char *s, const char *reject);
char *strdup(const char *s);
char *strndup(const char *s, size_t n);
char *strtok(char *s, const char *delim);
char *strerror(int errnum);
char *strsignal(SIG_number sig);
long strtol(const char *s, char **end, int base);
unsigned long strtoul(const char *s, char **end, int base);
long long strtoll(const char *s, char **end, int base);
unsigned long long strtoull(const char *s, char **end, int base);
double strtod(const char *s, char **end);
float strtof(const char *s, char **end);
int atoi(const char *s);
long atol(const char *s);
double atof(const char *s);
int toupper(int c);
int tolower(int c);
char *getenv(const char *name);
char *secure_getenv(const char *name);
int setenv(const char *name, const char *value, int overwrite);
int unsetenv(const char *name);
int putenv(char *string);
char *setlocale(LC_category category, const char *locale);
char *bindtextdomain(const char *domain, const char *dir);
char *textdomain(const char *domain);
char *gettext(const char *msgid);
char *dgettext(const char *domain, const char *msgid);
char *dcgettext(const char *domain, const char *msgid, LC_category category);

// Memory
void *malloc(size_t size);
void *calloc(size_t n, size_t size);
void *realloc(void *ptr, size_t size);
void *reallocarray(void *ptr, size_t n, size_t size);
void free(void *ptr);
int posix_memalign(void **result, size_t alignment, size_t size);
void *aligned_alloc(size_t alignment, size_t size);
void *memalign(size_t alignment, size_t size);
void *memcpy(void *dest, const void *src, size_t n);
void *memmove(void *dest, const void *src, size_t n);
void *memset(void *s, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
void *memchr(const void *s, int c, size_t n);

// Processes and signals
pid_t fork(void);
pid_t vfork(void);
int execve(const char *path, char **argv, char **envp);
int execv(const char *path, char **argv);
int execvp(const char *file, char **argv);
int execl(const char *path, const char *arg, ...);
int execlp(const char *file, const char *arg, ...);
void exit(int status);
void _exit(int status);
int atexit(void (*function)(void));
void abort(void);
pid_t waitpid(pid_t pid, int *status, W_options options);
pid_t wait(int *status);
pid_t getpid(void);
pid_t getppid(void);
uid_t getuid(void);
uid_t geteuid(void);
gid_t getgid(void);
gid_t getegid(void);
int kill(pid_t pid, SIG_number sig);
int raise(SIG_number sig);
int sigaction(SIG_number sig, const struct sigaction *act, struct sigaction *old);
int system(const char *command);
unsigned int sleep(unsigned int seconds);
int usleep(useconds_t usec);
int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg);
int pthread_join(pthread_t thread, void **result);
int pthread_mutex_lock(pthread_mutex_t *mutex);
int pthread_mutex_unlock(pthread_mutex_t *mutex);

// Time
time_t time(time_t *t);
int clock_gettime(CLOCK_id clock, struct timespec *ts);
int gettimeofday(struct timeval *tv, void *tz);
int nanosleep(const struct timespec *req, struct timespec *rem);
clock_t clock(void);
struct tm *localtime(const time_t *t);
struct tm *localtime_r(const time_t *t, struct tm *result);
struct tm *gmtime(const time_t *t);
struct tm *gmtime_r(const time_t *t, struct tm *result);
time_t mktime(struct tm *tm);
size_t strftime(void *buf, size_t max, const char *format, const struct tm *tm);
char *ctime(const time_t *t);
char *asctime(const struct tm *tm);
double difftime(time_t end, time_t start);

// Sockets
int socket(AF_family domain, SOCK_type type, int protocol);
int socketpair(AF_family domain, SOCK_type type, int protocol, int *fds);
int bind(int fd, const struct sockaddr *addr, socklen_t len);
int connect(int fd, const struct sockaddr *addr, socklen_t len);
int listen(int fd, int backlog);
int accept(int fd, struct sockaddr *addr, socklen_t *len);
int accept4(int fd, struct sockaddr *addr, socklen_t *len, SOCK_type flags);
ssize_t send(int fd, const void *buf, size_t len, int flags);
ssize_t recv(int fd, void *buf, size_t len, int flags);
ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *addr, socklen_t alen);
ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr, socklen_t *alen);
int shutdown(int fd, int how);
int setsockopt(int fd, int level, int name, const void *value, socklen_t len);
int getsockopt(int fd, int level, int name, void *value, socklen_t *len);
int getsockname(int fd, struct sockaddr *addr, socklen_t *len);
int getpeername(int fd, struct sockaddr *addr, socklen_t *len);
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res);
void freeaddrinfo(struct addrinfo *res);
char *gai_strerror(int code);
char *inet_ntop(AF_family af, const void *src, void *dst, socklen_t size);
int inet_pton(AF_family af, const char *src, void *dst);
int poll(struct pollfd *fds, nfds_t n, int timeout);
int select(int n, void *rd, void *wr, void *ex, struct timeval *timeout);

// libm
double sqrt(double x);
float sqrtf(float x);
double pow(double x, double y);
double exp(double x);
double log(double x);
double log10(double x);
double sin(double x);
double cos(double x);
double tan(double x);
double atan2(double y, double x);
double floor(double x);
double ceil(double x);
double round(double x);
double fabs(double x);
double fmod(double x, double y);
double ldexp(double x, int e);
)";

}  // namespace

std::string_view builtin_prototype_text() { return kText; }

const std::vector<CPrototype>& builtin_prototypes() {
  static const std::vector<CPrototype> table = [] {
    auto parsed = parse_c_prototypes(kText, "built-in prototypes");
    FT_CHECK(parsed.ok(), "%s", parsed.error().message.c_str());
    return std::move(*parsed);
  }();
  return table;
}

bool builtin_prototypes_apply(std::string_view path) {
  std::string_view base = path.substr(path.rfind('/') + 1);
  for (std::string_view lib : {"libc.so", "libc-", "libm.so", "libm-", "libpthread.so", "ld-linux"})
    if (base.starts_with(lib)) return true;
  return false;
}

}  // namespace ft
