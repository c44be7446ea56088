// The call model (postproc/call_model.h) that the calls, tree and other call reports
// are built on: calls matched with their returns or unwinds per thread, inclusive and
// self time, returns that never came, ends without a call, threads and processes that
// end with frames open, a clock going backwards.
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "postproc/call_model.h"
#include "postproc_fixture.h"

namespace ft::post {
namespace {

using test::rec;

struct Event {
  std::string what;  // "TID call f LLEVEL" or "TID end f return 5" / "TID end f unwound REASON"
  uint64_t inclusive = 0;
  uint64_t self = 0;
  bool operator==(const Event&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Event& e) {
  return os << "{" << e.what << ", " << e.inclusive << ", " << e.self << "}";
}

class RecordingObserver : public CallObserver {
 public:
  void on_call(int64_t tid, const Activation& a) override {
    events.push_back({std::to_string(tid) + " call " + a.function + " L" + std::to_string(a.level)});
  }
  void on_end(int64_t tid, const Activation& a, const ActivationEnd& end) override {
    std::string what = std::to_string(tid) + " end " + a.function;
    if (end.kind == EndKind::kReturn) {
      what += " return " + std::to_string(end.retval);
    } else {
      what += " unwound " + std::string(end.reason) + (end.implicit ? " (implicit)" : "");
    }
    events.push_back({what, end.inclusive_ns, end.self_ns});
  }
  std::vector<Event> events;
};

// A model fed the records of `lines`, finished at `end_ts`.
class ModelRun {
 public:
  ModelRun(std::initializer_list<const char*> lines, uint64_t end_ts) : model(observer) {
    for (const char* line : lines) model.feed(rec(line));
    model.finish(end_ts);
  }
  RecordingObserver observer;
  CallModel model;
};

TEST(CallModel, NestingAndSelfTime) {
  ModelRun run({"1 5 100 call function=\"a\" depth=0 args=[]",
                "2 5 110 call function=\"b\" depth=1 args=[]",
                "3 5 130 return function=\"b\" depth=1 retval=0x2",
                "4 5 140 call function=\"c\" depth=1 args=[]",
                "5 5 150 unwound function=\"c\" depth=1 reason=\"longjmp\"",
                "6 5 200 return function=\"a\" depth=0 retval=0x0"},
               200);
  std::vector<Event> expected = {
      {"5 call a L0"},           {"5 call b L1"}, {"5 end b return 2", 20, 20},
      {"5 call c L1"},           {"5 end c unwound longjmp", 10, 10},
      {"5 end a return 0", 100, 70},
  };
  EXPECT_EQ(run.observer.events, expected);
  EXPECT_EQ(run.model.missing_returns(), 0u);
  EXPECT_EQ(run.model.unmatched_ends(), 0u);
}

TEST(CallModel, MissingReturnsAndUnmatchedEnds) {
  ModelRun run({"1 5 100 return function=\"x\" depth=0 retval=0x0",  // before any call
                "2 5 100 call function=\"a\" depth=0 args=[]",
                "3 5 110 call function=\"b\" depth=1 args=[]",
                "4 5 120 call function=\"c\" depth=2 args=[]",
                // b's and c's returns are lost; the next depth-1 call closes both.
                "5 5 130 call function=\"d\" depth=1 args=[]",
                "6 5 135 return function=\"z\" depth=7 retval=0x0",  // no such frame
                "7 5 140 call function=\"e\" depth=2 args=[]",
                // d returns while e is still open: e is closed first.
                "8 5 150 return function=\"d\" depth=1 retval=0x1"},
               170);  // a is still open: closed at the last timestamp
  std::vector<Event> expected = {
      {"5 call a L0"},
      {"5 call b L1"},
      {"5 call c L2"},
      {"5 end c unwound missing return (implicit)", 10, 10},
      {"5 end b unwound missing return (implicit)", 20, 10},
      {"5 call d L1"},
      {"5 call e L2"},
      {"5 end e unwound missing return (implicit)", 10, 10},
      {"5 end d return 1", 20, 10},
      {"5 end a unwound end of trace (implicit)", 70, 30},
  };
  EXPECT_EQ(run.observer.events, expected);
  EXPECT_EQ(run.model.missing_returns(), 3u);
  EXPECT_EQ(run.model.unmatched_ends(), 2u);
}

TEST(CallModel, ThreadsAndProcessEnd) {
  ModelRun run({"1 1 10 call function=\"m\" depth=0 args=[]",
                "2 2 20 call function=\"t\" depth=0 args=[]",
                "3 2 30 call function=\"u\" depth=1 args=[]",
                "4 2 40 thread_exit status=0",
                "5 1 50 call function=\"n\" depth=1 args=[]",
                "6 1 60 killed signal=11 name=\"SIGSEGV\" address=0x0"},
               60);
  std::vector<Event> expected = {
      {"1 call m L0"},
      {"2 call t L0"},
      {"2 call u L1"},
      {"2 end u unwound exit (implicit)", 10, 10},
      {"2 end t unwound exit (implicit)", 20, 10},
      {"1 call n L1"},
      {"1 end n unwound killed (implicit)", 10, 10},
      {"1 end m unwound killed (implicit)", 50, 40},
  };
  EXPECT_EQ(run.observer.events, expected);
}

TEST(CallModel, ClockGoingBackwardsDoesNotUnderflow) {
  ModelRun run({"1 1 100 call function=\"a\" depth=0 args=[]",
                "2 1 120 call function=\"b\" depth=1 args=[]",
                "3 1 150 return function=\"b\" depth=1 retval=0x0",
                "4 1 90 return function=\"a\" depth=0 retval=0x0"},
               150);
  ASSERT_EQ(run.observer.events.size(), 4u);
  EXPECT_EQ(run.observer.events[3].inclusive, 0u);
  EXPECT_EQ(run.observer.events[3].self, 0u);
}

}  // namespace
}  // namespace ft::post
