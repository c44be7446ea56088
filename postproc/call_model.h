// CallModel: rebuilds the call stacks of every thread of a traced process from its
// call, return and unwound records, and tells an observer when each activation starts
// and ends, with its inclusive and self time. The calls and tree reports are observers.
//
// The engine writes, per thread, calls and their return/unwound records properly
// nested by depth (doc/trace-format.md). The model still copes with traces that do
// not hold to that, because traces get cut short and events get lost:
//  - a call at depth d while frames at depth >= d are open closes those frames first
//    (reason "missing return");
//  - a return/unwound for depth d closes the open frames above the frame at depth d
//    ("missing return"); one with no open frame at depth d is counted and ignored;
//  - thread_exit closes the thread's open frames ("exit"), exit/killed/exec/detach
//    close every thread's open frames ("exit", "killed", "exec", "detach");
//  - at the end of the file, open frames are closed at the last timestamp seen in
//    the file ("end of trace").
// Frames closed this way are reported as unwound with ActivationEnd::implicit set.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "common/trace_record.h"
#include "functracer/schema.h"
#include "postproc/trace_reader.h"

namespace ft::post {

inline constexpr size_t kArgRegisters = schema::kArgRegisters;

struct Activation {
  std::string function;  // mangled name, as recorded
  uint64_t address = 0;
  int64_t depth = 0;     // as recorded
  size_t level = 0;      // position on the model's stack for the thread, 0 = outermost
  uint64_t seq = 0;
  uint64_t call_ts = 0;
  HexList args;
  std::array<std::optional<std::string>, kArgRegisters> strings;  // str0..str5
  std::array<std::optional<std::string>, kArgRegisters> structs;  // struct0..struct5, as shown
  std::optional<int64_t> nargs;
  std::optional<std::string> types;  // the call record's "types" field (value_types.h)
  HexList fargs;                     // floating-point argument registers, if recorded
  std::optional<uint64_t> callsite;  // the return address it was called with, if recorded
  uint64_t children_ns = 0;  // inclusive time of the direct callees that have ended
  uint64_t children = 0;     // number of direct callees that have ended
};

enum class EndKind { kReturn, kUnwound };

struct ActivationEnd {
  EndKind kind = EndKind::kReturn;
  uint64_t ts = 0;
  uint64_t retval = 0;        // kReturn
  std::optional<uint64_t> fretval;  // kReturn: the floating-point return register, if recorded
  std::optional<std::string_view> retstr;  // kReturn: the string a char * return points to, if
                                           // recorded; valid only during CallObserver::on_end
  std::string_view reason;    // kUnwound: "longjmp", "exception", "exit", or a model reason;
                              // valid only during CallObserver::on_end
  bool implicit = false;      // no record ended it: the model closed it
  uint64_t inclusive_ns = 0;  // end ts - call ts (0 if the clock went backwards)
  uint64_t self_ns = 0;       // inclusive_ns - children_ns (clamped at 0)
};

class CallObserver {
 public:
  virtual ~CallObserver() = default;
  virtual void begin_process(const TraceReader& /*reader*/) {}
  // Every record of the file, before the model applies it.
  virtual void on_record(const TraceRecord& /*record*/) {}
  virtual void on_call(int64_t /*tid*/, const Activation& /*a*/) {}
  // The activation is still the top of its stack when this is called.
  virtual void on_end(int64_t /*tid*/, const Activation& /*a*/, const ActivationEnd& /*end*/) {}
  virtual void end_process() {}
};

class CallModel {
 public:
  explicit CallModel(CallObserver& observer) : observer_(observer) {}

  void feed(const TraceRecord& r);
  // Closes every open frame at `last_ts` ("end of trace") and forgets the threads.
  void finish(uint64_t last_ts);

  // Return/unwound records that matched no open frame.
  uint64_t unmatched_ends() const { return unmatched_ends_; }
  // Frames closed with reason "missing return".
  uint64_t missing_returns() const { return missing_returns_; }

 private:
  struct ThreadState {
    int64_t tid = 0;
    std::vector<Activation> stack;
  };
  ThreadState& thread(int64_t tid);
  void close_top(ThreadState& t, EndKind kind, uint64_t ts, uint64_t retval, std::optional<uint64_t> fretval,
                 std::string_view reason, bool implicit, std::optional<std::string_view> retstr = std::nullopt);
  void close_all(ThreadState& t, uint64_t ts, std::string_view reason);
  void close_all_threads(uint64_t ts, std::string_view reason);
  void on_call(const TraceRecord& r);
  void on_end(const TraceRecord& r, EndKind kind);

  CallObserver& observer_;
  std::vector<ThreadState> threads_;  // in order of first appearance
  std::unordered_map<int64_t, size_t> index_;
  uint64_t unmatched_ends_ = 0;
  uint64_t missing_returns_ = 0;
};

// Reads each trace in turn through a CallModel. Fails only when a file cannot be
// opened or is not a trace; problems inside a trace are warnings.
Status replay_traces(const std::vector<std::string>& paths, CallObserver& observer,
                     Diagnostics& diag);

}  // namespace ft::post
