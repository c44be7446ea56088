// CallStack: the per-thread shadow stack behind the shared return trampoline.
//
// Every expected value below is worked out by hand from the contract in
// core/call_stack.h, for an x86-64 thread: a call pushes the return address at
// sp - 8, so a callee's return slot is the caller's sp minus 8, deeper calls have
// lower slots, and a `ret` leaves sp = slot + 8 (the value pop() receives).
//
// Addresses used throughout:
//   kTramp     the trampoline (an int3 at the start of the out-of-line area)
//   kTop       a return slot near the top of the main thread's stack
//   kRetMain.. return addresses in the program's text
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "core/call_stack.h"

namespace ft {

// Readable failures: addresses in hex.
void PrintTo(RemoteAddr a, std::ostream* os) { *os << "0x" << std::hex << a.value(); }

namespace {

constexpr RemoteAddr kTramp{0x7f3a5c200000};  // SSOL area base: the trampoline
constexpr RemoteAddr kTop{0x7ffd4e8f1000};    // a slot on the main stack

// Return addresses (text of the executable).
constexpr RemoteAddr kRetMain{0x555555555a10};  // in main, after `call f`
constexpr RemoteAddr kRetF{0x555555555b20};     // in f, after `call g`
constexpr RemoteAddr kRetG{0x555555555c30};     // in g, after `call h`
constexpr RemoteAddr kRetH{0x555555555d40};     // in h, after `call i`
constexpr RemoteAddr kRetOther{0x555555555e50};  // some other call site

// Function ids.
constexpr uint32_t kF = 1, kG = 2, kH = 3, kI = 4, kJ = 5;

std::vector<uint32_t> fns(const std::vector<ShadowFrame>& frames) {
  std::vector<uint32_t> out;
  for (const auto& f : frames) out.push_back(f.fn);
  return out;
}

std::vector<RemoteAddr> slots(const std::vector<ShadowFrame>& frames) {
  std::vector<RemoteAddr> out;
  for (const auto& f : frames) out.push_back(f.slot);
  return out;
}

using Slots = std::vector<RemoteAddr>;
using Fns = std::vector<uint32_t>;
using Pairs = std::vector<std::pair<RemoteAddr, RemoteAddr>>;

// A normal call: [slot] holds a real return address. Checks the entry result.
void call(CallStack& s, RemoteAddr slot, RemoteAddr ret, uint32_t fn, uint64_t now = 0) {
  auto e = s.push(slot, ret, kTramp, fn, now);
  ASSERT_TRUE(e.abandoned.empty()) << "unexpected abandoned frames at slot " << std::hex << slot.value();
  ASSERT_TRUE(e.write_trampoline);
}

// ---------------------------------------------------------------------------------
// Plain calls and returns

TEST(CallStack, StartsEmpty) {
  CallStack s;
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.depth(), 0u);
  EXPECT_FALSE(s.disarmed());
  EXPECT_TRUE(s.frames().empty());
  EXPECT_TRUE(s.take_all().empty());
  EXPECT_TRUE(s.disarm().empty());
}

TEST(CallStack, PopOnEmptyStackFindsNothing) {
  CallStack s;
  auto r = s.pop(kTop + 8);
  EXPECT_FALSE(r.found);
  EXPECT_TRUE(r.returned.empty());
  EXPECT_TRUE(r.abandoned.empty());
  EXPECT_TRUE(r.real_ret.null());
}

TEST(CallStack, SingleCallAndReturn) {
  CallStack s;
  auto e = s.push(kTop, kRetMain, kTramp, kF, 1000);
  EXPECT_TRUE(e.abandoned.empty());
  EXPECT_TRUE(e.write_trampoline);
  ASSERT_EQ(s.depth(), 1u);
  const ShadowFrame& f = s.frames()[0];
  EXPECT_EQ(f.slot, kTop);
  EXPECT_EQ(f.real_ret, kRetMain);
  EXPECT_EQ(f.fn, kF);
  EXPECT_EQ(f.entry_ns, 1000u);
  EXPECT_FALSE(f.tail);
  EXPECT_TRUE(f.armed);

  auto r = s.pop(kTop + 8);
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.real_ret, kRetMain);
  EXPECT_TRUE(r.abandoned.empty());
  ASSERT_EQ(r.returned.size(), 1u);
  EXPECT_EQ(r.returned[0].fn, kF);
  EXPECT_EQ(r.returned[0].slot, kTop);
  EXPECT_EQ(r.returned[0].entry_ns, 1000u);
  EXPECT_TRUE(s.empty());
}

TEST(CallStack, NestedCallsReturnInnermostFirst) {
  // main -> f -> g -> h, then h, g, f return in turn.
  CallStack s;
  const RemoteAddr sf = kTop, sg = kTop - 0x40, sh = kTop - 0x90;
  call(s, sf, kRetMain, kF, 10);
  call(s, sg, kRetF, kG, 20);
  call(s, sh, kRetG, kH, 30);
  EXPECT_EQ(s.depth(), 3u);
  EXPECT_EQ(fns(s.frames()), (Fns{kF, kG, kH}));  // outermost first

  auto r = s.pop(sh + 8);
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.real_ret, kRetG);
  EXPECT_EQ(fns(r.returned), Fns{kH});
  EXPECT_TRUE(r.abandoned.empty());
  EXPECT_EQ(s.depth(), 2u);

  r = s.pop(sg + 8);
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.real_ret, kRetF);
  EXPECT_EQ(fns(r.returned), Fns{kG});
  EXPECT_EQ(r.returned[0].entry_ns, 20u);
  EXPECT_EQ(s.depth(), 1u);

  r = s.pop(sf + 8);
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.real_ret, kRetMain);
  EXPECT_EQ(fns(r.returned), Fns{kF});
  EXPECT_TRUE(s.empty());
}

TEST(CallStack, SiblingCallsAtTheSameSlot) {
  // f calls g, g returns, f calls h from the same stack depth: h gets g's old slot.
  CallStack s;
  const RemoteAddr sf = kTop, sc = kTop - 0x30;
  call(s, sf, kRetMain, kF);
  call(s, sc, kRetF, kG);
  auto r = s.pop(sc + 8);
  ASSERT_TRUE(r.found);
  EXPECT_EQ(fns(r.returned), Fns{kG});
  call(s, sc, kRetF + 5, kH);  // nothing stale: g's frame is gone
  EXPECT_EQ(fns(s.frames()), (Fns{kF, kH}));
  r = s.pop(sc + 8);
  EXPECT_EQ(r.real_ret, kRetF + 5);
  EXPECT_EQ(fns(r.returned), Fns{kH});
}

