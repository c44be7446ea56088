/* File descriptors and FILE * streams opened and released through every function
 * the fileops plugin follows, with a known set left open at the end
 * (tests/integration/test_fileops.py).
 *
 *   fdleaks              phase 1: descriptors with and without close-on-exec
 *                        (every way of setting the flag), two streams, then
 *                        execv of this program in exec-child mode
 *   fdleaks exec-child fd:N:FUNCTION:WHERE... stream:N:FUNCTION:WHERE...
 *                        phase 2: told what survived the exec, opens and
 *                        closes descriptors and streams in every way (failures
 *                        included), leaks some of each kind, forks a child
 *                        that replaces and closes inherited descriptors, and
 *                        finally lists /proc/self/fd
 *
 * The program keeps its own model of which descriptors and streams are open
 * (those the stream functions open inside libc belong to their stream, not to
 * the model's descriptors) and checks it against the kernel's list at the end.
 * Every function it calls directly is counted per record the plugin is to
 * write: an fd_open per new descriptor (two for pipe and socketpair), an
 * fd_close per descriptor released (close, close_range, dup2/dup3 onto an open
 * one, fclose of an fdopen stream, close-on-exec at the exec), a file_open and
 * file_close per stream. Failed calls count nothing; neither do the calls libc
 * makes inside fopen, fclose, popen, tmpfile and the like.
 *
 * Output, on stdout (the same traced and untraced; inode numbers and temporary
 * file names are left out):
 *   expect TYPE FUNCTION=N ...      records of TYPE with that function (one line
 *                                   per phase and type: add them up)
 *   calls fd_marker=N               calls of fd_marker (one line per phase)
 *   leak fd N FUNCTION WHERE        descriptor N is open at the end; FUNCTION
 *                                   opened it, called from function WHERE
 *   leak stream FUNCTION fd N WHERE a stream is open at the end, holding fd N
 *   open fd N KIND                  the kernel's list (/proc/self/fd, without
 *                                   0, 1, 2 and the directory being read)
 *   child dup2 fd N / child close fd N
 *                                   what the forked child did to inherited fds
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tracee.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

#define MAX_FD 1024

/* ---- the program's own model ---- */

struct fdinfo {
  int open;
  int cloexec;
  const char* fn;
  const char* where;
};
static struct fdinfo model[MAX_FD];

struct stream {
  FILE* fp;
  const char* fn;
  int fd;
  int owns; /* fdopen: the model's descriptor belongs to it */
  int cloexec;
  const char* where;
};
static struct stream streams[64];
static int nstreams;

struct count {
  const char* type;
  const char* fn;
  int n;
};
static struct count counts[128];
static int ncounts;
static unsigned long marker_calls;

static char tmpdir[256];

static void bump(const char* type, const char* fn) {
  for (int i = 0; i < ncounts; ++i)
    if (strcmp(counts[i].type, type) == 0 && strcmp(counts[i].fn, fn) == 0) {
      counts[i].n++;
      return;
    }
  CHECK(ncounts < (int)(sizeof counts / sizeof counts[0]));
  counts[ncounts++] = (struct count){type, fn, 1};
}

static void got_fd(const char* fn, int fd, int cloexec, const char* where) {
  CHECK(fd > 2 && fd < MAX_FD);
  CHECK(!model[fd].open);
  model[fd] = (struct fdinfo){1, cloexec, fn, where};
  bump("fd_open", fn);
}

static void lost_fd(const char* fn, int fd) {
  CHECK(fd > 2 && fd < MAX_FD && model[fd].open);
  model[fd].open = 0;
  bump("fd_close", fn);
}

#define OPENED(fn, fd, cloexec) got_fd(fn, fd, cloexec, __func__)

static void set_cloexec(int fd, int on) {
  CHECK(fcntl(fd, F_SETFD, on ? FD_CLOEXEC : 0) == 0);
  model[fd].cloexec = on;
}

static void closefd(int fd) {
  CHECK(close(fd) == 0);
  lost_fd("close", fd);
}

static int stream_fd(FILE* fp) {
  int fd = fileno(fp);
  CHECK(fd > 2 && fd < MAX_FD);
  return fd;
}

static struct stream* find_stream(FILE* fp) {
  for (int i = 0; i < nstreams; ++i)
    if (streams[i].fp == fp) return &streams[i];
  return NULL;
}

