/*
 * functracer call trees — how one thread's calls are laid out as text, the same way
 * in the live call log (the calltrace plugin without -o) and in functracer-postproc
 * tree:
 *
 *   main(0x1, 0x7ffd5b3c8e48) {
 *     puts("hello") = 6
 *     parse(0x1) {
 *       lex(0x1) <unwound: exception>
 *     } <unwound: exception>
 *   } = 0
 *
 * A call without callees is one line; one with callees opens a brace that closes with
 * its return value. Frames left without returning show "<unwound: REASON>". Notes
 * (signals, lost events, exec) are "<...>" lines at the depth where they happened.
 * With show_duration each finished call also shows its inclusive duration
 * ("<1.250 us>"); with min_duration_ns only calls that lasted at least that long are
 * shown (uftrace's --time-filter), which holds a call's lines back until it returns:
 * a callee never lasts longer than its caller, so a call that is kept keeps its
 * callers, and the whole kept subtree comes out when the outermost call returns.
 *
 * Each line may start with a prefix (a timestamp) given with the event that opens it.
 * A call may carry a suffix (where it was made, " [app.c:42]"): at the end of its line
 * when it has no callees, after its opening brace when it has.
 * The caller formats names and values; this file only lays them out.
 *
 * Why here: the calltrace plugin sees only include/functracer/, so the one layout the
 * plugin and the post-processor share lives in this header-only file (C++20, standard
 * library only).
 */
#ifndef FUNCTRACER_CALL_TREE_H
#define FUNCTRACER_CALL_TREE_H

#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ft {

// A duration as people read it: "850 ns", "1.250 us", "3.000 ms", "2.500 s".
inline std::string format_duration_ns(uint64_t ns) {
  char b[48];
  if (ns < 1000)
    std::snprintf(b, sizeof b, "%" PRIu64 " ns", ns);
  else if (ns < 1000'000)
    std::snprintf(b, sizeof b, "%" PRIu64 ".%03" PRIu64 " us", ns / 1000, ns % 1000);
  else if (ns < 1000'000'000)
    std::snprintf(b, sizeof b, "%" PRIu64 ".%03" PRIu64 " ms", ns / 1000'000, ns / 1000 % 1000);
  else
    std::snprintf(b, sizeof b, "%" PRIu64 ".%03" PRIu64 " s", ns / 1000'000'000, ns / 1000'000 % 1000);
  return b;
}

struct CallTreeStyle {
  bool show_duration = false;   // " <1.250 us>" after each finished call
  uint64_t min_duration_ns = 0; // 0: every call; else only calls lasting this long
};

// The layout of one thread's calls. Lines are handed to the sink without a newline.
class CallTreeLayout {
 public:
  using Sink = std::function<void(std::string_view line)>;

  CallTreeLayout(CallTreeStyle style, Sink sink) : style_(style), sink_(std::move(sink)) {}

  // A call at nesting `level` (0: outermost); `text` is "name(args)"; `site` the
  // suffix of its line (see above).
  void call(size_t level, std::string_view text, std::string_view prefix = {}, std::string_view site = {}) {
    open_brace();
    std::string line(prefix);
    line.append(2 * level, ' ');
    line += text;
    if (filtering()) {
      frames_.push_back(Frame{level, std::move(line), {}, std::string(site)});
    } else {
      open_ = std::move(line);
      open_site_ = site;
      line_open_ = true;
    }
    level_ = level + 1;
  }

  // The return of the call at `level`; `value` is the return value's text, empty for
  // none (void).
  void ret(size_t level, std::string_view value, uint64_t duration_ns, std::string_view prefix = {}) {
    std::string tail;
    if (!value.empty()) {
      tail = " = ";
      tail += value;
    }
    end(level, std::move(tail), duration_ns, prefix);
  }

  // The frame of the call at `level` was left without a return.
  void unwound(size_t level, std::string_view reason, uint64_t duration_ns, std::string_view prefix = {}) {
    std::string tail = " <unwound: ";
    tail += reason;
    tail += '>';
    end(level, std::move(tail), duration_ns, prefix);
  }

  // A line of its own ("<signal SIGSEGV>") at the current nesting.
  void note(std::string_view text, std::string_view prefix = {}) {
    open_brace();
    std::string line(prefix);
    line.append(2 * level_, ' ');
    line += text;
    put(std::move(line));
  }

  // Ends an open call line with " {" now rather than at the next event: for a log that
  // must show a call before anything else is printed.
  void open_brace() {
    if (!line_open_) return;
    line_open_ = false;
    put(std::move(open_) + " {" + open_site_);
  }

  // The thread is done: calls still held back (time filter) come out as they are.
  void finish() {
    open_brace();
    while (!frames_.empty()) {
      Frame f = std::move(frames_.back());
      frames_.pop_back();
      std::vector<std::string> lines;
      lines.push_back(std::move(f.line) + (f.body.empty() ? "" : " {") + f.site);
      for (auto& l : f.body) lines.push_back(std::move(l));
      for (auto& l : lines) put(std::move(l));
    }
  }

  size_t level() const { return level_; }

 private:
  struct Frame {
    size_t level;
    std::string line;               // the call line, without " {"
    std::vector<std::string> body;  // lines of kept callees and notes
    std::string site;               // the call's suffix
  };

  bool filtering() const { return style_.min_duration_ns > 0; }

  void end(size_t level, std::string tail, uint64_t duration_ns, std::string_view prefix) {
    if (style_.show_duration) tail += " <" + format_duration_ns(duration_ns) + ">";
    level_ = level;
    if (!filtering()) {
      std::string line;
      std::string site;
      if (line_open_) {
        line = std::move(open_);
        site = std::move(open_site_);
        line_open_ = false;
      } else {
        line.assign(prefix);
        line.append(2 * level, ' ');
        line += '}';
      }
      sink_(line + tail + site);
      return;
    }
    // Frames deeper than this one ended unseen: they count as not kept.
    while (!frames_.empty() && frames_.back().level > level) drop_frame();
    if (frames_.empty()) return;
    Frame f = std::move(frames_.back());
    frames_.pop_back();
    if (duration_ns < style_.min_duration_ns) {
      restore_notes(std::move(f.body));
      return;
    }
    if (f.body.empty()) {
      put(f.line + tail + f.site);
      return;
    }
    put(f.line + " {" + f.site);
    for (auto& l : f.body) put(std::move(l));
    std::string close(prefix);
    close.append(2 * level, ' ');
    put(close + '}' + tail);
  }

  void drop_frame() {
    Frame f = std::move(frames_.back());
    frames_.pop_back();
    restore_notes(std::move(f.body));
  }

  // A call not kept takes its callees with it (they were shorter) but not its notes.
  void restore_notes(std::vector<std::string> body) {
    for (auto& l : body) put(std::move(l));
  }

  void put(std::string line) {
    if (frames_.empty())
      sink_(line);
    else
      frames_.back().body.push_back(std::move(line));
  }

  CallTreeStyle style_;
  Sink sink_;
  bool line_open_ = false;  // a call line waits to learn whether it has callees
  std::string open_;
  std::string open_site_;
  size_t level_ = 0;
  std::vector<Frame> frames_;  // with min_duration_ns: calls not returned yet
};

}  // namespace ft

#endif  // FUNCTRACER_CALL_TREE_H
