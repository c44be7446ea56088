// The recorder's ring protocol (core/recorder_abi.h) and functracer's side of it
// (RecorderRegion): producers here are the same inline functions the in-process
// recorder runs, on threads of this test and in its signal handlers.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "core/recorder_region.h"

namespace ft {
namespace {

constexpr uint64_t kRing = 4096;

struct Mapped {
  explicit Mapped(uint64_t ring_bytes) : size(RecorderRegion::region_size(ring_bytes)) {
    base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(base, MAP_FAILED);
  }
  ~Mapped() { ::munmap(base, size); }
  uint64_t size;
  void* base;
};

// An event of `n` words whose every word says (seq, i), so a torn or misplaced
// record shows.
int produce(ft_rec_ring* r, uint64_t ring_bytes, uint32_t fn, uint64_t seq, uint16_t n) {
  ft_rec_event ev{};
  ev.kind = FT_REC_CALL;
  ev.fn = fn;
  ev.flags = static_cast<uint32_t>(seq);
  ev.tsc = seq * 3;
  ev.nwords = n;
  uint64_t words[FT_REC_MAX_WORDS];
  for (uint16_t i = 0; i < n; ++i) words[i] = seq << 8 | i;
  return ft_rec_write_event(r, ring_bytes, &ev, words);
}

void expect_intact(const RecordedEvent& ev, uint64_t seq) {
  EXPECT_EQ(ev.kind, FT_REC_CALL);
  EXPECT_EQ(ev.flags, static_cast<uint32_t>(seq));
  EXPECT_EQ(ev.tsc, seq * 3);
  for (size_t i = 0; i < ev.words.size(); ++i) ASSERT_EQ(ev.words[i], seq << 8 | i) << "seq " << seq;
}

TEST(RecorderRegion, KeysFindTheirRingsAndOnlyThem) {
  Mapped m(kRing);
  RecorderRegion reg = RecorderRegion::create(m.base, kRing, 0);
  ft_rec_header* h = reg.header();
  EXPECT_EQ(ft_rec_find(h, 0x7f0000001000), nullptr);
  auto a = reg.add_thread(0x7f0000001000);
  auto b = reg.add_thread(0x7f0000802000);
  ASSERT_TRUE(a && b);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(reg.add_thread(0x7f0000001000), a);  // asked twice: the same ring
  EXPECT_EQ(ft_rec_find(h, 0x7f0000001000), ft_rec_ring_at(h, *a));
  EXPECT_EQ(ft_rec_find(h, 0x7f0000802000), ft_rec_ring_at(h, *b));
  EXPECT_EQ(ft_rec_find(h, 0x7f0000803000), nullptr);
  // A thread pointer of 0 (not set up yet) or 1 is never a key.
  EXPECT_FALSE(reg.add_thread(0));
  EXPECT_EQ(ft_rec_find(h, 0), nullptr);
  reg.remove_thread(0x7f0000001000);
  EXPECT_EQ(ft_rec_find(h, 0x7f0000001000), nullptr);
  EXPECT_EQ(ft_rec_find(h, 0x7f0000802000), ft_rec_ring_at(h, *b));
  EXPECT_EQ(reg.threads(), 1u);
}

TEST(RecorderRegion, KeysThatCollideAreFoundPastRemovedOnes) {
  Mapped m(kRing);
  RecorderRegion reg = RecorderRegion::create(m.base, kRing, 0);
  // Thread pointers whose hashes collide: found by searching the table's hash.
  std::vector<uint64_t> same;
  uint64_t want = ft_rec_key_hash(0x7f0000001000);
  for (uint64_t tp = 0x7f0000001000; same.size() < 4; tp += 0x1000)
    if (ft_rec_key_hash(tp) == want) same.push_back(tp);
  for (uint64_t tp : same) ASSERT_TRUE(reg.add_thread(tp));
  reg.remove_thread(same[1]);
  EXPECT_EQ(ft_rec_find(reg.header(), same[1]), nullptr);
  for (uint64_t tp : {same[0], same[2], same[3]})
    EXPECT_EQ(ft_rec_find(reg.header(), tp), ft_rec_ring_at(reg.header(), *reg.ring_of(tp)));
  // The removed entry is reused, and the others stay found.
  ASSERT_TRUE(reg.add_thread(same[1]));
  for (uint64_t tp : same) EXPECT_NE(ft_rec_find(reg.header(), tp), nullptr);
}

TEST(RecorderRegion, EveryRingIsTakenThenNoMore) {
  Mapped m(kRing);
  RecorderRegion reg = RecorderRegion::create(m.base, kRing, 0);
  for (uint64_t i = 0; i < FT_REC_MAX_THREADS; ++i) ASSERT_TRUE(reg.add_thread(0x10000 + i * 0x1000)) << i;
  EXPECT_FALSE(reg.add_thread(0x7fff0000));
  reg.remove_thread(0x10000 + 5 * 0x1000);
  EXPECT_TRUE(reg.add_thread(0x7fff0000));
}

TEST(RecorderRegion, RecordsComeOutInOrderAcrossTheRingsEnd) {
  Mapped m(kRing);
  RecorderRegion reg = RecorderRegion::create(m.base, kRing, 0);
  uint32_t idx = *reg.add_thread(0x7f0000001000);
  ft_rec_ring* r = ft_rec_find(reg.header(), 0x7f0000001000);
  uint64_t next = 0, seen = 0;
  // Sizes that do not divide the ring: records straddle its end many times over.
  for (int round = 0; round < 200; ++round) {
    for (int k = 0; k < 5; ++k, ++next) ASSERT_EQ(produce(r, kRing, 7, next, static_cast<uint16_t>(next % 13)), 0);
    reg.drain(idx, [&](const RecordedEvent& ev) {
      EXPECT_EQ(ev.words.size(), seen % 13);
      expect_intact(ev, seen++);
    });
  }
  EXPECT_EQ(seen, next);
  EXPECT_EQ(reg.lost(idx), 0u);
}

TEST(RecorderRegion, RecordsFromTheCutOnStayForTheNextDrain) {
  Mapped m(kRing);
  RecorderRegion reg = RecorderRegion::create(m.base, kRing, 0);
  uint32_t idx = *reg.add_thread(0x7f0000001000);
  ft_rec_ring* r = ft_rec_find(reg.header(), 0x7f0000001000);
  for (uint64_t seq = 0; seq < 6; ++seq) ASSERT_EQ(produce(r, kRing, 7, seq, 2), 0);
  std::vector<uint64_t> got;
  auto take = [&](const RecordedEvent& ev) {
    expect_intact(ev, ev.tsc / 3);
    got.push_back(ev.tsc / 3);
  };
  // Time stamps 0, 3, 6, ...: a cut at 7 takes the first three and leaves the rest
  // in the ring, in order.
  EXPECT_EQ(reg.drain(idx, take, 7), 3u);
  EXPECT_EQ(got, (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(reg.drain(idx, take, 9), 0u);  // the next one is at 9: not before the cut
  EXPECT_EQ(reg.drain(idx, take), 3u);
  EXPECT_EQ(got, (std::vector<uint64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(reg.lost(idx), 0u);
}

TEST(RecorderRegion, AFullRingCountsWhatItLosesAndTakesMoreOnceRead) {
  Mapped m(kRing);
  RecorderRegion reg = RecorderRegion::create(m.base, kRing, 0);
  uint32_t idx = *reg.add_thread(0x7f0000001000);
  ft_rec_ring* r = ft_rec_ring_at(reg.header(), idx);
  // 64-byte records: 64 fit in 4 KiB.
  int written = 0, lost = 0;
  for (int i = 0; i < 100; ++i) (produce(r, kRing, 1, static_cast<uint64_t>(written), 5) == 0 ? ++written : ++lost);
  EXPECT_EQ(written, 64);
  EXPECT_EQ(lost, 36);
  EXPECT_EQ(reg.lost(idx), 36u);
  EXPECT_EQ(r->lost_bytes, 36u * 64);
  uint64_t seen = 0;
  EXPECT_EQ(reg.drain(idx, [&](const RecordedEvent& ev) { expect_intact(ev, seen++); }), 64u);
  EXPECT_EQ(produce(r, kRing, 1, 64, 5), 0);
}

TEST(RecorderRegion, AnUncommittedRecordHoldsBackTheOnesReservedAfterIt) {
  Mapped m(kRing);
  RecorderRegion reg = RecorderRegion::create(m.base, kRing, 0);
  uint32_t idx = *reg.add_thread(0x7f0000001000);
  ft_rec_ring* r = ft_rec_ring_at(reg.header(), idx);
  // A producer reserved its record and was interrupted (a signal handler) before
  // committing; the handler records an event of its own.
  uint64_t outer = ft_rec_reserve(r, kRing, FT_REC_EVENT_HEADER);
  ASSERT_NE(outer, FT_REC_NO_RING);
  ASSERT_EQ(produce(r, kRing, 2, 1, 2), 0);
  EXPECT_EQ(reg.drain(idx, [](const RecordedEvent&) {}), 0u);  // nothing until the first is committed
  // The interrupted producer finishes.
  ft_rec_put_word(r, kRing, outer + 8, 1);  // fn 1
  ft_rec_put_word(r, kRing, outer + 16, 0);
  __atomic_store_n(reinterpret_cast<uint64_t*>(ft_rec_ring_data(r) + outer),
                   uint64_t{FT_REC_EVENT_HEADER} | uint64_t{FT_REC_CALL} << 32, __ATOMIC_RELEASE);
  std::vector<uint32_t> fns;
  reg.drain(idx, [&](const RecordedEvent& ev) { fns.push_back(ev.fn); });
  EXPECT_EQ(fns, (std::vector<uint32_t>{1, 2}));
}

TEST(RecorderRegion, AnOverwrittenRingIsEmptiedAndCounted) {
  Mapped m(kRing);
  RecorderRegion reg = RecorderRegion::create(m.base, kRing, 0);
  uint32_t idx = *reg.add_thread(0x7f0000001000);
  ft_rec_ring* r = ft_rec_ring_at(reg.header(), idx);
  ASSERT_EQ(produce(r, kRing, 1, 0, 2), 0);
  ASSERT_EQ(produce(r, kRing, 1, 1, 2), 0);
  // A stray write of the program: a size that does not match its word count.
  *reinterpret_cast<uint64_t*>(ft_rec_ring_data(r)) = 48 | uint64_t{FT_REC_CALL} << 32 | uint64_t{9} << 48;
  EXPECT_EQ(reg.drain(idx, [](const RecordedEvent&) {}), 0u);
  EXPECT_EQ(reg.corrupt(), 1u);
  // The ring works again.
  ASSERT_EQ(produce(r, kRing, 1, 2, 2), 0);
  uint64_t seen = 2;
  EXPECT_EQ(reg.drain(idx, [&](const RecordedEvent& ev) { expect_intact(ev, seen++); }), 1u);
}

TEST(RecorderRegion, AProducerThreadAndTheReaderLoseNothingUncounted) {
  Mapped m(kRing);
  RecorderRegion reg = RecorderRegion::create(m.base, kRing, 0);
  uint32_t idx = *reg.add_thread(0x7f0000001000);
  ft_rec_ring* r = ft_rec_ring_at(reg.header(), idx);
  constexpr uint64_t kEvents = 200000;
  std::atomic<bool> done{false};
  uint64_t lost = 0;
  std::thread producer([&] {
    for (uint64_t i = 0; i < kEvents; ++i)
      if (produce(r, kRing, 3, i, static_cast<uint16_t>(i % 7)) != 0) ++lost;
    done = true;
  });
  uint64_t seen = 0, last = 0;
  bool first = true;
  auto check = [&](const RecordedEvent& ev) {
    uint64_t seq = ev.flags;  // the low 32 bits of the sequence number
    if (!first) {
      ASSERT_GT(seq, last);
    }
    first = false;
    last = seq;
    ASSERT_EQ(ev.words.size(), seq % 7);
    for (size_t i = 0; i < ev.words.size(); ++i) ASSERT_EQ(ev.words[i] & 0xff, i);
    ++seen;
  };
  while (!done) reg.drain(idx, check);
  producer.join();
  reg.drain(idx, check);
  EXPECT_EQ(seen + lost, kEvents);
  EXPECT_EQ(reg.lost(idx), lost);
}

// Signal handlers that record on the thread they interrupt, possibly inside the
// recorder: every record intact, every event read or counted lost.
std::atomic<ft_rec_ring*> g_ring{nullptr};
std::atomic<uint64_t> g_handler_events{0}, g_handler_lost{0};

void on_alarm(int) {
  ft_rec_ring* r = g_ring.load();
  uint64_t n = g_handler_events.fetch_add(1);
  if (produce(r, kRing, 9, 1000000 + n, 3) != 0) g_handler_lost.fetch_add(1);
}

TEST(RecorderRegion, SignalHandlersRecordingOnTheSameThreadAreSafe) {
  Mapped m(kRing);
  RecorderRegion reg = RecorderRegion::create(m.base, kRing, 0);
  uint32_t idx = *reg.add_thread(0x7f0000001000);
  ft_rec_ring* r = ft_rec_ring_at(reg.header(), idx);
  g_ring = r;
  struct sigaction sa {};
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  ASSERT_EQ(::sigaction(SIGPROF, &sa, nullptr), 0);
  // A high-resolution timer aimed at this thread (the producer).
  sigevent sev{};
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGPROF;
  sev._sigev_un._tid = ::gettid();  // sigev_notify_thread_id (glibc 2.36 spells it so)
  timer_t timer;
  ASSERT_EQ(::timer_create(CLOCK_MONOTONIC, &sev, &timer), 0);
  itimerspec every{{0, 20000}, {0, 20000}};
  ASSERT_EQ(::timer_settime(timer, 0, &every, nullptr), 0);
  std::atomic<bool> done{false};
  uint64_t seen_main = 0, seen_handler = 0, lost = 0;
  std::thread reader([&] {
    // The ring has one producing thread: the handler must run on it, not here.
    sigset_t prof;
    sigemptyset(&prof);
    sigaddset(&prof, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &prof, nullptr);
    auto check = [&](const RecordedEvent& ev) {
      if (ev.fn == 9) {
        expect_intact(ev, ev.tsc / 3);
        ++seen_handler;
      } else {
        expect_intact(ev, ev.tsc / 3);
        ++seen_main;
      }
    };
    while (!done) reg.drain(idx, check);
    reg.drain(idx, check);
  });
  // Until the handler has run often enough to have hit the recorder mid-record (or a
  // few seconds have passed: the assertion below then says so).
  uint64_t events = 0;
  for (auto start = std::chrono::steady_clock::now();
       (events < 300000 || g_handler_events.load() < 2000) && std::chrono::steady_clock::now() - start < std::chrono::seconds(5);
       ++events)
    if (produce(r, kRing, 3, events, static_cast<uint16_t>(events % 5)) != 0) ++lost;
  ::timer_delete(timer);
  done = true;
  reader.join();
  EXPECT_EQ(seen_main + lost, events);
  EXPECT_EQ(seen_handler + g_handler_lost.load(), g_handler_events.load());
  EXPECT_EQ(reg.lost(idx), lost + g_handler_lost.load());
  EXPECT_EQ(reg.corrupt(), 0u);
  // The timer did interrupt the producer: otherwise this test shows nothing.
  EXPECT_GE(g_handler_events.load(), 2000u);
}

}  // namespace
}  // namespace ft