static void got_stream(const char* fn, FILE* fp, int owns, int cloexec, const char* where) {
  CHECK(fp != NULL);
  CHECK(nstreams < (int)(sizeof streams / sizeof streams[0]));
  streams[nstreams++] = (struct stream){fp, fn, stream_fd(fp), owns, cloexec, where};
  bump("file_open", fn);
}

#define STREAM(fn, fp, owns, cloexec) got_stream(fn, fp, owns, cloexec, __func__)

static void lost_stream(const char* fn, FILE* fp) {
  struct stream* s = find_stream(fp);
  CHECK(s != NULL);
  if (s->owns) lost_fd(fn, s->fd);
  *s = streams[--nstreams];
  bump("file_close", fn);
}

static void closestream(FILE* fp) {
  lost_stream("fclose", fp);
  CHECK(fclose(fp) == 0);
}

static void tmp_path(char* buf, const char* name) { snprintf(buf, PATH_MAX, "%s/%s", tmpdir, name); }

/* Called with calltrace -a fd_marker next to fileops: a traced frame under the
 * open and close, which must still be recorded (they are not inside another
 * fileops call). */
TRACED void fd_marker(int i) {
  BUMP(marker_calls);
  int fd = open("/dev/null", O_RDONLY);
  CHECK(fd >= 0);
  OPENED("open", fd, 0);
  (void)i;
  closefd(fd);
}

/* ---- phase 1: close-on-exec ---- */

TRACED void phase_exec(void) {
  int a = open("/dev/null", O_RDONLY); /* survives the exec */
  OPENED("open", a, 0);
  int b = open("/dev/null", O_RDONLY | O_CLOEXEC);
  OPENED("open", b, 1);
  int c = open("/dev/null", O_RDONLY | O_CLOEXEC); /* flag cleared: survives */
  OPENED("open", c, 1);
  set_cloexec(c, 0);
  int d = dup(a); /* flag set: closed */
  OPENED("dup", d, 0);
  set_cloexec(d, 1);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  OPENED("socket", s, 1);
  int p[2];
  CHECK(pipe2(p, O_CLOEXEC) == 0);
  OPENED("pipe2", p[0], 1);
  OPENED("pipe2", p[1], 1);
  int sp[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == 0);
  OPENED("socketpair", sp[0], 1);
  OPENED("socketpair", sp[1], 1);
  int e = eventfd(0, EFD_CLOEXEC);
  OPENED("eventfd", e, 1);
  int t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  OPENED("timerfd_create", t, 1);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  OPENED("epoll_create1", ep, 1);
  int in = inotify_init1(IN_CLOEXEC);
  OPENED("inotify_init1", in, 1);
  int m = memfd_create("fdleaks", MFD_CLOEXEC);
  OPENED("memfd_create", m, 1);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGUSR2);
  int sf = signalfd(-1, &mask, SFD_CLOEXEC);
  OPENED("signalfd", sf, 1);
  CHECK(dup3(a, 40, O_CLOEXEC) == 40);
  OPENED("dup3", 40, 1);
  int fc = fcntl(a, F_DUPFD_CLOEXEC, 50);
  OPENED("fcntl", fc, 1);
  int fk = fcntl(a, F_DUPFD, 60); /* survives */
  OPENED("fcntl", fk, 0);
  CHECK(dup2(a, 70) == 70); /* survives */
  OPENED("dup2", 70, 0);
  CHECK(dup2(a, 200) == 200);
  OPENED("dup2", 200, 0);
  CHECK(close_range(200, 200, CLOSE_RANGE_CLOEXEC) == 0);
  model[200].cloexec = 1;
  /* Streams: one whose descriptor is closed by the exec, one whose survives. */
  FILE* fe = fopen("/dev/null", "re");
  STREAM("fopen", fe, 0, 1);
  FILE* fs = fopen("/dev/null", "r");
  STREAM("fopen", fs, 0, 0);
}

static void print_counts(void) {
  static const char* const types[] = {"fd_open", "fd_close", "file_open", "file_close"};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; ++t) {
    printf("expect %s", types[t]);
    for (int i = 0; i < ncounts; ++i)
      if (strcmp(counts[i].type, types[t]) == 0) printf(" %s=%d", counts[i].fn, counts[i].n);
    printf("\n");
  }
  printf("calls fd_marker=%lu\n", marker_calls);
}

