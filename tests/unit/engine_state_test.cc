// The engine's bookkeeping, apart from any tracee: AddressSpace (what fork copies and
// exec resets), ProcessTable (threads owned by their process, the tid index kept
// with them) and StopQueue's queues. Expected values follow the contracts in
// core/address_space.h, core/process_table.h and core/stop_queue.h.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <memory>

#include "core/address_space.h"
#include "core/process_table.h"
#include "core/stop_queue.h"

namespace ft {
namespace {

constexpr uint64_t kExeBase = 0x555555554000, kExeEnd = 0x555555558000;
constexpr uint64_t kLibBase = 0x7ffff7dd0000, kLibEnd = 0x7ffff7df0000;
constexpr uint64_t kArea = 0x555555600000;

std::unique_ptr<Module> module(uint64_t base, uint64_t end, const char* path, bool is_main) {
  auto m = std::make_unique<Module>();
  m->map.base = base;
  m->map.end = end;
  m->map.path = path;
  m->is_main = is_main;
  m->bias = base;
  return m;
}

// A process image as it is after start-up: two modules, a breakpoint in each, an
// area with the trampoline, one thread's return stub.
AddressSpace populated() {
  AddressSpace s;
  s.modules.push_back(module(kExeBase, kExeEnd, "/bin/app", true));
  s.modules.push_back(module(kLibBase, kLibEnd, "/lib/libc.so.6", false));
  for (uint64_t at : {kExeBase + 0x1130, kLibBase + 0x420}) {
    Breakpoint bp;
    bp.addr = RemoteAddr(at);
    bp.module = s.module_at(bp.addr);
    bp.traced = true;
    bp.fn = static_cast<uint32_t>(s.functions.size());
    s.breakpoints.emplace(RemoteAddr(at), bp);
    FunctionInfo fi;
    fi.name = at < kLibBase ? "main" : "malloc";
    fi.address = RemoteAddr(at);
    s.functions.push_back(fi);
  }
  s.areas.push_back(std::make_unique<SsolArea>(RemoteAddr(kArea)));
  s.trampoline = s.areas.front()->trampoline();
  s.r_debug = RemoteAddr(kLibBase + 0x8000);
  s.fast_data = RemoteAddr(0x7ffff7000000);
  s.fast_owner = {1234, 0, 0};
  s.fast_stubs = {RemoteAddr(kArea + 0x40), RemoteAddr(), RemoteAddr()};
  s.fast_stub_slot[RemoteAddr(kArea + 0x40)] = 0;
  s.scratch = RemoteAddr(kExeBase + 0x1000);
  return s;
}

TEST(AddressSpace, ModuleAtFindsTheModuleHoldingAnAddress) {
  AddressSpace s = populated();
  EXPECT_EQ(s.module_at(RemoteAddr(kExeBase))->map.path, "/bin/app");
  EXPECT_EQ(s.module_at(RemoteAddr(kExeEnd - 1))->map.path, "/bin/app");
  EXPECT_EQ(s.module_at(RemoteAddr(kExeEnd)), nullptr);  // end is exclusive
  EXPECT_EQ(s.module_at(RemoteAddr(kLibBase + 5))->map.path, "/lib/libc.so.6");
  EXPECT_EQ(s.module_at(RemoteAddr(0x1000)), nullptr);
}

TEST(AddressSpace, ReturnHooksAreTheTrampolineAndTheStubs) {
  AddressSpace s = populated();
  EXPECT_TRUE(s.is_return_hook(RemoteAddr(kArea)));            // the trampoline is at the area's start
  EXPECT_TRUE(s.is_return_hook(RemoteAddr(kArea + 0x40)));     // thread 1234's stub
  EXPECT_FALSE(s.is_return_hook(RemoteAddr(kArea + 0x80)));
  EXPECT_FALSE(s.is_return_hook(RemoteAddr(kExeBase + 0x1130)));
  EXPECT_TRUE(s.is_trampoline(RemoteAddr(kArea)));
  EXPECT_FALSE(s.is_trampoline(RemoteAddr(kArea + 0x40)));
  // The stub's slow path traps at its int3.
  EXPECT_EQ(s.fast_slow_stop(RemoteAddr(kArea + 0x40 + fastret::kSlowTrapOffset)), 0);
  EXPECT_EQ(s.fast_slow_stop(RemoteAddr(kArea + 0x40)), -1);
  AddressSpace empty;
  EXPECT_FALSE(empty.is_return_hook(RemoteAddr(0)));  // a null trampoline is no hook
}

TEST(AddressSpace, ForkCloneCopiesTheImageAndPointsAtItsOwnModules) {
  AddressSpace parent = populated();
  AddressSpace child = parent.clone(false);
  ASSERT_EQ(child.modules.size(), 2u);
  EXPECT_NE(child.modules[0].get(), parent.modules[0].get());
  EXPECT_EQ(child.modules[0]->map.path, "/bin/app");
  EXPECT_EQ(child.modules[1]->bias, kLibBase);
  ASSERT_EQ(child.breakpoints.size(), 2u);
  for (const auto& [at, bp] : child.breakpoints) {
    EXPECT_EQ(bp.module, child.module_at(bp.addr)) << std::hex << at.value();
    EXPECT_NE(bp.module, parent.module_at(bp.addr));
  }
  EXPECT_EQ(child.functions.size(), 2u);
  ASSERT_EQ(child.areas.size(), 1u);
  EXPECT_NE(child.areas[0].get(), parent.areas[0].get());
  EXPECT_EQ(child.areas[0]->base(), RemoteAddr(kArea));
  EXPECT_EQ(child.trampoline, parent.trampoline);
  EXPECT_EQ(child.r_debug, parent.r_debug);
  // The return records are the child's own copy: every block free again.
  EXPECT_EQ(child.fast_data, parent.fast_data);
  EXPECT_FALSE(child.fast_unavailable);
  EXPECT_EQ(child.fast_owner, (std::vector<pid_t>{0, 0, 0}));
  EXPECT_TRUE(child.is_return_hook(RemoteAddr(kArea + 0x40)));
  // Not inherited: where temporary code may go, which is chosen per stop.
  EXPECT_TRUE(child.scratch.null());
  // The parent is untouched.
  EXPECT_EQ(parent.fast_owner[0], 1234);
}

// The recorder's code is in the fork child's copy of the memory, at the same
// addresses: every address functracer knows in it is the child's too (the signal trap
// held signals wait at, the SIGTRAP handler, where the recorder's functions return).
TEST(AddressSpace, ForkCloneKnowsTheRecordersCode) {
  AddressSpace parent = populated();
  RecorderSpace& r = parent.recorder;
  r.ready = true;
  r.code = RemoteAddr(kArea + 0x10000);
  r.code_size = 0x3000;
  r.entry_fn = r.code + 0x100;
  r.return_fn = r.code + 0x200;
  r.return_stub = r.code + 0x4000;
  r.return_trap = r.return_stub + 0x30;
  r.return_after_call = r.return_stub + 0x20;
  r.entry_after_call = 0x58;
  r.signal_trap = r.return_stub + 0x40;
  r.trap_handler = r.return_stub + 0x41;
  r.trap_restorer = r.return_stub + 0x90;
  const RecorderSpace c = parent.clone(false).recorder;
  EXPECT_EQ(c.code, r.code);
  EXPECT_EQ(c.code_size, r.code_size);
  EXPECT_EQ(c.entry_fn, r.entry_fn);
  EXPECT_EQ(c.return_fn, r.return_fn);
  EXPECT_EQ(c.return_stub, r.return_stub);
  EXPECT_EQ(c.return_trap, r.return_trap);
  EXPECT_EQ(c.return_after_call, r.return_after_call);
  EXPECT_EQ(c.entry_after_call, r.entry_after_call);
  EXPECT_EQ(c.signal_trap, r.signal_trap);
  EXPECT_EQ(c.trap_handler, r.trap_handler);
  EXPECT_EQ(c.trap_restorer, r.trap_restorer);
  EXPECT_TRUE(c.in_recorder_code(r.code + 0x2fff));
  // Its region is not: the child needs one of its own before it runs.
  EXPECT_FALSE(c.ready);
  EXPECT_TRUE(c.needs_region);
}

TEST(AddressSpace, SharedMemoryCloneHasNoReturnRecordsOfItsOwn) {
  AddressSpace parent = populated();
  AddressSpace child = parent.clone(true);
  EXPECT_TRUE(child.fast_unavailable);
  EXPECT_TRUE(child.fast_data.null());
  EXPECT_TRUE(child.fast_owner.empty());
  EXPECT_EQ(child.breakpoints.size(), 2u);  // the breakpoints are there all the same
}

TEST(AddressSpace, ExecResetLeavesNothingOfTheOldImageButFunctionIds) {
  AddressSpace s = populated();
  s.ifuncs.push_back(PendingIfunc{s.modules[1].get(), {}, "strlen", {}});
  s.reset();
  EXPECT_TRUE(s.modules.empty());
  EXPECT_TRUE(s.breakpoints.empty());
  EXPECT_TRUE(s.areas.empty());
  EXPECT_TRUE(s.ifuncs.empty());  // they pointed into the old modules
  EXPECT_TRUE(s.trampoline.null());
  EXPECT_TRUE(s.r_debug.null());
  EXPECT_TRUE(s.scratch.null());
  EXPECT_TRUE(s.fast_data.null());
  EXPECT_FALSE(s.fast_unavailable);
  EXPECT_TRUE(s.fast_owner.empty());
  EXPECT_FALSE(s.is_return_hook(RemoteAddr(kArea + 0x40)));
  EXPECT_EQ(s.functions.size(), 2u);
}

TEST(ProcessTable, ThreadsAreIndexedWhileTheirProcessIsInTheTable) {
  ProcessTable table;
  auto proc = std::make_unique<Process>(100);
  Process* raw = proc.get();
  // Threads added before the process joins the table are indexed when it joins.
  table.add_thread(*raw, 100);
  EXPECT_EQ(table.thread(100), nullptr);
  Process& p = table.add(std::move(proc));
  EXPECT_EQ(&p, raw);
  ASSERT_NE(table.thread(100), nullptr);
  EXPECT_EQ(table.thread(100)->process, &p);
  Thread& t2 = table.add_thread(p, 101);
  EXPECT_EQ(table.thread(101), &t2);
  EXPECT_EQ(p.leader(), table.thread(100));
  EXPECT_EQ(table.thread_count(), 2u);
  EXPECT_EQ(table.find(100), &p);
  EXPECT_EQ(table.find(101), nullptr);  // a thread id is not a process
}

TEST(ProcessTable, RemovingAThreadOrAProcessTakesItOutOfTheIndex) {
  ProcessTable table;
  Process& p = table.add(std::make_unique<Process>(200));
  table.add_thread(p, 200);
  Thread& a = table.add_thread(p, 201);
  table.add_thread(p, 202);
  table.remove_thread(a);
  EXPECT_EQ(table.thread(201), nullptr);
  EXPECT_EQ(p.thread(201), nullptr);
  EXPECT_EQ(p.threads().size(), 2u);

  Process& q = table.add(std::make_unique<Process>(300));
  table.add_thread(q, 300);
  table.remove(p);
  EXPECT_EQ(table.thread(200), nullptr);
  EXPECT_EQ(table.thread(202), nullptr);
  EXPECT_FALSE(table.contains(200));
  EXPECT_NE(table.thread(300), nullptr);
  EXPECT_EQ(table.thread_count(), 1u);
}

TEST(ProcessTable, ExecKeepsOnlyTheExecingThread) {
  ProcessTable table;
  Process& p = table.add(std::make_unique<Process>(400));
  table.add_thread(p, 400);
  Thread& execing = table.add_thread(p, 401);
  table.add_thread(p, 402);
  table.remove_threads_except(p, execing);
  EXPECT_EQ(p.threads().size(), 1u);
  EXPECT_EQ(table.thread(401), &execing);
  EXPECT_EQ(table.thread(400), nullptr);
  EXPECT_EQ(table.thread(402), nullptr);
}

TEST(StopQueue, DeferredStopsComeBackInOrderBeforeTheKernelIsAsked) {
  StopQueue q;
  q.defer({11, 0x57f});
  q.defer({12, 0x1300});
  ASSERT_EQ(q.deferred().size(), 2u);
  auto first = q.poll();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->tid, 11);
  EXPECT_EQ(first->status, 0x57f);
  auto second = q.poll();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->tid, 12);
  EXPECT_TRUE(q.deferred().empty());
}

