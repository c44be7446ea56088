// CallGraph: the traced functions of a set of traces and the caller -> callee arcs
// between them, with counts and times, built from CallModel. The profile formats for
// other tools (callgrind, gprof) are written from it.
//
// A function is the code at a call record's entry address, identified across
// processes by its position-independent Symbolizer::CodeKey (module file and
// link-time address) and its mangled name; processes that mapped the same module at
// different addresses share their functions.
//
// Per function:
//   calls         activations (call records)
//   self_ns       per activation, inclusive time minus that of its traced direct
//                 callees, summed over all activations (CallModel's self time)
//   inclusive_ns  inclusive time of the outermost activations only: an activation made
//                 while another one of the same function is open on the same thread
//                 lies inside that one's time (doc/trace-format.md §5, total_ns)
// Per arc (caller function -> callee function at one call site, the caller being the
// activation right below the callee on its thread's stack, or kRoot for an outermost
// call). The call site is the call record's callsite, a return address, identified
// across processes by its CodeKey like the functions. It counts only when it lies in
// the caller's ELF symbol (at callsite - 1): an untraced function between the two
// made the call otherwise. Calls without a site that counts (older traces record
// none, outermost calls, calls through untraced functions) make one arc per caller
// and callee, without a site.
//   calls         how often the caller called the callee
//   inclusive_ns  the inclusive time of those calls that were outermost activations of
//                 the callee; a recursive call (the callee already open on the thread)
//                 adds its count but no time, as callgrind does. So a function's
//                 inclusive time is the sum of the times of the arcs into it, and no
//                 time is counted twice however the recursion goes (direct, or mutual
//                 through other functions).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "postproc/call_model.h"
#include "postproc/symbolizer.h"

namespace ft::post {

class CallGraph : public CallObserver {
 public:
  static constexpr uint32_t kRoot = UINT32_MAX;  // the caller of an outermost call

  struct Function {
    std::string mangled;
    Symbolizer::Location location;  // the entry address in the first process that called it
    Symbolizer::CodeKey key;
    uint64_t calls = 0;
    uint64_t self_ns = 0;
    uint64_t inclusive_ns = 0;
  };
  struct Arc {
    uint32_t caller = kRoot;
    uint32_t callee = 0;
    // The return address of the calls, in the first process that made them (resolve
    // it as a return address); none: see above.
    std::optional<Symbolizer::Location> site;
    uint64_t calls = 0;
    uint64_t inclusive_ns = 0;
  };
  // A traced process, in the order the traces were read.
  struct Process {
    int64_t pid = 0;
    std::string exe;      // the header's exe
    std::string cmdline;  // the header's cmdline
  };

  // Only thread `tid` when given.
  CallGraph(Symbolizer& symbolizer, std::optional<int64_t> tid)
      : symbolizer_(symbolizer), tid_(tid) {}

  void begin_process(const TraceReader& reader) override;
  void on_record(const TraceRecord& record) override;
  void on_call(int64_t tid, const Activation& a) override;
  void on_end(int64_t tid, const Activation& a, const ActivationEnd& end) override;
  void end_process() override;

  const std::vector<Function>& functions() const { return functions_; }
  // Sorted by (caller, callee, call site); kRoot callers last.
  std::vector<Arc> arcs() const;
  const std::vector<Process>& processes() const { return processes_; }
  // Sum of self_ns over every function: the time inside traced functions.
  uint64_t total_self_ns() const;

 private:
  struct ThreadState {
    std::vector<uint32_t> stack;   // function ids of the open activations
    std::vector<uint32_t> active;  // per function id: open activations
  };
  uint32_t function_for(const Activation& a);
  struct Site {
    Symbolizer::Location location;
    Symbolizer::CodeKey key;
    Symbolizer::CodeKey symbol;  // the ELF symbol it lies in (file kNone: none)
  };
  const Site& site_for(uint64_t callsite);
  // (caller, callee, has a site, the site's key)
  using ArcKey = std::tuple<uint32_t, uint32_t, bool, Symbolizer::CodeKey>;

  Symbolizer& symbolizer_;
  std::optional<int64_t> tid_;
  std::vector<Function> functions_;
  std::map<std::pair<Symbolizer::CodeKey, std::string>, uint32_t> index_;
  std::unordered_map<uint64_t, uint32_t> by_address_;  // this process, current module map
  std::unordered_map<uint64_t, Site> sites_;           // this process, current module map
  std::map<ArcKey, Arc> arcs_;
  std::unordered_map<int64_t, ThreadState> threads_;
  std::vector<Process> processes_;
};

// Reads the traces through a CallGraph (replay_traces).
Status build_call_graph(const std::vector<std::string>& paths, CallGraph& graph,
                        Diagnostics& diag);

}  // namespace ft::post