static int run_phase1(const char* argv0) {
  for (int i = 0; i < 2; ++i) fd_marker(i);
  phase_exec();
  /* What the exec will do: close-on-exec descriptors close, streams whose
   * descriptor closes go with them. */
  char* args[MAX_FD];
  char texts[MAX_FD][96];
  int n = 0;
  args[n++] = (char*)argv0;
  args[n++] = "exec-child";
  for (int fd = 0; fd < MAX_FD; ++fd) {
    if (!model[fd].open) continue;
    if (model[fd].cloexec) {
      lost_fd("exec", fd);
      continue;
    }
    snprintf(texts[n], sizeof texts[n], "fd:%d:%s:%s", fd, model[fd].fn, model[fd].where);
    args[n] = texts[n];
    ++n;
  }
  for (int i = 0; i < nstreams; ++i) {
    if (streams[i].cloexec) {
      bump("file_close", "exec");
      continue;
    }
    snprintf(texts[n], sizeof texts[n], "stream:%d:%s:%s", streams[i].fd, streams[i].fn, streams[i].where);
    args[n] = texts[n];
    ++n;
  }
  args[n] = NULL;
  print_counts();
  fflush(stdout);
  execv("/proc/self/exe", args);
  fprintf(stderr, "execv /proc/self/exe: %s\n", strerror(errno));
  return 1;
}

/* ---- phase 2 ---- */

TRACED void do_files(void) {
  char path[PATH_MAX];
  for (int i = 0; i < 4; ++i) {
    int fd = open("/dev/null", O_RDONLY);
    OPENED("open", fd, 0);
    closefd(fd);
  }
  int fd = open64("/dev/zero", O_RDONLY);
  OPENED("open", fd, 0);
  closefd(fd);
  /* Failures record nothing. */
  CHECK(open("/nonexistent/fdleaks", O_RDONLY) == -1);
  CHECK(close(-1) == -1);
  CHECK(close(MAX_FD - 1) == -1);

  fd = open("/dev/null", O_WRONLY); /* leaked */
  OPENED("open", fd, 0);

  int dir = open(tmpdir, O_RDONLY | O_DIRECTORY);
  OPENED("open", dir, 0);
  fd = openat(dir, "one", O_WRONLY | O_CREAT | O_TRUNC, 0600);
  OPENED("openat", fd, 0);
  closefd(fd);
  fd = openat64(dir, "one", O_RDONLY);
  OPENED("openat", fd, 0);
  closefd(fd);
  CHECK(openat(dir, "missing", O_RDONLY) == -1);
  tmp_path(path, "two");
  fd = openat(AT_FDCWD, path, O_RDWR | O_CREAT, 0600); /* leaked */
  OPENED("openat", fd, 0);
  closefd(dir);

  tmp_path(path, "three");
  fd = creat(path, 0600);
  OPENED("creat", fd, 0);
  closefd(fd);
  fd = creat64(path, 0600); /* leaked */
  OPENED("creat", fd, 0);
}

static int leaked_open_fd = -1; /* the fork child replaces it */
static int leaked_dup_fd = -1;  /* the fork child closes it */