TEST(CallStack, RecursionKeepsEveryActivation) {
  // r(3) called from main; r recurses three times from the same call site.
  CallStack s;
  const uint64_t frame = 0x30;
  const RemoteAddr kRetRec{0x555555556010};  // in r, after the recursive call
  call(s, kTop, kRetMain, kF, 1);
  for (int i = 1; i <= 3; ++i) call(s, kTop - i * frame, kRetRec, kF, 1 + i);
  EXPECT_EQ(s.depth(), 4u);

  for (int i = 3; i >= 1; --i) {
    auto r = s.pop(kTop - i * frame + 8);
    ASSERT_TRUE(r.found) << "level " << i;
    EXPECT_EQ(r.real_ret, kRetRec);
    ASSERT_EQ(r.returned.size(), 1u);
    EXPECT_EQ(r.returned[0].slot, kTop - i * frame);
    EXPECT_EQ(r.returned[0].entry_ns, static_cast<uint64_t>(1 + i));
    EXPECT_TRUE(r.abandoned.empty());
    EXPECT_EQ(s.depth(), static_cast<size_t>(i));
  }
  auto r = s.pop(kTop + 8);
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.real_ret, kRetMain);
  EXPECT_TRUE(s.empty());
}

TEST(CallStack, MutualRecursion) {
  // even(2) -> odd(1) -> even(0), returning in reverse.
  CallStack s;
  call(s, kTop, kRetMain, kF);
  call(s, kTop - 0x20, kRetF, kG);
  call(s, kTop - 0x40, kRetG, kF);
  auto r = s.pop(kTop - 0x40 + 8);
  EXPECT_EQ(fns(r.returned), Fns{kF});
  EXPECT_EQ(r.real_ret, kRetG);
  r = s.pop(kTop - 0x20 + 8);
  EXPECT_EQ(fns(r.returned), Fns{kG});
  EXPECT_EQ(r.real_ret, kRetF);
  r = s.pop(kTop + 8);
  EXPECT_EQ(fns(r.returned), Fns{kF});
  EXPECT_EQ(r.real_ret, kRetMain);
  EXPECT_TRUE(s.empty());
}

TEST(CallStack, PopBelowTheTopFrameFindsNothingAndKeepsFrames) {
  // A trampoline hit whose slot is deeper than every frame matches nothing and
  // abandons nothing (the frames are all above it, still live).
  CallStack s;
  call(s, kTop, kRetMain, kF);
  call(s, kTop - 0x40, kRetF, kG);
  auto r = s.pop(kTop - 0x100 + 8);
  EXPECT_FALSE(r.found);
  EXPECT_TRUE(r.returned.empty());
  EXPECT_TRUE(r.abandoned.empty());
  EXPECT_EQ(s.depth(), 2u);
}

TEST(CallStack, PopBetweenFramesFindsNothingAndKeepsFrames) {
  // f at kTop, g at kTop-0x80; a return at kTop-0x40 matches no frame: nothing is
  // popped (the tracer treats found=false as a broken invariant).
  CallStack s;
  call(s, kTop, kRetMain, kF);
  call(s, kTop - 0x80, kRetF, kG);
  auto r = s.pop(kTop - 0x40 + 8);
  EXPECT_FALSE(r.found);
  EXPECT_TRUE(r.returned.empty());
  EXPECT_TRUE(r.abandoned.empty());
  EXPECT_EQ(fns(s.frames()), (Fns{kF, kG}));
}

TEST(CallStack, PopLastRemovesOnlyTheNewFrame) {
  // The hijack write failed: the caller undoes the push. Frames that push()
  // reported as abandoned stay gone (the caller has reported them already).
  CallStack s;
  call(s, kTop, kRetMain, kF);
  call(s, kTop - 0x80, kRetF, kG);
  auto e = s.push(kTop - 0x40, kRetOther, kTramp, kH, 0);
  EXPECT_EQ(fns(e.abandoned), Fns{kG});
  EXPECT_EQ(fns(s.frames()), (Fns{kF, kH}));
  s.pop_last();
  EXPECT_EQ(fns(s.frames()), Fns{kF});
}

// ---------------------------------------------------------------------------------
// Tail calls: [slot] already holds the trampoline

TEST(CallStack, TailCallSharesTheSlotAndReturnsBoth) {
  // f (called from main) ends in `jmp g`: at g's entry sp is f's entry sp and [sp]
  // is the trampoline f's entry wrote.
  CallStack s;
  call(s, kTop, kRetMain, kF, 100);
  auto e = s.push(kTop, kTramp, kTramp, kG, 200);
  EXPECT_TRUE(e.abandoned.empty());
  EXPECT_FALSE(e.write_trampoline);  // already there
  ASSERT_EQ(s.depth(), 2u);
  const ShadowFrame& g = s.frames()[1];
  EXPECT_EQ(g.slot, kTop);
  EXPECT_TRUE(g.tail);
  EXPECT_EQ(g.real_ret, kRetMain);  // never the trampoline
  EXPECT_TRUE(g.armed);
  EXPECT_EQ(g.fn, kG);
  EXPECT_EQ(g.entry_ns, 200u);
  EXPECT_FALSE(s.frames()[0].tail);

  auto r = s.pop(kTop + 8);
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.real_ret, kRetMain);
  EXPECT_EQ(fns(r.returned), (Fns{kG, kF}));  // innermost first
  EXPECT_EQ(r.returned[0].entry_ns, 200u);
  EXPECT_EQ(r.returned[1].entry_ns, 100u);
  EXPECT_TRUE(r.abandoned.empty());
  EXPECT_TRUE(s.empty());
}

TEST(CallStack, ChainOfTailCalls) {
  // f jmp g, g jmp h, h jmp i: four frames on one slot, one return ends them all.
  CallStack s;
  call(s, kTop, kRetMain, kF);
  for (uint32_t fn : {kG, kH, kI}) {
    auto e = s.push(kTop, kTramp, kTramp, fn, 0);
    EXPECT_TRUE(e.abandoned.empty());
    EXPECT_FALSE(e.write_trampoline);
  }
  EXPECT_EQ(s.depth(), 4u);
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_TRUE(s.frames()[i].tail);
    EXPECT_EQ(s.frames()[i].real_ret, kRetMain);
  }
  auto r = s.pop(kTop + 8);
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.real_ret, kRetMain);
  EXPECT_EQ(fns(r.returned), (Fns{kI, kH, kG, kF}));
  EXPECT_TRUE(s.empty());
}

