// The flamegraph report: the traces as stacks with values, as folded stacks (the
// input of flamegraph.pl, speedscope, inferno) or, with --svg, as an interactive SVG
// flame graph (flame_graph.h).
//
// Metrics (--metric), by kind of trace:
//  - call records (calltrace): stacks of traced functions per thread, rebuilt by the
//    CallModel (call_model.h), outermost traced call first, demangled names.
//      time   (the default when a trace was recorded with calltrace) the self time in
//             ns of each stack, so that a frame's width is its inclusive time;
//      calls  the number of activations of each stack.
//    Stacks of every thread and process are merged; --tid keeps one thread.
//  - heap records (memtrace): the backtrace of each allocation, resolved like the
//    leaks report's (demangled, inlined code as frames of its own), outermost first,
//    with the allocating function (malloc, operator new(unsigned long), ...) as the
//    leaf. Backtraces that point at the same code in several processes are one stack
//    (site_groups.h). Unresolved frames are "MODULE+0xOFFSET" (the module's file name
//    and link-time address) or the address.
//      allocated    (the default otherwise) bytes of every allocation;
//      allocations  number of allocations;
//      leaked       bytes still live at the end (the leaks report's leaks);
//      peak         bytes live at each process's peak (the peak report's), summed over
//                   the processes;
//      temporary    bytes of temporary allocations (the temporary report's).
//    Block filters (--tid, --size, --from, --to) and group filters (--function,
//    --suppressions) select as in the leaks report.
// A metric that needs records the traces were not recorded with (time of a
// memtrace-only trace) is an error.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "postproc/flame_graph.h"
#include "postproc/report.h"

namespace ft::post {

enum class FlameMetric { kTime, kCalls, kAllocated, kAllocations, kLeaked, kPeak, kTemporary };

// The names accepted by --metric, in the order of FlameMetric.
inline constexpr std::string_view kFlameMetricNames[] = {
    "time", "calls", "allocated", "allocations", "leaked", "peak", "temporary"};
std::optional<FlameMetric> parse_flame_metric(std::string_view name);
std::string_view flame_metric_name(FlameMetric metric);
bool is_heap_metric(FlameMetric metric);
// "1.250 ms", "4096 bytes", "3 calls" ...
std::string format_flame_value(FlameMetric metric, uint64_t value);

// The metric of --metric, or the default for the traces; an error when the traces
// hold no records for it.
Result<FlameMetric> choose_flame_metric(const ReportOptions& options, Diagnostics& diag);

// One flame graph per metric, all heap metrics or all call metrics, from one replay
// of the traces.
Result<std::vector<FlameGraph>> build_flame_graphs(const ReportOptions& options,
                                                   std::span<const FlameMetric> metrics,
                                                   Diagnostics& diag);

struct HeapStacks;
// The heap metrics' graphs of stacks already collected (heap_stacks.h).
std::vector<FlameGraph> heap_flame_graphs(const HeapStacks& heap, std::span<const FlameMetric> metrics);

Status report_flamegraph(const ReportOptions& options, Output& out, Diagnostics& diag);

}  // namespace ft::post