TRACED void do_dups(void) {
  int a = open("/dev/null", O_RDONLY); /* leaked */
  OPENED("open", a, 0);
  leaked_open_fd = a;
  int d = dup(a);
  OPENED("dup", d, 0);
  closefd(d);
  d = dup(a); /* leaked */
  OPENED("dup", d, 0);
  leaked_dup_fd = d;

  /* dup2 onto an open descriptor closes it first. */
  int victim = open("/dev/zero", O_RDONLY);
  OPENED("open", victim, 0);
  CHECK(dup2(a, victim) == victim); /* leaked, now dup2's */
  lost_fd("dup2", victim);
  OPENED("dup2", victim, 0);
  CHECK(dup2(a, a) == a); /* nothing happens */
  CHECK(dup2(-1, 300) == -1);
  CHECK(dup2(a, 300) == 300);
  OPENED("dup2", 300, 0);
  closefd(300);

  CHECK(dup3(a, 301, O_CLOEXEC) == 301);
  OPENED("dup3", 301, 1);
  closefd(301);
  victim = open("/dev/zero", O_RDONLY);
  OPENED("open", victim, 0);
  CHECK(dup3(a, victim, 0) == victim); /* leaked, now dup3's */
  lost_fd("dup3", victim);
  OPENED("dup3", victim, 0);
  CHECK(dup3(a, a, 0) == -1);

  int f = fcntl(a, F_DUPFD, 0); /* leaked */
  OPENED("fcntl", f, 0);
  f = fcntl(a, F_DUPFD_CLOEXEC, 10);
  OPENED("fcntl", f, 1);
  closefd(f);
  CHECK(fcntl(a, F_GETFL) >= 0);
  CHECK(fcntl(MAX_FD - 1, F_DUPFD, 0) == -1);

  /* close_range closes what is open in the range, nothing else. */
  CHECK(dup2(a, 400) == 400);
  OPENED("dup2", 400, 0);
  CHECK(dup2(a, 401) == 401);
  OPENED("dup2", 401, 0);
  CHECK(dup2(a, 403) == 403);
  OPENED("dup2", 403, 0);
  CHECK(close_range(400, 410, 0) == 0);
  lost_fd("close_range", 400);
  lost_fd("close_range", 401);
  lost_fd("close_range", 403);
  CHECK(close_range(500, 600, 0) == 0);
}

TRACED void do_pipes(void) {
  int p[2];
  CHECK(pipe(p) == 0);
  OPENED("pipe", p[0], 0);
  OPENED("pipe", p[1], 0);
  closefd(p[0]);
  closefd(p[1]);
  CHECK(pipe(p) == 0); /* both ends leaked */
  OPENED("pipe", p[0], 0);
  OPENED("pipe", p[1], 0);
  CHECK(pipe2(p, O_NONBLOCK) == 0);
  OPENED("pipe2", p[0], 0);
  OPENED("pipe2", p[1], 0);
  closefd(p[1]);
  closefd(p[0]);
}

TRACED void do_sockets(void) {
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  OPENED("socket", s, 0);
  closefd(s);
  s = socket(AF_UNIX, SOCK_DGRAM, 0); /* leaked */
  OPENED("socket", s, 0);
  int sp[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0);
  OPENED("socketpair", sp[0], 0);
  OPENED("socketpair", sp[1], 0);
  closefd(sp[0]);
  closefd(sp[1]);
  CHECK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sp) == 0); /* both leaked */
  OPENED("socketpair", sp[0], 0);
  OPENED("socketpair", sp[1], 0);

  /* A listener in the abstract namespace, two connections. */
  int l = socket(AF_UNIX, SOCK_STREAM, 0);
  OPENED("socket", l, 0);
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  int len = snprintf(addr.sun_path + 1, sizeof addr.sun_path - 1, "fdleaks-%d", (int)getpid());
  socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
  CHECK(bind(l, (struct sockaddr*)&addr, alen) == 0);
  CHECK(listen(l, 4) == 0);
  int c1 = socket(AF_UNIX, SOCK_STREAM, 0);
  OPENED("socket", c1, 0);
  CHECK(connect(c1, (struct sockaddr*)&addr, alen) == 0);
  int a1 = accept(l, NULL, NULL); /* leaked */
  OPENED("accept", a1, 0);
  int c2 = socket(AF_UNIX, SOCK_STREAM, 0);
  OPENED("socket", c2, 0);
  CHECK(connect(c2, (struct sockaddr*)&addr, alen) == 0);
  int a2 = accept4(l, NULL, NULL, SOCK_CLOEXEC);
  OPENED("accept4", a2, 1);
  closefd(a2);
  closefd(c2);
  closefd(c1);
  closefd(l);
  CHECK(accept(l, NULL, NULL) == -1);
}