TEST(CallStack, TailCallInsideANestedCallLeavesTheCallerAlone) {
  // main -> f -> g, g jmp h; h returns to f, then f returns to main.
  CallStack s;
  const RemoteAddr sf = kTop, sg = kTop - 0x50;
  call(s, sf, kRetMain, kF);
  call(s, sg, kRetF, kG);
  auto e = s.push(sg, kTramp, kTramp, kH, 0);
  EXPECT_TRUE(e.abandoned.empty());
  EXPECT_FALSE(e.write_trampoline);
  EXPECT_EQ(s.depth(), 3u);

  auto r = s.pop(sg + 8);
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.real_ret, kRetF);
  EXPECT_EQ(fns(r.returned), (Fns{kH, kG}));
  EXPECT_EQ(fns(s.frames()), Fns{kF});

  r = s.pop(sf + 8);
  EXPECT_EQ(r.real_ret, kRetMain);
  EXPECT_EQ(fns(r.returned), Fns{kF});
}

TEST(CallStack, TailCalleeMakesNormalCallsOfItsOwn) {
  // f jmp g, g calls h (deeper slot), h returns, then g returns for both g and f.
  CallStack s;
  call(s, kTop, kRetMain, kF);
  ASSERT_FALSE(s.push(kTop, kTramp, kTramp, kG, 0).write_trampoline);
  call(s, kTop - 0x60, kRetG, kH);
  auto r = s.pop(kTop - 0x60 + 8);
  EXPECT_EQ(fns(r.returned), Fns{kH});
  EXPECT_EQ(r.real_ret, kRetG);
  r = s.pop(kTop + 8);
  EXPECT_EQ(fns(r.returned), (Fns{kG, kF}));
  EXPECT_EQ(r.real_ret, kRetMain);
}

TEST(CallStack, PopOfATailPairStopsAtTheBaseFrame) {
  // Two unrelated frames share nothing: f at kTop (normal), then a tail pair one
  // level deeper. Returning the pair must not take f with it.
  CallStack s;
  call(s, kTop, kRetMain, kF);
  call(s, kTop - 0x40, kRetF, kG);
  ASSERT_FALSE(s.push(kTop - 0x40, kTramp, kTramp, kH, 0).write_trampoline);
  auto r = s.pop(kTop - 0x40 + 8);
  EXPECT_EQ(fns(r.returned), (Fns{kH, kG}));
  EXPECT_EQ(fns(s.frames()), Fns{kF});
}

TEST(CallStack, TrampolineWithNoFrameOfOursIsTakenAsANormalCall) {
  // Cannot happen while the bookkeeping is right; the header says such an entry is
  // treated as a normal call (its "real" return address is what [slot] held).
  CallStack s;
  auto e = s.push(kTop, kTramp, kTramp, kF, 0);
  EXPECT_TRUE(e.abandoned.empty());
  EXPECT_TRUE(e.write_trampoline);
  ASSERT_EQ(s.depth(), 1u);
  EXPECT_FALSE(s.frames()[0].tail);
  EXPECT_EQ(s.frames()[0].real_ret, kTramp);

  // Same with frames of ours only above the slot (none at it).
  CallStack s2;
  call(s2, kTop, kRetMain, kF);
  auto e2 = s2.push(kTop - 0x40, kTramp, kTramp, kG, 0);
  EXPECT_TRUE(e2.abandoned.empty());
  EXPECT_TRUE(e2.write_trampoline);
  EXPECT_FALSE(s2.frames()[1].tail);
  EXPECT_EQ(s2.depth(), 2u);
}

TEST(CallStack, TailCallAfterALongjmpDropsTheAbandonedFramesFirst) {
  // f at kTop called g (kTop-0x40); g longjmp'd back into f without returning, and f
  // then tail-calls h. The frame of g is below the slot: abandoned; h shares f's slot.
  CallStack s;
  call(s, kTop, kRetMain, kF);
  call(s, kTop - 0x40, kRetF, kG);
  auto e = s.push(kTop, kTramp, kTramp, kH, 0);
  EXPECT_EQ(fns(e.abandoned), Fns{kG});
  EXPECT_FALSE(e.write_trampoline);
  ASSERT_EQ(s.depth(), 2u);
  EXPECT_TRUE(s.frames()[1].tail);
  EXPECT_EQ(s.frames()[1].real_ret, kRetMain);
  auto r = s.pop(kTop + 8);
  EXPECT_EQ(fns(r.returned), (Fns{kH, kF}));
  EXPECT_EQ(r.real_ret, kRetMain);
}

// ---------------------------------------------------------------------------------
// longjmp: frames left without returning

TEST(CallStack, LongjmpFoundAtTheNextPush) {
  // f -> g -> h -> i; i longjmps to a setjmp in g. g then calls j, whose slot is
  // above the slots of h and i (g's own frame is still there).
  CallStack s;
  const RemoteAddr sf = kTop, sg = kTop - 0x40, sh = kTop - 0x80, si = kTop - 0xc0;
  call(s, sf, kRetMain, kF);
  call(s, sg, kRetF, kG);
  call(s, sh, kRetG, kH);
  call(s, si, kRetH, kI);
  const RemoteAddr sj = sg - 0x20;  // g's sp at its call of j
  ASSERT_GT(sj, sh);
  auto e = s.push(sj, kRetOther, kTramp, kJ, 0);
  EXPECT_EQ(fns(e.abandoned), (Fns{kI, kH}));  // innermost first
  EXPECT_EQ(slots(e.abandoned), (Slots{si, sh}));
  EXPECT_TRUE(e.write_trampoline);
  EXPECT_EQ(fns(s.frames()), (Fns{kF, kG, kJ}));

  auto r = s.pop(sj + 8);
  EXPECT_TRUE(r.found);
  EXPECT_EQ(fns(r.returned), Fns{kJ});
  EXPECT_TRUE(r.abandoned.empty());
}

TEST(CallStack, LongjmpFoundAtTheNextReturn) {
  // f -> g -> h; h longjmps into f, which then returns: g and h are reported as
  // abandoned (innermost first) and f as returned.
  CallStack s;
  const RemoteAddr sf = kTop, sg = kTop - 0x40, sh = kTop - 0x80;
  call(s, sf, kRetMain, kF);
  call(s, sg, kRetF, kG);
  call(s, sh, kRetG, kH);
  auto r = s.pop(sf + 8);
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.real_ret, kRetMain);
  EXPECT_EQ(fns(r.abandoned), (Fns{kH, kG}));
  EXPECT_EQ(slots(r.abandoned), (Slots{sh, sg}));
  EXPECT_EQ(fns(r.returned), Fns{kF});
  EXPECT_TRUE(s.empty());
}

