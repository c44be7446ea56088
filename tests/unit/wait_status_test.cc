// WaitStatus::classify on statuses the kernel itself reports for child processes made
// to end or stop in a known way: the oracle is what the child was made to do (exit
// with a code, die of a signal, stop under ptrace as ptrace(2) "Stopped states"
// describes), never a status built by hand.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "core/wait_status.h"

namespace ft {
namespace {

using Kind = WaitStatus::Kind;

int wait_for(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, __WALL) < 0 && errno == EINTR) {
  }
  return status;
}

// Kills a traced child and waits until it is gone.
void kill_and_reap(pid_t pid) {
  kill(pid, SIGKILL);
  for (;;) {
    int status = wait_for(pid);
    if (WIFEXITED(status) || WIFSIGNALED(status)) return;
    ptrace(PTRACE_CONT, pid, nullptr, nullptr);
  }
}

// A child that waits for a byte on a pipe, then runs body, then exits with 0; seized
// with the ptrace options before the byte is sent.
template <class Body>
pid_t seized_child(long options, Body body) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[1]);
    char c;
    while (read(fds[0], &c, 1) < 0 && errno == EINTR) {
    }
    body();
    _exit(0);
  }
  close(fds[0]);
  EXPECT_EQ(ptrace(PTRACE_SEIZE, pid, nullptr, reinterpret_cast<void*>(options)), 0) << "PTRACE_SEIZE: " << errno;
  EXPECT_EQ(write(fds[1], "x", 1), 1);
  close(fds[1]);
  return pid;
}

TEST(WaitStatus, ExitCodeOfAnExitedChild) {
  pid_t pid = fork();
  if (pid == 0) _exit(42);
  WaitStatus w = WaitStatus::classify(wait_for(pid));
  EXPECT_EQ(w.kind, Kind::Exited);
  EXPECT_EQ(w.exit_code, 42);
}

TEST(WaitStatus, FatalSignalOfAKilledChild) {
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGTERM, SIG_DFL);
    raise(SIGTERM);
    _exit(1);
  }
  WaitStatus w = WaitStatus::classify(wait_for(pid));
  EXPECT_EQ(w.kind, Kind::Killed);
  EXPECT_EQ(w.signal, SIGTERM);
  EXPECT_FALSE(w.core_dumped);  // SIGTERM's default action does not dump core
  EXPECT_EQ(w.describe(), "killed by SIGTERM");
}

TEST(WaitStatus, SignalDeliveryStopAndItsSuppression) {
  pid_t pid = seized_child(0, [] {
    signal(SIGUSR1, SIG_DFL);
    raise(SIGUSR1);  // would kill it: the tracer suppresses it below
    _exit(5);
  });
  WaitStatus w = WaitStatus::classify(wait_for(pid));
  EXPECT_EQ(w.kind, Kind::SignalStop);
  EXPECT_EQ(w.signal, SIGUSR1);
  ASSERT_EQ(ptrace(PTRACE_CONT, pid, nullptr, nullptr), 0);
  w = WaitStatus::classify(wait_for(pid));
  EXPECT_EQ(w.kind, Kind::Exited);  // the signal was not delivered
  EXPECT_EQ(w.exit_code, 5);
}

TEST(WaitStatus, InterruptIsAnEventStopAndSyscallStopsAreMarked) {
  pid_t pid = seized_child(PTRACE_O_TRACESYSGOOD, [] {
    for (;;) getppid();
  });
  ASSERT_EQ(ptrace(PTRACE_INTERRUPT, pid, nullptr, nullptr), 0);
  WaitStatus w = WaitStatus::classify(wait_for(pid));
  EXPECT_EQ(w.kind, Kind::EventStop);
  EXPECT_EQ(w.event, PTRACE_EVENT_STOP);
  ASSERT_EQ(ptrace(PTRACE_SYSCALL, pid, nullptr, nullptr), 0);
  w = WaitStatus::classify(wait_for(pid));
  EXPECT_EQ(w.kind, Kind::SyscallStop);
  kill_and_reap(pid);
}

TEST(WaitStatus, ExitEventStop) {
  pid_t pid = seized_child(PTRACE_O_TRACEEXIT, [] { _exit(3); });
  WaitStatus w = WaitStatus::classify(wait_for(pid));
  EXPECT_EQ(w.kind, Kind::EventStop);
  EXPECT_EQ(w.event, PTRACE_EVENT_EXIT);
  ASSERT_EQ(ptrace(PTRACE_CONT, pid, nullptr, nullptr), 0);
  w = WaitStatus::classify(wait_for(pid));
  EXPECT_EQ(w.kind, Kind::Exited);
  EXPECT_EQ(w.exit_code, 3);
}

TEST(WaitStatus, StopSignalIsASignalStopThenAGroupStop) {
  pid_t pid = seized_child(0, [] { raise(SIGSTOP); });
  WaitStatus w = WaitStatus::classify(wait_for(pid));
  EXPECT_EQ(w.kind, Kind::SignalStop);
  EXPECT_EQ(w.signal, SIGSTOP);
  // Delivered, the stop signal stops the group: under PTRACE_SEIZE a group-stop
  // reported as PTRACE_EVENT_STOP with the signal.
  ASSERT_EQ(ptrace(PTRACE_CONT, pid, nullptr, reinterpret_cast<void*>(long{SIGSTOP})), 0);
  w = WaitStatus::classify(wait_for(pid));
  EXPECT_EQ(w.kind, Kind::GroupStop);
  EXPECT_EQ(w.signal, SIGSTOP);
  kill_and_reap(pid);
}

TEST(WaitStatus, FaultSignalsAreThoseAnInstructionRaises) {
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE}) EXPECT_TRUE(is_fault_signal(sig)) << sig;
  for (int sig : {SIGTRAP, SIGABRT, SIGKILL, SIGUSR1}) EXPECT_FALSE(is_fault_signal(sig)) << sig;
}

}  // namespace
}  // namespace ft