TRACED void do_special(void) {
  int e = eventfd(1, 0);
  OPENED("eventfd", e, 0);
  closefd(e);
  e = eventfd(2, EFD_NONBLOCK); /* leaked */
  OPENED("eventfd", e, 0);
  int t = timerfd_create(CLOCK_MONOTONIC, 0);
  OPENED("timerfd_create", t, 0);
  closefd(t);
  t = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK); /* leaked */
  OPENED("timerfd_create", t, 0);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGUSR1);
  int sf = signalfd(-1, &mask, 0);
  OPENED("signalfd", sf, 0);
  closefd(sf);
  sf = signalfd(-1, &mask, SFD_NONBLOCK); /* leaked */
  OPENED("signalfd", sf, 0);
  sigaddset(&mask, SIGUSR2);
  CHECK(signalfd(sf, &mask, 0) == sf); /* changes the mask: no new fd */
  int ep = epoll_create(4);
  OPENED("epoll_create", ep, 0);
  closefd(ep);
  ep = epoll_create1(0); /* leaked */
  OPENED("epoll_create1", ep, 0);
  int in = inotify_init();
  OPENED("inotify_init", in, 0);
  closefd(in);
  in = inotify_init1(IN_NONBLOCK); /* leaked */
  OPENED("inotify_init1", in, 0);
  int m = memfd_create("fdleaks-a", 0);
  OPENED("memfd_create", m, 0);
  closefd(m);
  m = memfd_create("fdleaks-b", MFD_ALLOW_SEALING); /* leaked */
  OPENED("memfd_create", m, 0);
}

TRACED void do_streams(void) {
  char path[PATH_MAX];
  for (int i = 0; i < 3; ++i) {
    FILE* fp = fopen("/dev/null", "r");
    STREAM("fopen", fp, 0, 0);
    closestream(fp);
  }
  FILE* fp = fopen64("/dev/zero", "r");
  STREAM("fopen", fp, 0, 0);
  closestream(fp);
  CHECK(fopen("/nonexistent/fdleaks", "r") == NULL);
  tmp_path(path, "stream");
  fp = fopen(path, "w"); /* leaked */
  STREAM("fopen", fp, 0, 0);
  fputs("leaked\n", fp);
  fflush(fp);

  /* fdopen takes the descriptor over: fclose closes both. */
  int fd = open("/dev/null", O_RDONLY);
  OPENED("open", fd, 0);
  fp = fdopen(fd, "r");
  STREAM("fdopen", fp, 1, 0);
  closestream(fp);
  fd = open("/dev/null", O_RDONLY); /* leaked, with its stream */
  OPENED("open", fd, 0);
  fp = fdopen(fd, "r");
  STREAM("fdopen", fp, 1, 0);
  CHECK(fdopen(MAX_FD - 1, "r") == NULL);

  /* freopen closes the old stream (and a descriptor it had taken over). */
  fp = fopen("/dev/null", "r");
  STREAM("fopen", fp, 0, 0);
  FILE* fr = freopen("/dev/zero", "r", fp);
  lost_stream("freopen", fp);
  STREAM("freopen", fr, 0, 0);
  closestream(fr);
  fd = open("/dev/null", O_RDONLY);
  OPENED("open", fd, 0);
  fp = fdopen(fd, "r");
  STREAM("fdopen", fp, 1, 0);
  fr = freopen("/dev/zero", "r", fp);
  lost_stream("freopen", fp);
  STREAM("freopen", fr, 0, 0);
  closestream(fr);
  fp = fopen("/dev/null", "r");
  STREAM("fopen", fp, 0, 0);
  fr = freopen64(path, "a", fp); /* leaked */
  lost_stream("freopen", fp);
  STREAM("freopen", fr, 0, 0);

  fp = tmpfile();
  STREAM("tmpfile", fp, 0, 0);
  closestream(fp);
  fp = tmpfile64(); /* leaked */
  STREAM("tmpfile", fp, 0, 0);

  fp = popen("exit 0", "r");
  STREAM("popen", fp, 0, 0);
  lost_stream("pclose", fp);
  CHECK(pclose(fp) == 0);
  fp = popen("exit 0", "r"); /* leaked */
  STREAM("popen", fp, 0, 0);
}

static void* thread_main(void* arg) {
  (void)arg;
  int fd = open("/dev/null", O_RDONLY);
  OPENED("open", fd, 0);
  closefd(fd);
  return NULL;
}

TRACED void do_thread(void) {
  pthread_t th;
  CHECK(pthread_create(&th, NULL, thread_main, NULL) == 0);
  CHECK(pthread_join(th, NULL) == 0);
  int s = socket(AF_UNIX, SOCK_SEQPACKET, 0); /* leaked */
  OPENED("socket", s, 0);
}