TEST(CallStack, TrampolineHitAboveEveryFrameFindsNothing) {
  // A trampoline hit whose slot no frame of ours hijacked: found=false and the
  // stack is left as it was (the tracer treats this as a broken invariant).
  CallStack s;
  call(s, kTop, kRetMain, kF);
  call(s, kTop - 0x40, kRetF, kG);
  auto r = s.pop(kTop + 0x100 + 8);
  EXPECT_FALSE(r.found);
  EXPECT_TRUE(r.abandoned.empty());
  EXPECT_TRUE(r.returned.empty());
  EXPECT_EQ(s.depth(), 2u);
}

TEST(CallStack, LongjmpToMainThenNewCallAboveEverything) {
  CallStack s;
  call(s, kTop - 0x100, kRetMain, kF);
  call(s, kTop - 0x140, kRetF, kG);
  call(s, kTop - 0x180, kRetG, kH);
  auto e = s.push(kTop - 0x100 + 0x10, kRetOther, kTramp, kI, 0);
  EXPECT_EQ(fns(e.abandoned), (Fns{kH, kG, kF}));
  EXPECT_TRUE(e.write_trampoline);
  EXPECT_EQ(fns(s.frames()), Fns{kI});
}

TEST(CallStack, FrameAtTheSameSlotWithARealReturnAddressIsStale) {
  // g's frame at slot X was abandoned (longjmp back into f, which then calls h from
  // the same sp). [X] now holds h's real return address, not the trampoline, so
  // g's frame cannot be a live tail caller: it is stale.
  CallStack s;
  const RemoteAddr x = kTop - 0x40;
  call(s, kTop, kRetMain, kF);
  call(s, x, kRetF, kG);
  auto e = s.push(x, kRetF + 0x10, kTramp, kH, 0);
  EXPECT_EQ(fns(e.abandoned), Fns{kG});
  EXPECT_TRUE(e.write_trampoline);
  ASSERT_EQ(s.depth(), 2u);
  EXPECT_FALSE(s.frames()[1].tail);
  EXPECT_EQ(s.frames()[1].real_ret, kRetF + 0x10);
  auto r = s.pop(x + 8);
  EXPECT_EQ(fns(r.returned), Fns{kH});
  EXPECT_EQ(r.real_ret, kRetF + 0x10);
}

TEST(CallStack, StaleFrameWithTheSameReturnAddressIsStaleToo) {
  // The same call site again (a loop calling g after a longjmp out of g): equal
  // return address, but not the trampoline, so still stale.
  CallStack s;
  const RemoteAddr x = kTop - 0x40;
  call(s, kTop, kRetMain, kF);
  call(s, x, kRetF, kG, 1);
  auto e = s.push(x, kRetF, kTramp, kG, 2);
  EXPECT_EQ(fns(e.abandoned), Fns{kG});
  EXPECT_EQ(e.abandoned[0].entry_ns, 1u);
  EXPECT_TRUE(e.write_trampoline);
  EXPECT_EQ(s.depth(), 2u);
  EXPECT_EQ(s.frames()[1].entry_ns, 2u);
}

TEST(CallStack, StaleFramesBelowAndAtTheSlotAreAllDropped) {
  CallStack s;
  const RemoteAddr x = kTop - 0x40;
  call(s, kTop, kRetMain, kF);
  call(s, x, kRetF, kG);
  call(s, x - 0x40, kRetG, kH);
  auto e = s.push(x, kRetOther, kTramp, kI, 0);
  EXPECT_EQ(fns(e.abandoned), (Fns{kH, kG}));
  EXPECT_EQ(fns(s.frames()), (Fns{kF, kI}));
}

// ---------------------------------------------------------------------------------
// Other stacks (sigaltstack): far-away slots are never taken as abandoned

TEST(CallStack, HandlerOnAFarAltStackBelowDoesNotAbandonTheMainStack) {
  // f -> g on the main stack; a signal runs traced handler h on an alternate stack
  // in the executable's .bss (far below the main stack); h calls i.
  CallStack s;
  const RemoteAddr alt = RemoteAddr{0x555555560000} + 0x8000;  // slot on the alternate stack
  ASSERT_GT(kTop - 0x40 - alt, CallStack::kSameStackDistance);
  call(s, kTop, kRetMain, kF);
  call(s, kTop - 0x40, kRetF, kG);
  call(s, alt, kRetOther, kH);  // the handler: nothing abandoned
  call(s, alt - 0x30, kRetH, kI);
  EXPECT_EQ(s.depth(), 4u);

  auto r = s.pop(alt - 0x30 + 8);
  EXPECT_EQ(fns(r.returned), Fns{kI});
  EXPECT_TRUE(r.abandoned.empty());
  r = s.pop(alt + 8);
  EXPECT_EQ(fns(r.returned), Fns{kH});
  EXPECT_TRUE(r.abandoned.empty());
  // The handler returned (sigreturn); g and f finish normally.
  r = s.pop(kTop - 0x40 + 8);
  EXPECT_TRUE(r.found);
  EXPECT_EQ(fns(r.returned), Fns{kG});
  EXPECT_TRUE(r.abandoned.empty());
  r = s.pop(kTop + 8);
  EXPECT_EQ(fns(r.returned), Fns{kF});
}

TEST(CallStack, HandlerOnAFarAltStackAboveDoesNotAbandonTheMainStack) {
  // Thread stack low, alternate stack mapped far above it: the handler's slot is
  // numerically above every frame, yet they are on another stack and stay.
  CallStack s;
  const RemoteAddr thread_top{0x7f3a40000000};
  const RemoteAddr alt = thread_top + CallStack::kSameStackDistance + 0x10000;
  call(s, thread_top, kRetMain, kF);
  call(s, thread_top - 0x40, kRetF, kG);
  auto e = s.push(alt, kRetOther, kTramp, kH, 0);
  EXPECT_TRUE(e.abandoned.empty());
  EXPECT_TRUE(e.write_trampoline);
  EXPECT_EQ(s.depth(), 3u);
  auto r = s.pop(alt + 8);
  EXPECT_EQ(fns(r.returned), Fns{kH});
  EXPECT_TRUE(r.abandoned.empty());
  EXPECT_EQ(fns(s.frames()), (Fns{kF, kG}));
}

