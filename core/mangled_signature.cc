#include "core/mangled_signature.h"

#include <vector>

#include "core/c_prototype.h"

namespace ft {
namespace {

struct Split {
  std::string ret;                  // before the name, for template instances
  std::string qualified;            // "ns::Foo::bar"
  std::vector<std::string> params;  // as written
  bool qualified_member = false;    // const/volatile/ref-qualified
};

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

// Top-level pieces of s separated by sep (outside <>, () and []).
std::vector<std::string> split_top(std::string_view s, std::string_view sep) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '<' || c == '(' || c == '[') ++depth;
    else if (c == '>' || c == ')' || c == ']') --depth;
    else if (depth == 0 && s.substr(i, sep.size()) == sep) {
      out.push_back(std::string(s.substr(start, i - start)));
      start = i + sep.size();
      i += sep.size() - 1;
    }
  }
  out.push_back(std::string(s.substr(start)));
  return out;
}

std::optional<Split> split_name(std::string_view name) {
  Split out;
  name = name.substr(0, name.find('@'));
  while (name.ends_with("]")) {
    size_t open = name.rfind(" [clone ");
    if (open == std::string_view::npos) return std::nullopt;
    name = name.substr(0, open);
  }
  for (bool again = true; again;) {
    again = false;
    for (std::string_view q : {" const", " volatile", " &&", " &", " noexcept"}) {
      if (name.ends_with(q)) {
        name.remove_suffix(q.size());
        out.qualified_member = out.qualified_member || q != " noexcept";
        again = true;
      }
    }
  }
  if (!name.ends_with(")")) return std::nullopt;
  int depth = 0;
  size_t i = name.size();
  while (i > 0) {
    --i;
    if (name[i] == ')') ++depth;
    else if (name[i] == '(' && --depth == 0) break;
  }
  if (depth != 0 || i == 0) return std::nullopt;
  std::string_view prefix = name.substr(0, i);
  std::string_view list = name.substr(i + 1, name.size() - i - 2);
  // "int max<int>(int, int)": a template instance's return type comes first. The space
  // of "operator new" is part of the name.
  std::vector<std::string> words = split_top(prefix, " ");
  size_t first = 0;
  for (size_t w = 0; w + 1 < words.size(); ++w)
    if (!words[w].ends_with("operator")) first = w + 1;
  for (size_t w = 0; w < words.size(); ++w) {
    std::string& dst = w < first ? out.ret : out.qualified;
    if (!dst.empty()) dst += ' ';
    dst += words[w];
  }
  std::string params = trim(list);
  if (!params.empty() && params != "void")
    for (std::string& p : split_top(params, ",")) out.params.push_back(trim(p));
  return out;
}

std::string without_template_args(std::string_view s) {
  std::string out;
  int depth = 0;
  for (char c : s) {
    if (c == '<') ++depth;
    if (depth == 0) out += c;
    if (c == '>') --depth;
  }
  return out;
}

// "ns::Foo" when the function is named as one of Foo's constructors or destructors,
// or qualified like a member.
std::string class_of(const Split& s) {
  std::vector<std::string> parts = split_top(s.qualified, "::");
  if (parts.size() < 2) return "";
  std::string cls = s.qualified.substr(0, s.qualified.size() - parts.back().size() - 2);
  std::string last = without_template_args(parts.back());
  std::string owner = without_template_args(parts[parts.size() - 2]);
  if (s.qualified_member || last == owner || last == "~" + owner) return cls;
  return "";
}

}  // namespace

std::string class_named_by(std::string_view demangled) {
  auto s = split_name(demangled);
  return s ? class_of(*s) : std::string();
}

std::optional<Signature> mangled_signature(std::string_view demangled,
                                           const std::unordered_set<std::string>& classes) {
  auto s = split_name(demangled);
  if (!s || s->qualified.empty()) return std::nullopt;
  Signature sig;
  sig.returns_void = false;
  sig.ret.kind = ParamInfo::Kind::Other;  // unknown: shown raw
  if (!s->ret.empty()) {
    if (s->ret == "void") {
      sig.returns_void = true;
    } else if (auto r = parse_c_type(s->ret, true)) {
      sig.ret = *r;
    }
  }
  std::string cls = class_of(*s);
  {
    std::vector<std::string> parts = split_top(s->qualified, "::");
    std::string last = without_template_args(parts.back());
    std::string owner = parts.size() >= 2 ? without_template_args(parts[parts.size() - 2]) : "";
    if (!owner.empty() && (last == owner || last == "~" + owner)) sig.returns_void = true;  // no value
  }
  if (cls.empty()) {
    std::vector<std::string> parts = split_top(s->qualified, "::");
    if (parts.size() >= 2) {
      std::string owner = s->qualified.substr(0, s->qualified.size() - parts.back().size() - 2);
      if (classes.count(owner)) cls = owner;
    }
  }
  if (!cls.empty()) {
    ParamInfo self;
    self.name = "this";
    self.kind = ParamInfo::Kind::Pointer;
    self.size = 8;
    sig.params.push_back(self);
  }
  for (const std::string& p : s->params) {
    if (p == "...") break;
    auto t = parse_c_type(p, true);
    if (!t) return std::nullopt;
    sig.params.push_back(*t);
  }
  return sig;
}

}  // namespace ft
