// MemorySnapshot: hands the plugins that ask for it (ft_plugin.snapshot) a traced
// process's memory at the last moment functracer can read it: at its end and just
// before a detach.
//
// The end is the exit stop (PTRACE_EVENT_EXIT, ptrace(2)) of the process's last
// thread: the kernel stops each exiting thread in do_exit() before exit_mm() lets go
// of the address space, after every atexit handler and destructor has run — the
// moment valgrind's leak check looks too. The stop exists only with
// PTRACE_O_TRACEEXIT, which the Tracer sets when some plugin wants snapshots, so
// others pay no stop per thread exit. A thread that exits before the others
// (pthread_exit, or killed first by exit_group) is let go at its own exit stop — the
// others may be waiting for it to be gone (pthread_join) — after its registers and
// stack pointer are kept (Thread::exit_regs) for the snapshot.
#pragma once

#include <cstdint>

#include "core/event_reporter.h"
#include "core/plugin_host.h"
#include "core/process.h"

namespace ft {

// At t's exit stop: keeps its registers, and takes the "exit" snapshot when no other
// thread of the process is still running.
void snapshot_at_exit_stop(PluginHost& host, Process& p, Thread& t, TracerStats& stats);
// Before a detach, every thread of p stopped.
void snapshot_before_detach(PluginHost& host, Process& p, TracerStats& stats);

}  // namespace ft