TEST(CallStack, ReturnOnTheMainStackKeepsFramesOfAFarStack) {
  // A trampoline hit on the main stack whose slot is far above a frame on another
  // stack at the top: nothing is abandoned (and, since the top frame does not
  // match, nothing is found).
  CallStack s;
  const RemoteAddr low = kTop - CallStack::kSameStackDistance - 0x1000;
  call(s, low, kRetOther, kH);
  auto r = s.pop(kTop + 8);
  EXPECT_FALSE(r.found);
  EXPECT_TRUE(r.abandoned.empty());
  EXPECT_EQ(s.depth(), 1u);
}

TEST(CallStack, NearbySlotsAreTheSameStack) {
  // Just inside the distance: a deeper frame is abandoned as usual.
  CallStack s;
  const RemoteAddr near = kTop - CallStack::kSameStackDistance + 8;
  call(s, kTop, kRetMain, kF);
  call(s, near, kRetF, kG);
  auto e = s.push(kTop - 0x40, kRetF, kTramp, kH, 0);
  EXPECT_EQ(fns(e.abandoned), Fns{kG});
}

// call_stack.h: "Slots farther apart than this are on different stacks", so slots
// exactly kSameStackDistance apart are on the same stack and the deeper frame is
// abandoned.
TEST(CallStack, SlotsExactlyTheDistanceApartAreTheSameStack) {
  CallStack s;
  const RemoteAddr exact = kTop - 0x40 - CallStack::kSameStackDistance;
  call(s, kTop, kRetMain, kF);
  call(s, exact, kRetF, kG);
  auto e = s.push(kTop - 0x40, kRetF, kTramp, kH, 0);
  EXPECT_EQ(fns(e.abandoned), Fns{kG});
}

// siglongjmp out of a traced handler that runs on a far alternate stack (the usual
// stack-overflow recovery pattern: SIGSEGV handler on a sigaltstack, siglongjmp back
// to a sigsetjmp in g): f -> g on the main stack; handler h on the alternate stack;
// h siglongjmps into g; g returns. Every frame pushed after g is gone once g returns
// through the trampoline (a thread returns from g only after everything it entered
// later has finished or was jumped out of), whichever stack it was on: h is reported
// as abandoned and g found (hostile-targets, fault-longjmp-altstack, runs it for real).
TEST(CallStack, SiglongjmpOutOfAFarAltStackHandler) {
  CallStack s;
  const RemoteAddr alt = RemoteAddr{0x555555560000} + 0x8000;
  const RemoteAddr sf = kTop, sg = kTop - 0x40;
  call(s, sf, kRetMain, kF);
  call(s, sg, kRetF, kG);
  call(s, alt, kRetOther, kH);
  auto r = s.pop(sg + 8);  // g returns after the siglongjmp
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.real_ret, kRetF);
  EXPECT_EQ(fns(r.abandoned), Fns{kH});
  EXPECT_EQ(fns(r.returned), Fns{kG});
  EXPECT_EQ(fns(s.frames()), Fns{kF});
}

TEST(CallStack, SiglongjmpOutOfAFarAltStackHandlerFoundAtTheNextPush) {
  // f -> g on the main stack, g faults; the traced handler h runs on a far alternate
  // stack and siglongjmps to a sigsetjmp in f, which calls g again from the same sp.
  // g's old frame is stale (its slot holds a real return address again), and h,
  // entered after it, is dead with it: both abandoned, innermost first. Without
  // looking past h, every round would leave two frames behind and deepen the depths.
  CallStack s;
  const RemoteAddr alt = RemoteAddr{0x555555560000} + 0x8000;
  const RemoteAddr sf = kTop, sg = kTop - 0x40;
  call(s, sf, kRetMain, kF);
  call(s, sg, kRetF, kG);
  call(s, alt, kRetOther, kH);
  auto e = s.push(sg, kRetF, kTramp, kG, 0);
  EXPECT_EQ(fns(e.abandoned), (Fns{kH, kG}));
  EXPECT_TRUE(e.write_trampoline);
  EXPECT_EQ(fns(s.frames()), (Fns{kF, kG}));
  // A call from f at a shallower point (after g) finds the same.
  call(s, alt, kRetOther, kH);
  e = s.push(sg + 0x10, kRetF, kTramp, kI, 0);
  EXPECT_EQ(fns(e.abandoned), (Fns{kH, kG}));
  EXPECT_EQ(fns(s.frames()), (Fns{kF, kI}));
}

TEST(CallStack, CallBelowALiveFrameKeepsAFarStackAboveIt) {
  // f on the main stack started a coroutine whose frame c is on a far stack and was
  // suspended; back on the main stack f calls g (deeper than f): f is alive, so c may
  // be too, and stays.
  CallStack s;
  const RemoteAddr co = RemoteAddr{0x555555560000} + 0x8000;
  call(s, kTop, kRetMain, kF);
  call(s, co, kRetOther, kH);
  auto e = s.push(kTop - 0x40, kRetF, kTramp, kG, 0);
  EXPECT_TRUE(e.abandoned.empty());
  EXPECT_EQ(fns(s.frames()), (Fns{kF, kH, kG}));
}

// ---------------------------------------------------------------------------------
// C++ exceptions: disarm before the unwinder reads the stack, rearm after the catch

TEST(CallStack, DisarmListsArmedNonTailFramesOutermostFirst) {
  // f at A (normal), g at B (normal), h tail-called from g shares B.
  CallStack s;
  const RemoteAddr a = kTop, b = kTop - 0x40;
  call(s, a, kRetMain, kF);
  call(s, b, kRetF, kG);
  ASSERT_FALSE(s.push(b, kTramp, kTramp, kH, 0).write_trampoline);

  auto d = s.disarm();
  EXPECT_EQ(d, (Pairs{{a, kRetMain}, {b, kRetF}}));  // one entry per slot
  EXPECT_TRUE(s.disarmed());
  for (const auto& f : s.frames()) EXPECT_FALSE(f.armed);

  // Nothing left to restore the second time (_Unwind_Resume after a cleanup).
  EXPECT_TRUE(s.disarm().empty());
  EXPECT_TRUE(s.disarmed());
}

TEST(CallStack, PushWhileDisarmedStillHijacks) {
  // The unwinder (the personality routine) or a landing pad calls a traced function:
  // its frame is deeper than anything the unwinder walks and returns before the
  // unwinder looks again, so it is hijacked as usual; f stays disarmed.
  CallStack s;
  call(s, kTop, kRetMain, kF);
  s.disarm();
  auto e = s.push(kTop - 0x200, kRetOther, kTramp, kG, 0);
  EXPECT_TRUE(e.abandoned.empty());
  EXPECT_TRUE(e.write_trampoline);
  ASSERT_EQ(s.depth(), 2u);
  EXPECT_TRUE(s.frames()[1].armed);
  EXPECT_FALSE(s.frames()[0].armed);
  EXPECT_EQ(s.frames()[1].real_ret, kRetOther);
}

