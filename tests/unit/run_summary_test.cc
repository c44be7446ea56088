// RunSummary's lines, the end-of-run summary on stderr: per process its events and
// trace file, the total, what could not be traced (every untraced function, named,
// and lost events) and the command that reads the traces.
#include "core/run_summary.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "core/event_reporter.h"

namespace {

bool has(const std::vector<std::string>& lines, const std::string& want) {
  for (const std::string& l : lines)
    if (l == want) return true;
  return false;
}

bool any_starts(const std::vector<std::string>& lines, const std::string& prefix) {
  for (const std::string& l : lines)
    if (l.rfind(prefix, 0) == 0) return true;
  return false;
}

TEST(RunSummary, SizesForPeople) {
  EXPECT_EQ(ft::human_size(0), "0 B");
  EXPECT_EQ(ft::human_size(1023), "1023 B");
  EXPECT_EQ(ft::human_size(1024), "1.0 KiB");
  EXPECT_EQ(ft::human_size(1536), "1.5 KiB");
  EXPECT_EQ(ft::human_size(5u << 20), "5.0 MiB");
}

TEST(RunSummary, ProcessesFilesAndTheCommand) {
  ft::RunSummary s;
  s.process(10, "/bin/sh");
  s.process(11, "/bin/sh");
  s.process(11, "/usr/bin/ls");  // exec'd
  for (int i = 0; i < 3; ++i) s.event(10);
  s.event(11);
  s.trace_closed(10, "t/sh.10.trace.zst", 4, 2048);
  s.trace_closed(11, "t/ls.11.trace.zst", 2, 100);
  ft::TracerStats st;
  st.calls = 2;
  st.returns = 2;
  auto lines = s.lines(st, "t", "memtrace:log", {});
  EXPECT_TRUE(has(lines, "sh [10]: 3 events, t/sh.10.trace.zst (4 records, 2.0 KiB)"));
  EXPECT_TRUE(has(lines, "ls [11]: 1 event, t/ls.11.trace.zst (2 records, 100 B)"));
  EXPECT_TRUE(has(lines, "2 processes traced, 4 events; 2 trace files (6 records, 2.1 KiB) in t"));
  EXPECT_TRUE(has(lines, "to read the traces: functracer-postproc leaks t"));
  EXPECT_FALSE(any_starts(lines, "not traced:"));
  // A directory a shell must not split.
  lines = s.lines(st, "my traces", "calltrace", {});
  EXPECT_TRUE(has(lines, "to read the traces: functracer-postproc calls 'my traces'"));
  // Without -o: no files, no command.
  ft::RunSummary bare;
  bare.process(7, "/bin/true");
  lines = bare.lines(st, "", "memtrace", {});
  EXPECT_EQ(lines.size(), 2u);
  EXPECT_FALSE(any_starts(lines, "to read the traces"));
}

// A trace cut by a write error is told as the file is: the records it holds, that it
// is cut and why, what was not written; a file removed because nothing could be
// written is named as such, and with no file left there is no command to read them.
TEST(RunSummary, TracesAWriteErrorCutOrPrevented) {
  ft::TracerStats st;
  ft::RunSummary s;
  s.process(10, "/bin/prog");
  for (int i = 0; i < 5; ++i) s.event(10);
  EXPECT_FALSE(s.incomplete());
  s.trace_closed(10, ft::TraceOutcome{"t/prog.10.trace.zst", 6000010, 185012, 2 << 20, ENOSPC, true});
  EXPECT_TRUE(s.incomplete());
  auto lines = s.lines(st, "t", "memtrace", {});
  EXPECT_TRUE(has(lines, "prog [10]: 5 events, t/prog.10.trace.zst (185012 records, 2.0 MiB; cut short: No space "
                         "left on device, 5814998 records not written)"));
  EXPECT_TRUE(has(lines, "1 process traced, 0 events; 1 trace file (185012 records, 2.0 MiB) in t; incomplete: "
                         "5814998 records not written (No space left on device)"));
  EXPECT_TRUE(has(lines, "to read the traces: functracer-postproc leaks t"));  // what it holds reads

  ft::RunSummary full;
  full.process(11, "/bin/prog");
  full.event(11);
  full.trace_closed(11, ft::TraceOutcome{"t/prog.11.trace.zst", 10010, 0, 0, ENOSPC, false});
  EXPECT_TRUE(full.incomplete());
  lines = full.lines(st, "t", "memtrace", {});
  EXPECT_TRUE(has(lines, "prog [11]: 1 event, no trace file (t/prog.11.trace.zst: No space left on device; nothing "
                         "could be written, removed)"));
  EXPECT_TRUE(has(lines, "1 process traced, 0 events; no trace file in t; incomplete: 10010 records not written (No "
                         "space left on device)"));
  EXPECT_FALSE(any_starts(lines, "to read the traces"));
}

TEST(RunSummary, WhatCouldNotBeTraced) {
  ft::RunSummary s;
  s.process(5, "/bin/prog");
  ft::TracerStats st;
  // Untraced functions are named whatever made them so (st.refused counts only some).
  auto lines = s.lines(st, "", "calltrace", {"time", "gettimeofday"});
  EXPECT_TRUE(has(lines, "not traced: 2 functions (time, gettimeofday; their calls are missing, see the lines above)"));
  std::vector<std::string> many = {"a", "b", "c", "d", "e", "f", "g"};
  lines = s.lines(st, "", "calltrace", many);
  EXPECT_TRUE(has(lines, "not traced: 7 functions (a, b, c, d, e, ...; their calls are missing, see the lines above)"));
  s.lost(3);
  lines = s.lines(st, "", "calltrace", {"time"});
  EXPECT_TRUE(has(lines, "not traced: 1 function (time; their calls are missing, see the lines above); 3 events lost "
                         "(see the trace's lost records)"));
  lines = s.lines(st, "", "calltrace", {});
  EXPECT_TRUE(has(lines, "not traced: 3 events lost (see the trace's lost records)"));
}

}  // namespace