/* A forked child replaces one inherited descriptor and closes another; it is
 * traced only with -f. Its report comes back through its exit status. */
TRACED void do_fork(void) {
  fflush(stdout);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    int ok = dup2(0, leaked_open_fd) == leaked_open_fd && close(leaked_dup_fd) == 0;
    _exit(ok ? 0 : 1);
  }
  int status;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  printf("child dup2 fd %d\nchild close fd %d\n", leaked_open_fd, leaked_dup_fd);
}

static void restore(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    char kind[16], fn[32], where[64];
    int fd;
    CHECK(sscanf(argv[i], "%15[a-z]:%d:%31[a-z0-9_]:%63[a-z0-9_]", kind, &fd, fn, where) == 4);
    CHECK(fd > 2 && fd < MAX_FD);
    char* fn_copy = strdup(fn);
    char* where_copy = strdup(where);
    CHECK(fn_copy && where_copy);
    if (strcmp(kind, "fd") == 0) {
      model[fd] = (struct fdinfo){1, 0, fn_copy, where_copy};
    } else {
      CHECK(strcmp(kind, "stream") == 0);
      /* The FILE itself is gone with the old image; its descriptor is not. */
      streams[nstreams++] = (struct stream){NULL, fn_copy, fd, 0, 0, where_copy};
    }
  }
}

static void print_kind(int fd, const char* target) {
  if (strncmp(target, "/dev/", 5) == 0) {
    printf("open fd %d %s\n", fd, target);
  } else if (target[0] == '/') {
    printf("open fd %d file\n", fd);
  } else {
    /* "socket:[1234]" -> "socket"; "anon_inode:[eventfd]" stays. */
    const char* colon = strstr(target, ":[");
    if (colon && colon[2] >= '0' && colon[2] <= '9')
      printf("open fd %d %.*s\n", fd, (int)(colon - target), target);
    else
      printf("open fd %d %s\n", fd, target);
  }
}

static int list_and_check(void) {
  static char in_kernel[MAX_FD];
  DIR* d = opendir("/proc/self/fd");
  CHECK(d != NULL);
  int self = dirfd(d);
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    int fd = atoi(e->d_name);
    if (fd <= 2 || fd == self) continue;
    CHECK(fd < MAX_FD);
    in_kernel[fd] = 1;
  }
  closedir(d);
  int bad = 0;
  for (int fd = 3; fd < MAX_FD; ++fd) {
    int mine = model[fd].open;
    for (int i = 0; i < nstreams; ++i)
      if (streams[i].fd == fd) mine = 1;
    if (mine != in_kernel[fd]) {
      fprintf(stderr, "fd %d: %s by the kernel, %s by the program\n", fd, in_kernel[fd] ? "open" : "closed",
              mine ? "open" : "closed");
      bad = 1;
    }
    if (!in_kernel[fd]) continue;
    char link[64], target[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    CHECK(n > 0);
    target[n] = 0;
    print_kind(fd, target);
  }
  for (int fd = 3; fd < MAX_FD; ++fd)
    if (model[fd].open) printf("leak fd %d %s %s\n", fd, model[fd].fn, model[fd].where);
  for (int i = 0; i < nstreams; ++i)
    printf("leak stream %s fd %d %s\n", streams[i].fn, streams[i].fd, streams[i].where);
  return bad;
}

static void remove_tmpdir(void) {
  static const char* const names[] = {"one", "two", "three", "stream"};
  char path[PATH_MAX];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    tmp_path(path, names[i]);
    unlink(path);
  }
  rmdir(tmpdir);
}

static int run_phase2(int argc, char** argv) {
  restore(argc, argv);
  const char* base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/fdleaks-XXXXXX", base && *base ? base : "/tmp");
  CHECK(mkdtemp(tmpdir) != NULL);
  for (int i = 0; i < 3; ++i) fd_marker(i);
  do_files();
  do_dups();
  do_pipes();
  do_sockets();
  do_special();
  do_streams();
  do_thread();
  do_fork();
  remove_tmpdir();
  int bad = list_and_check();
  print_counts();
  if (bad) {
    fprintf(stderr, "the program's own list of open descriptors is wrong\n");
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "exec-child") == 0) return run_phase2(argc, argv);
  CHECK(argc == 1);
  return run_phase1(argv[0]);
}