TEST(CallStack, RearmAtCatchDropsTheThrownThroughFrames) {
  // try { g(); } catch (...) in f; g calls h, h throws.
  //   f's slot SF; f calls g from sp = SG + 8, so g's slot is SG; h's slot SH < SG.
  // The landing pad in f runs with f's sp again and calls __cxa_begin_catch, whose
  // return slot is therefore SG, the slot of the callee thrown through.
  CallStack s;
  const RemoteAddr sf = kTop, sg = kTop - 0x40, sh = kTop - 0x90;
  call(s, sf, kRetMain, kF, 1);
  call(s, sg, kRetF, kG, 2);
  call(s, sh, kRetG, kH, 3);
  EXPECT_EQ(s.disarm(), (Pairs{{sf, kRetMain}, {sg, kRetF}, {sh, kRetG}}));

  auto r = s.rearm(sg);
  EXPECT_EQ(fns(r.dead), (Fns{kH, kG}));  // innermost first
  EXPECT_EQ(slots(r.dead), (Slots{sh, sg}));
  EXPECT_EQ(r.slots, Slots{sf});
  EXPECT_FALSE(s.disarmed());
  ASSERT_EQ(fns(s.frames()), Fns{kF});
  EXPECT_TRUE(s.frames()[0].armed);

  // f returns normally through the trampoline afterwards.
  auto p = s.pop(sf + 8);
  EXPECT_TRUE(p.found);
  EXPECT_EQ(p.real_ret, kRetMain);
  EXPECT_EQ(fns(p.returned), Fns{kF});
}

TEST(CallStack, RearmAtALaterEntryDropsOnlyWhatWasUnwound) {
  // A cleanup landing pad in g (a destructor call) is the first entry after the
  // throw from h: g's sp is back at its body value, so the destructor's slot equals
  // h's slot. h is dead; g and f are live and must be hijacked again.
  CallStack s;
  const RemoteAddr sf = kTop, sg = kTop - 0x40, sh = kTop - 0x90;
  call(s, sf, kRetMain, kF);
  call(s, sg, kRetF, kG);
  call(s, sh, kRetG, kH);
  s.disarm();
  auto r = s.rearm(sh);
  EXPECT_EQ(fns(r.dead), Fns{kH});
  EXPECT_EQ(r.slots, (Slots{sf, sg}));
  EXPECT_FALSE(s.disarmed());
  for (const auto& f : s.frames()) EXPECT_TRUE(f.armed);
  // The destructor entry itself is then an ordinary call at sh.
  call(s, sh, kRetG + 0x20, kI);
  EXPECT_EQ(fns(s.frames()), (Fns{kF, kG, kI}));
}

TEST(CallStack, RearmBelowEveryFrameKeepsThemAll) {
  CallStack s;
  call(s, kTop, kRetMain, kF);
  call(s, kTop - 0x40, kRetF, kG);
  s.disarm();
  auto r = s.rearm(kTop - 0x400);
  EXPECT_TRUE(r.dead.empty());
  EXPECT_EQ(r.slots, (Slots{kTop, kTop - 0x40}));
  EXPECT_EQ(s.depth(), 2u);
}

TEST(CallStack, RearmSkipsFramesPushedWhileDisarmed) {
  // g was entered during the unwind and hijacked then; only f needs re-hijacking.
  CallStack s;
  call(s, kTop, kRetMain, kF);
  s.disarm();
  auto e = s.push(kTop - 0x40, kRetF, kTramp, kG, 0);
  ASSERT_TRUE(e.write_trampoline);
  auto r = s.rearm(kTop - 0x80);
  EXPECT_TRUE(r.dead.empty());
  EXPECT_EQ(r.slots, (Slots{kTop}));
  for (const auto& f : s.frames()) EXPECT_TRUE(f.armed);
}

TEST(CallStack, RearmHijacksATailSharedSlotOnce) {
  // f jmp g (tail pair at SF), g calls h, h throws, caught in g.
  CallStack s;
  const RemoteAddr sf = kTop, sh = kTop - 0x40;
  call(s, sf, kRetMain, kF);
  ASSERT_FALSE(s.push(sf, kTramp, kTramp, kG, 0).write_trampoline);
  call(s, sh, kRetG, kH);
  EXPECT_EQ(s.disarm(), (Pairs{{sf, kRetMain}, {sh, kRetG}}));
  auto r = s.rearm(sh);  // __cxa_begin_catch called from g at h's old slot
  EXPECT_EQ(fns(r.dead), Fns{kH});
  EXPECT_EQ(r.slots, Slots{sf});
  ASSERT_EQ(s.depth(), 2u);
  EXPECT_TRUE(s.frames()[0].armed);
  EXPECT_TRUE(s.frames()[1].armed);
  EXPECT_TRUE(s.frames()[1].tail);
  auto p = s.pop(sf + 8);
  EXPECT_EQ(fns(p.returned), (Fns{kG, kF}));
  EXPECT_EQ(p.real_ret, kRetMain);
}

TEST(CallStack, ExceptionThroughATailPairKillsBoth) {
  // f calls g; g jmp h (tail pair at SG); h calls i, i throws; caught in f.
  CallStack s;
  const RemoteAddr sf = kTop, sg = kTop - 0x40, si = kTop - 0x80;
  call(s, sf, kRetMain, kF);
  call(s, sg, kRetF, kG);
  ASSERT_FALSE(s.push(sg, kTramp, kTramp, kH, 0).write_trampoline);
  call(s, si, kRetH, kI);
  s.disarm();
  auto r = s.rearm(sg);
  EXPECT_EQ(fns(r.dead), (Fns{kI, kH, kG}));
  EXPECT_EQ(r.slots, Slots{sf});
  EXPECT_EQ(fns(s.frames()), Fns{kF});
}

TEST(CallStack, RearmWithoutDisarmWritesNothing) {
  // __cxa_begin_catch of an exception that went through no traced frame: every
  // frame is still hijacked, so there is nothing to write back.
  CallStack s;
  call(s, kTop, kRetMain, kF);
  call(s, kTop - 0x40, kRetF, kG);
  auto r = s.rearm(kTop - 0x80);
  EXPECT_TRUE(r.dead.empty());
  EXPECT_TRUE(r.slots.empty());
  EXPECT_EQ(s.depth(), 2u);
  EXPECT_FALSE(s.disarmed());
}

