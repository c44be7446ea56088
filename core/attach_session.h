// AttachSession: attaching to running processes (-p) and letting go of every traced
// process again, leaving it as it was.
//
// Attach: every thread listed in /proc/PID/task is seized (the list is read again
// until a pass finds no thread it has not tried: threads created meanwhile by a
// seized thread are attached by the kernel and announced by their clone event) and
// interrupted; once every thread is in a ptrace-stop, the engine reads the modules and
// plants the breakpoints exactly as after an exec, and the threads are resumed.
//
// Detach (SIGINT/SIGTERM/SIGHUP/SIGQUIT to functracer in attach mode, or a plugin that
// crashed): every thread of every process is interrupted and its stop collected by the
// engine (Tracer::collect_for_detach: a thread caught on an entry breakpoint is rewound
// onto the original instruction, one caught on the trampoline finishes its return).
// Then each process gets its breakpoint bytes and every hijacked return address back
// (instrumentation.h), its open frames are reported unwound ("detach"), held signals
// go with the detach, and the program runs on.
#pragma once

#include <sys/types.h>

#include <memory>
#include <vector>

#include "arch/registers.h"
#include "common/result.h"
#include "core/elf_image.h"
#include "core/event_reporter.h"
#include "core/plugin_host.h"
#include "core/process_table.h"
#include "core/procfs.h"
#include "core/return_hooks.h"
#include "core/stop_queue.h"

namespace ft {

class AttachSession {
 public:
  // What the session needs of the engine that runs it.
  class Engine {
   public:
    // A clone/fork/vfork event of `parent`, seen while its threads are being stopped.
    virtual void on_new_task(Thread& parent, int event) = 0;
    // Every thread of p is stopped: read its modules and plant its breakpoints through
    // `worker` (a thread in an ordinary stop, regs its registers).
    virtual Status set_up_image(Process& p, Thread& worker, Registers& regs, const std::vector<MapsEntry>& maps) = 0;
    // Before the threads of process pid are stopped: the ELF files it maps are read
    // (and held by the handles returned, until the set-up has used them), so that
    // set_up_image, with every thread held, finds them read.
    virtual std::vector<std::shared_ptr<const ElfImage>> read_modules_ahead(pid_t pid) = 0;
    // Resume a thread the session stopped.
    virtual void resume_stopped(Thread& t) = 0;
    // A stop that came while detaching (see Tracer::collect_for_detach).
    virtual void dispatch(pid_t tid, int status) = 0;
    // Every thread of p is stopped, about to be let go of: what the engine put into
    // the process through injected calls is taken back.
    virtual void before_detach(Process& p) = 0;
    // The instrumentation is out (remove_instrumentation): what is left of the
    // engine's own mappings goes.
    virtual void after_removal(Process& p) = 0;

   protected:
    ~Engine() = default;
  };

  AttachSession(ProcessTable& procs, StopQueue& stops, EventReporter& report, ReturnHooks& returns, PluginHost& host,
                TracerStats& stats, Engine& engine)
      : procs_(procs), stops_(stops), report_(report), returns_(returns), host_(host), stats_(stats), engine_(engine) {}

  // Attaches to the process of pid (or of the thread pid); a process attached already
  // is not attached twice. On failure it is let go of untouched.
  Status attach(pid_t pid);
  // Lets go of every traced process (attached or launched), leaving it running.
  void detach_all();
  // detach_all is collecting the stops of the threads it interrupted.
  bool detaching() const { return detaching_; }

 private:
  Status seize_threads(Process& p);
  // Waits for t's ptrace-stop, taking note of what it reports meanwhile.
  Status stop_thread(Thread& t);
  Status set_up(Process& p);
  void detach_process(Process& p);

  ProcessTable& procs_;
  StopQueue& stops_;
  EventReporter& report_;
  ReturnHooks& returns_;
  PluginHost& host_;    // whether plugins want a snapshot of a process before it is let go of
  TracerStats& stats_;
  Engine& engine_;
  bool detaching_ = false;
};

}  // namespace ft
