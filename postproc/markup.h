// Text from traces in XML and HTML output (the SVG flame graph, the HTML report).
//
// Names in traces are arbitrary bytes: C++ names hold < > &, file names may hold
// quotes, and nothing guarantees UTF-8. XML 1.0 allows neither most control characters
// nor ill-formed UTF-8, so escaping is not enough: each byte that is not part of a
// well-formed UTF-8 sequence, and each control character other than tab, becomes
// U+FFFD. The result is valid both as XML character data and inside a quoted
// attribute value, and as HTML text.
#pragma once

#include <string>
#include <string_view>

namespace ft::post {

// Appends `s` escaped (& < > " ') and made valid (see above).
void append_xml_escaped(std::string& out, std::string_view s);
std::string xml_escaped(std::string_view s);

// The longest prefix of `s` of at most `max_bytes` bytes that does not end inside a
// UTF-8 sequence.
std::string_view utf8_prefix(std::string_view s, size_t max_bytes);

}  // namespace ft::post