TEST(CallStack, TailCallAfterRearmSharesAnArmedSlot) {
  // f was entered and hijacked, disarmed for an unwind that did not reach it, and
  // re-armed; a tail call from f afterwards finds the trampoline at f's slot again.
  CallStack s;
  call(s, kTop, kRetMain, kF);
  s.disarm();
  s.rearm(kTop - 0x100);
  auto e = s.push(kTop, kTramp, kTramp, kG, 0);
  EXPECT_FALSE(e.write_trampoline);
  ASSERT_EQ(s.depth(), 2u);
  EXPECT_TRUE(s.frames()[1].tail);
  EXPECT_TRUE(s.frames()[1].armed);
}

TEST(CallStack, SecondThrowAfterRearm) {
  // Throw, catch in g, rethrow from g's handler, catch in f.
  CallStack s;
  const RemoteAddr sf = kTop, sg = kTop - 0x40, sh = kTop - 0x80;
  call(s, sf, kRetMain, kF);
  call(s, sg, kRetF, kG);
  call(s, sh, kRetG, kH);
  s.disarm();
  auto r1 = s.rearm(sh);  // caught in g
  EXPECT_EQ(fns(r1.dead), Fns{kH});
  EXPECT_EQ(r1.slots, (Slots{sf, sg}));
  EXPECT_EQ(s.disarm(), (Pairs{{sf, kRetMain}, {sg, kRetF}}));  // rethrow
  auto r2 = s.rearm(sg);  // caught in f
  EXPECT_EQ(fns(r2.dead), Fns{kG});
  EXPECT_EQ(r2.slots, Slots{sf});
}

// ---------------------------------------------------------------------------------
// Functions that return twice (setjmp, vfork, getcontext): site frames. Their return
// address is never hijacked (setjmp saves it in the jmp_buf); a breakpoint at the
// return address reports the first return through pop_site().

TEST(CallStack, SiteFrameLeavesTheSlotAlone) {
  CallStack s;
  call(s, kTop, kRetMain, kF);
  const RemoteAddr sj = kTop - 0x40;  // f calls setjmp
  auto e = s.push_site(sj, kRetF, kTramp, kG, 7);
  EXPECT_TRUE(e.abandoned.empty());
  EXPECT_EQ(e.real_ret, kRetF);
  EXPECT_FALSE(e.restore_slot);
  ASSERT_EQ(s.depth(), 2u);
  const ShadowFrame& g = s.frames()[1];
  EXPECT_TRUE(g.site);
  EXPECT_FALSE(g.armed);
  EXPECT_FALSE(g.tail);
  EXPECT_EQ(g.slot, sj);
  EXPECT_EQ(g.real_ret, kRetF);

  // The return-site breakpoint at kRetF is hit with sp = slot + 8.
  auto r = s.pop_site(sj + 8, kRetF);
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.real_ret, kRetF);
  EXPECT_EQ(fns(r.returned), Fns{kG});
  EXPECT_EQ(r.returned[0].entry_ns, 7u);
  EXPECT_EQ(fns(s.frames()), Fns{kF});

  // The second return (longjmp landing at the same place) finds nothing.
  auto again = s.pop_site(sj + 8, kRetF);
  EXPECT_FALSE(again.found);
  EXPECT_EQ(s.depth(), 1u);
}

TEST(CallStack, ReturnSiteNeedsTheSameSlotAndAddress) {
  CallStack s;
  const RemoteAddr sj = kTop - 0x40;
  s.push_site(sj, kRetF, kTramp, kG, 0);
  EXPECT_FALSE(s.pop_site(sj + 8, kRetOther).found);      // another return address
  EXPECT_FALSE(s.pop_site(sj - 0x20 + 8, kRetF).found);   // another stack depth
  EXPECT_EQ(s.depth(), 1u);
  // An ordinary frame on top hides the site frame.
  call(s, sj - 0x40, kRetOther, kH);
  EXPECT_FALSE(s.pop_site(sj + 8, kRetF).found);
  EXPECT_EQ(s.depth(), 2u);
}

TEST(CallStack, SetjmpTailCallingSigsetjmpSharesTheSite) {
  // _setjmp ends in `jmp __sigsetjmp`: both see the same, untouched return address.
  CallStack s;
  const RemoteAddr sj = kTop;
  s.push_site(sj, kRetMain, kTramp, kF, 0);
  auto e2 = s.push_site(sj, kRetMain, kTramp, kG, 0);
  EXPECT_TRUE(e2.abandoned.empty());
  EXPECT_EQ(e2.real_ret, kRetMain);
  EXPECT_FALSE(e2.restore_slot);
  ASSERT_EQ(s.depth(), 2u);
  EXPECT_TRUE(s.frames()[1].tail);
  auto r = s.pop_site(sj + 8, kRetMain);
  EXPECT_TRUE(r.found);
  EXPECT_EQ(fns(r.returned), (Fns{kG, kF}));
  EXPECT_TRUE(s.empty());
}

TEST(CallStack, HijackedCallerTailCallingSetjmpIsUnhijacked) {
  // A traced PLT stub (hijacked, [slot] = trampoline) jumps to a traced setjmp. The
  // slot must get its real address back before setjmp saves it, and the stub's
  // frame becomes a site frame returning with it.
  CallStack s;
  call(s, kTop, kRetMain, kF);
  auto e = s.push_site(kTop, kTramp, kTramp, kG, 0);
  EXPECT_TRUE(e.abandoned.empty());
  EXPECT_TRUE(e.restore_slot);
  EXPECT_EQ(e.real_ret, kRetMain);
  ASSERT_EQ(s.depth(), 2u);
  for (const auto& f : s.frames()) {
    EXPECT_TRUE(f.site);
    EXPECT_FALSE(f.armed);
  }
  EXPECT_TRUE(s.frames()[1].tail);
  EXPECT_TRUE(s.disarm().empty());  // nothing hijacked any more
  auto r = s.pop_site(kTop + 8, kRetMain);
  EXPECT_TRUE(r.found);
  EXPECT_EQ(fns(r.returned), (Fns{kG, kF}));
}

TEST(CallStack, SiteFramesAreNeitherRestoredNorRehijacked) {
  CallStack s;
  call(s, kTop, kRetMain, kF);
  s.push_site(kTop - 0x40, kRetF, kTramp, kG, 0);
  EXPECT_EQ(s.disarm(), (Pairs{{kTop, kRetMain}}));
  auto r = s.rearm(kTop - 0x100);
  EXPECT_TRUE(r.dead.empty());
  EXPECT_EQ(r.slots, Slots{kTop});
  EXPECT_FALSE(s.frames()[1].armed);
}

