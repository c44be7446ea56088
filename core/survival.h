// Surviving functracer's death (core/recorder_abi.h, doc/internals.md §8d): an
// attached program whose functracer is killed (SIGKILL, the OOM killer) runs on. A
// SIGTRAP handler in the recorder's code sends the threads that meet our traps on as
// functracer would have; these functions keep the tables it reads up to date, install
// it at attach and take it out at detach, and clean up what a functracer that died
// left in a process attached to again.
//
// The tables live in the recorder's shared region: functracer writes them in its own
// mapping, without a system call.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "arch/registers.h"
#include "common/remote_addr.h"
#include "common/result.h"

namespace ft {

class Injector;
class Process;
struct Thread;
struct EntryPatchSite;
struct Breakpoint;
struct MapsEntry;

namespace survival {

// At attach, before anything is planted (every thread held): what an earlier
// functracer that died in p left (found by its region in the memory map, whose
// handler is still installed) is taken out: its patched entries and breakpoints. Its
// handler stays, next in line after ours, for the return addresses it replaced.
void clean_up_dead(Process& p, const std::vector<MapsEntry>& maps);
// Installs the handler as the program's SIGTRAP action, p being attached and its
// recorder set up (t stopped at regs).
// rings: threads record calls in the region's rings (the handler looks there too).
bool install(Injector& injector, Process& p, Thread& t, Registers& regs, bool rings);
// A fork child whose action is its parent's handler (RecorderSpace::inherited_action),
// at the same address: only its tables, before its region takes its parent's place
// (no system call). False when there is no such handler to take over.
bool install_inherited(Process& p, bool rings);
// Detach: the tables emptied and the session marked detached. The handler stays the
// program's SIGTRAP action, forwarding everything to the program's own; the next
// attach puts it out of the way.
void retire(Process& p);
// The trap table follows p's breakpoints: each as it is planted (note_trap), and all of
// them again after some were taken out (sync_traps). The patched entries (for a later
// attach, after a death) and the out-of-line areas likewise.
void note_trap(Process& p, const Breakpoint& bp);
// A hooked return's trap: the trampoline, a return stub's slow path.
void note_return_trap(Process& p, RemoteAddr trap);
// A trap that sends the thread on at `resume` (a trampoline's stop path).
void note_resume(Process& p, RemoteAddr trap, RemoteAddr resume);
void note_patch(Process& p, const EntryPatchSite& s, std::span<const uint8_t> patched);
void note_areas(Process& p);
void sync_traps(Process& p);
// functracer replaced the return address at slot (with the trampoline, a stub or a trap).
void note_return(Process& p, RemoteAddr slot, RemoteAddr real_ret);
// waitpid reported t's SIGTRAP stop (functracer took it in). Should functracer die
// before it answers, the kernel lets the thread go on past the trap without the
// signal: onto the trap that follows each one in functracer's own code, which the
// handler knows what to do with, but into the middle of the program's instruction
// past an entry breakpoint. Such a thread is pointed back at the breakpoint here (one
// PTRACE_SETREGS), to meet it again and the handler with it; t.rewound says so.
// Attached processes with the handler installed only. False when t is not stopped at
// one of functracer's traps.
bool take_in(Process& p, Thread& t);
// t's registers at its SIGTRAP stop as the kernel reported them (pc past the trap),
// whether or not take_in pointed it back since.
Result<Registers> stop_regs(Thread& t);

}  // namespace survival
}  // namespace ft