TEST(StopQueue, EarlyStopsAreHeldUntilTheirTaskIsAnnounced) {
  StopQueue q;
  q.hold_early({21, 0x137f});
  EXPECT_FALSE(q.take_early(22));
  auto s = q.take_early(21);
  ASSERT_TRUE(s);
  EXPECT_EQ(*s, 0x137f);
  EXPECT_FALSE(q.take_early(21));  // taken once
}

TEST(StopQueue, CountsStopsButNotExits) {
  StopQueue q;
  pid_t child = fork();
  if (child == 0) {
    raise(SIGSTOP);
    _exit(3);
  }
  ASSERT_GT(child, 0);
  // An untraced child: waitpid(__WALL) still reports its stop (WUNTRACED is implied
  // for ptrace stops only), so the child is stopped and continued by hand.
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, WUNTRACED), child);
  ASSERT_TRUE(WIFSTOPPED(status));
  kill(child, SIGCONT);
  auto end = q.wait_thread(child);
  ASSERT_TRUE(end);
  EXPECT_TRUE(WIFEXITED(end->status) || WIFCONTINUED(end->status));
  if (!WIFEXITED(end->status)) end = q.wait_thread(child);
  ASSERT_TRUE(end);
  EXPECT_TRUE(WIFEXITED(end->status));
  EXPECT_EQ(WEXITSTATUS(end->status), 3);
  EXPECT_EQ(q.stops(), 0u);
}

}  // namespace
}  // namespace ft
