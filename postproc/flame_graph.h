// FlameGraph: a tree of named frames with values, and its two renderings:
//
//  - folded stacks, the input format of Brendan Gregg's flamegraph.pl, speedscope,
//    inferno and others: one line per stack that has a value of its own, frames
//    outermost first separated by ';', a space and the integer value
//    ("main;parse;malloc 4096"). A frame's width in a flame graph is the sum of the
//    values of the stacks that go through it;
//  - an interactive SVG flame graph, self-contained (no fonts, scripts or styles from
//    elsewhere): the root ("all") at the bottom spanning the whole width, each frame a
//    rectangle above its caller whose width is proportional to its value (its own plus
//    its callees'), siblings in name order. Each frame has a tooltip (<title>) with its
//    name, value and share of the total. Clicking a frame zooms into it (its subtree
//    widened to the full width, its callers greyed below it); "Reset Zoom" undoes it.
//    "Search" asks for a regular expression and highlights the frames whose names match
//    it, with the share of the total they cover ("Matched: 12.5%"); a URL fragment
//    "#search=REGEX" does the same when the page opens. svg.flameResize(WIDTH) lays the
//    graph out again for another width.
//
// The SVG is an element that can stand alone (an .svg file) or be inlined into an HTML
// page, several in one page: every id is prefixed with SvgOptions::id, the style rules
// are scoped to that id, and the script finds its own <svg> by id. Colours are a hash
// of the frame's name (the same function always has the same colour), in the warm
// palette of flamegraph.pl. Labels are clipped to the rectangle (a monospace font of
// known advance width makes that exact), names are escaped (C++ names hold < > &).
// Frames narrower than 0.1 pixel are left out, as flamegraph.pl does: they would not
// be seen, and a trace of millions of distinct stacks would make a file too large for
// a browser. Zooming into a frame does not bring back the frames left out.
//
// A name can hold any character except ';' and newline, which would break the folded
// format: folded() writes them as ',' and ' '.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ft::post {

class FlameGraph {
 public:
  using NodeId = uint32_t;
  static constexpr NodeId kRoot = 0;

  FlameGraph();

  // The frame `name` called from `parent`, created the first time.
  NodeId child(NodeId parent, std::string_view name);
  // Adds to the node's own value (its stack's line in the folded output).
  void add(NodeId node, uint64_t value) { nodes_[node].self += value; }
  // Adds `value` to the stack of `frames`, outermost first.
  void add_stack(std::span<const std::string> frames, uint64_t value);

  // Sum of every value added.
  uint64_t total() const;
  size_t size() const { return nodes_.size(); }

  // Folded stacks, one line per node with a value of its own, in depth-first order
  // with siblings sorted by name.
  void write_folded(std::string& out) const;

  struct SvgOptions {
    std::string id = "flamegraph";  // prefix of every id; must start with a letter
    std::string title = "Flame Graph";
    // How a value is shown in tooltips: "4096 bytes", "1.250 ms".
    std::function<std::string(uint64_t)> format_value;
    uint32_t width = 1200;
    bool xml_declaration = true;  // false when the SVG is inlined into HTML
    // Inlined into HTML: the graph takes the width of its parent element when the page
    // loads, when the window is resized and when svg.flameResize() is called (a tab
    // made visible), the layout recomputed for that width.
    bool fit_parent = false;
  };
  void write_svg(std::string& out, const SvgOptions& options) const;

  // Layout constants of the SVG (tests and the HTML page use them).
  static constexpr double kPad = 10;         // left and right margin
  static constexpr double kFrameHeight = 16;
  static constexpr double kTop = 40;         // title and buttons
  static constexpr double kBottom = 30;      // details line
  static constexpr double kCharWidth = 7.2;  // advance of the 12px monospace font
  static constexpr double kMinWidth = 0.1;

 private:
  struct Node {
    std::string name;
    NodeId parent = kRoot;
    uint32_t depth = 0;
    uint64_t self = 0;
    std::vector<NodeId> children;
  };
  // Inclusive values, and children sorted by name.
  std::vector<uint64_t> inclusive() const;
  std::vector<NodeId> sorted_children(NodeId id) const;

  std::vector<Node> nodes_;
  std::unordered_map<std::string, NodeId> index_;  // parent id bytes + name
};

// The label of a frame `width` pixels wide: the name, or its start and "..", or
// nothing when not even three characters fit.
std::string flame_label(std::string_view name, double width);

}  // namespace ft::post
