// FlameGraph (postproc/flame_graph.h) and the markup escaping it uses: folded output,
// inclusive widths in the SVG, label clipping, escaping of C++ names and bad bytes.
#include "postproc/flame_graph.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "postproc/markup.h"

namespace ft::post {
namespace {

TEST(FlameGraph, FoldedLinesPerStackWithOwnValue) {
  FlameGraph g;
  g.add_stack(std::vector<std::string>{"main", "b"}, 5);
  g.add_stack(std::vector<std::string>{"main", "a", "x"}, 3);
  g.add_stack(std::vector<std::string>{"main", "a", "x"}, 4);
  g.add_stack(std::vector<std::string>{"main"}, 1);
  g.add_stack(std::vector<std::string>{"main", "c"}, 0);  // no line
  std::string out;
  g.write_folded(out);
  EXPECT_EQ(out, "main 1\nmain;a;x 7\nmain;b 5\n");
  EXPECT_EQ(g.total(), 13u);
}

TEST(FlameGraph, FoldedNamesCannotBreakTheFormat) {
  FlameGraph g;
  g.add_stack(std::vector<std::string>{"a;b", "c\nd"}, 2);
  std::string out;
  g.write_folded(out);
  EXPECT_EQ(out, "a,b;c d 2\n");
}

TEST(FlameGraph, DeepStacksDoNotRecurse) {
  FlameGraph g;
  std::vector<std::string> stack(50000, "f");
  g.add_stack(stack, 1);
  std::string out;
  g.write_folded(out);
  EXPECT_EQ(out.size(), 50000u * 2 - 1 + 3);
}

TEST(FlameGraph, SvgWidthsAreInclusiveValues) {
  FlameGraph g;
  g.add_stack(std::vector<std::string>{"main", "a"}, 300);
  g.add_stack(std::vector<std::string>{"main", "b"}, 100);
  g.add_stack(std::vector<std::string>{"std::map<int, int>::operator[]&"}, 600);
  std::string svg;
  FlameGraph::SvgOptions o;
  o.id = "t1";
  g.write_svg(svg, o);
  // plot width 1180: main holds 400 of 1000
  EXPECT_NE(svg.find("data-o=\"0\" data-v=\"400\" data-d=\"1\"><title>main (400, 40.00%)</title>"
                     "<rect x=\"10.00\" y=\"56\" width=\"472.00\""),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("<title>std::map&lt;int, int&gt;::operator[]&amp; (600, 60.00%)</title>"),
            std::string::npos);
  EXPECT_EQ(svg.find("<title>std::map<"), std::string::npos);
  EXPECT_NE(svg.find("document.getElementById(\"t1\")"), std::string::npos);
  EXPECT_EQ(svg.find("@ID@"), std::string::npos);
}

TEST(FlameGraph, TinyFramesAreLeftOut) {
  FlameGraph g;
  g.add_stack(std::vector<std::string>{"big"}, 1000000);
  g.add_stack(std::vector<std::string>{"tiny"}, 1);
  std::string svg;
  g.write_svg(svg, {});
  EXPECT_NE(svg.find("<title>big"), std::string::npos);
  EXPECT_EQ(svg.find("<title>tiny"), std::string::npos);
}

TEST(FlameGraph, LabelsAreClipped) {
  EXPECT_EQ(flame_label("main", 100), "main");
  EXPECT_EQ(flame_label("a_rather_long_name", 6 + 7.2 * 6), "a_ra..");
  EXPECT_EQ(flame_label("main", 20), "");
  EXPECT_EQ(flame_label("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 6 + 7.2 * 5), "\xc3\xa9..");
}

TEST(Markup, EscapesAndReplacesWhatXmlForbids) {
  EXPECT_EQ(xml_escaped("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
  EXPECT_EQ(xml_escaped("\x01x\tz"), "\xef\xbf\xbdx\tz");
  EXPECT_EQ(xml_escaped("\xff\xc3\xa9\xc3"), "\xef\xbf\xbd\xc3\xa9\xef\xbf\xbd");
  EXPECT_EQ(xml_escaped("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // surrogate
  EXPECT_EQ(utf8_prefix("\xc3\xa9\xc3\xa9", 3), "\xc3\xa9");
}

}  // namespace
}  // namespace ft::post