TEST(CallStack, LeftoverSiteFrameIsAbandonedByAnOuterReturn) {
  // A site frame whose return was never seen (the return-site breakpoint could not
  // be used) is deeper than its caller's slot and goes when the caller returns.
  CallStack s;
  call(s, kTop, kRetMain, kF);
  s.push_site(kTop - 0x40, kRetF, kTramp, kG, 0);
  auto r = s.pop(kTop + 8);
  EXPECT_TRUE(r.found);
  EXPECT_EQ(fns(r.abandoned), Fns{kG});
  EXPECT_EQ(fns(r.returned), Fns{kF});
}

// ---------------------------------------------------------------------------------
// Taking everything (thread exit, exec, detach)

TEST(CallStack, TakeAllIsInnermostFirstAndResets) {
  CallStack s;
  call(s, kTop, kRetMain, kF);
  call(s, kTop - 0x40, kRetF, kG);
  ASSERT_FALSE(s.push(kTop - 0x40, kTramp, kTramp, kH, 0).write_trampoline);
  call(s, kTop - 0x80, kRetH, kI);
  s.disarm();
  auto all = s.take_all();
  EXPECT_EQ(fns(all), (Fns{kI, kH, kG, kF}));
  EXPECT_EQ(slots(all), (Slots{kTop - 0x80, kTop - 0x40, kTop - 0x40, kTop}));
  EXPECT_TRUE(all[1].tail);
  EXPECT_TRUE(s.empty());
  EXPECT_FALSE(s.disarmed());
  // A fresh start afterwards hijacks again.
  auto e = s.push(kTop, kRetMain, kTramp, kF, 0);
  EXPECT_TRUE(e.write_trampoline);
}

TEST(CallStack, CopyIsIndependent) {
  // A fork child starts with a copy of the forking thread's stack.
  CallStack parent;
  call(parent, kTop, kRetMain, kF);
  call(parent, kTop - 0x40, kRetF, kG);
  CallStack child = parent;
  auto r = child.pop(kTop - 0x40 + 8);
  EXPECT_TRUE(r.found);
  EXPECT_EQ(child.depth(), 1u);
  EXPECT_EQ(parent.depth(), 2u);
  auto p = parent.pop(kTop - 0x40 + 8);
  EXPECT_TRUE(p.found);
  EXPECT_EQ(fns(p.returned), Fns{kG});
}

}  // namespace
TEST(CallStack, TakeRemovesOnlyTheMatchingRun) {
  // A coroutine's frames (g, then h tail-called from g) recorded on this thread's
  // stack under a live frame i: taking the slot of g removes g and h, keeps f and i.
  CallStack s;
  const RemoteAddr sg = kTop - (uint64_t{1} << 30);  // the coroutine's stack, far away
  call(s, kTop, kRetMain, kF);
  call(s, sg, kRetF, kG);
  ASSERT_FALSE(s.push(sg, kTramp, kTramp, kH, 0).write_trampoline);  // tail call
  call(s, kTop - 0x40, kRetOther, kI);
  auto r = s.take(sg + 8);
  ASSERT_TRUE(r.found);
  EXPECT_EQ(fns(r.returned), (Fns{kH, kG}));
  EXPECT_EQ(r.real_ret, kRetF);
  EXPECT_TRUE(r.abandoned.empty());
  EXPECT_EQ(fns(s.frames()), (Fns{kF, kI}));
  EXPECT_FALSE(s.take(sg - 0x100 + 8).found);
}

}  // namespace ft

// --returns=ret-sites: frames pushed as site frames, popped at the function's exits.
namespace ft {
namespace {

TEST(CallStackExits, ExitPopsTheFunctionsFrameAndAbandonsDeeperOnes) {
  CallStack s;
  RemoteAddr f = kTop, g = kTop - 0x40, h = kTop - 0x80;
  s.push_site(f, kRetMain, kTramp, kF, 1);
  s.push_site(g, kRetF, kTramp, kG, 2);
  s.push_site(h, kRetG, kTramp, kH, 3);
  // g's ret with its return address at g's slot: h was left without returning
  // (longjmp, a recovered Go panic).
  auto r = s.pop_exit(g, kG, /*above_abandoned=*/true);
  ASSERT_TRUE(r.found);
  EXPECT_EQ(fns(r.abandoned), (std::vector<uint32_t>{kH}));
  EXPECT_EQ(fns(r.returned), (std::vector<uint32_t>{kG}));
  EXPECT_EQ(r.real_ret, kRetF);
  EXPECT_EQ(fns(s.frames()), (std::vector<uint32_t>{kF}));
  // No frame of that function at that slot: nothing.
  EXPECT_FALSE(s.pop_exit(g, kG, true).found);
  EXPECT_FALSE(s.pop_exit(f, kG, true).found);
  EXPECT_EQ(s.depth(), 1u);
}

TEST(CallStackExits, AnIndirectTailJumpSharesTheSlotAndReturnsWithTheCallee) {
  CallStack s;
  s.push_site(kTop, kRetMain, kTramp, kF, 1);
  // f jumps through a register to g: g starts with f's slot and return address.
  auto e = s.push_site(kTop, kRetMain, kTramp, kG, 2);
  EXPECT_TRUE(e.abandoned.empty());
  auto r = s.pop_exit(kTop, kG, true);
  ASSERT_TRUE(r.found);
  EXPECT_EQ(fns(r.returned), (std::vector<uint32_t>{kG, kF}));
  EXPECT_TRUE(s.empty());
}

TEST(CallStackExits, AnExitOnAnotherThreadLeavesTheOtherFrames) {
  CallStack s;
  RemoteAddr a = kTop, b = kTop - 0x40, other = RemoteAddr(0x4000000100000000 - 0x200);
  s.push_site(a, kRetMain, kTramp, kF, 1);
  s.push_site(b, kRetF, kTramp, kG, 2);
  s.push_site(other, kRetOther, kTramp, kH, 3);  // another goroutine's frame on this thread
  auto r = s.pop_exit(b, kG, /*above_abandoned=*/false);
  ASSERT_TRUE(r.found);
  EXPECT_TRUE(r.abandoned.empty());
  EXPECT_EQ(fns(s.frames()), (std::vector<uint32_t>{kF, kH}));
}

}  // namespace
}  // namespace ft
