#include "core/c_prototype.h"

#include <cctype>
#include <optional>

#include "functracer/symbolic_values.h"

namespace ft {
namespace {

using Kind = ParamInfo::Kind;

struct Token {
  enum class Type { Ident, Punct, Ellipsis, Number } type;
  std::string text;
};

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// C++ names glue "::" and template argument lists into one identifier.
Result<std::vector<Token>> tokenize(std::string_view s, bool cxx) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (ident_start(c) || (cxx && c == ':' && s.substr(i, 2) == "::")) {
      size_t b = i;
      for (;;) {
        while (i < s.size() && ident_char(s[i])) ++i;
        if (!cxx) break;
        if (i < s.size() && s[i] == '<') {
          int depth = 0;
          for (; i < s.size(); ++i) {
            if (s[i] == '<') ++depth;
            if (s[i] == '>' && --depth == 0) break;
          }
          if (i == s.size()) return Error::msg("unbalanced '<' in '" + std::string(s) + "'");
          ++i;
        }
        if (s.substr(i, 2) != "::") break;
        i += 2;
      }
      out.push_back({Token::Type::Ident, std::string(s.substr(b, i - b))});
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t b = i;
      while (i < s.size() && std::isalnum(static_cast<unsigned char>(s[i]))) ++i;
      out.push_back({Token::Type::Number, std::string(s.substr(b, i - b))});
    } else if (s.substr(i, 3) == "...") {
      out.push_back({Token::Type::Ellipsis, "..."});
      i += 3;
    } else if (std::string_view("*()[],;&").find(c) != std::string_view::npos) {
      out.push_back({Token::Type::Punct, std::string(1, c)});
      ++i;
    } else {
      return Error::msg(std::string("unexpected '") + c + "'");
    }
  }
  return out;
}

bool is_punct(const Token& t, char c) { return t.type == Token::Type::Punct && t.text[0] == c; }

bool is_qualifier(std::string_view w) {
  return w == "const" || w == "volatile" || w == "restrict" || w == "__restrict" || w == "__restrict__" ||
         w == "register" || w == "__const";
}
bool is_base_word(std::string_view w) {
  return w == "void" || w == "char" || w == "short" || w == "int" || w == "long" || w == "signed" ||
         w == "unsigned" || w == "float" || w == "double" || w == "_Bool" || w == "bool" || w == "__int128";
}
bool is_tag_word(std::string_view w) { return w == "struct" || w == "union" || w == "enum" || w == "class"; }
bool is_keyword(std::string_view w) { return is_qualifier(w) || is_base_word(w) || is_tag_word(w); }

ParamInfo integer(int size, bool is_signed) {
  ParamInfo p;
  p.kind = Kind::Integer;
  p.size = size;
  p.is_signed = is_signed;
  return p;
}

// Typedefs of the C library and C++ spellings of the same types (LP64).
std::optional<ParamInfo> typedef_type(std::string_view w) {
  struct Td {
    const char* name;
    int size;
    bool is_signed;
  };
  static constexpr Td kTypedefs[] = {
      {"size_t", 8, false},      {"ssize_t", 8, true},       {"off_t", 8, true},        {"off64_t", 8, true},
      {"loff_t", 8, true},       {"pid_t", 4, true},         {"uid_t", 4, false},       {"gid_t", 4, false},
      {"mode_t", 4, false},      {"dev_t", 8, false},        {"ino_t", 8, false},       {"nlink_t", 8, false},
      {"time_t", 8, true},       {"clock_t", 8, true},       {"suseconds_t", 8, true},  {"useconds_t", 4, false},
      {"socklen_t", 4, false},   {"int8_t", 1, true},        {"uint8_t", 1, false},     {"int16_t", 2, true},
      {"uint16_t", 2, false},    {"int32_t", 4, true},       {"uint32_t", 4, false},    {"int64_t", 8, true},
      {"uint64_t", 8, false},    {"intptr_t", 8, true},      {"uintptr_t", 8, false},   {"ptrdiff_t", 8, true},
      {"intmax_t", 8, true},     {"uintmax_t", 8, false},    {"clockid_t", 4, true},    {"wchar_t", 4, true},
      {"wint_t", 4, false},      {"key_t", 4, true},         {"id_t", 4, false},        {"in_addr_t", 4, false},
      {"in_port_t", 2, false},   {"sa_family_t", 2, false},  {"nfds_t", 8, false},      {"sig_atomic_t", 4, true},
      {"pthread_t", 8, false},   {"rlim_t", 8, false},       {"blksize_t", 8, true},    {"blkcnt_t", 8, true},
      {"char8_t", 1, false},     {"char16_t", 2, false},     {"char32_t", 4, false},    {"std::size_t", 8, false},
      {"std::ptrdiff_t", 8, true}, {"std::byte", 1, false},
  };
  for (const Td& t : kTypedefs)
    if (w == t.name) return integer(t.size, t.is_signed);
  if (w == "locale_t" || w == "va_list" || w == "std::nullptr_t" || w == "decltype(nullptr)") {
    ParamInfo p;
    p.kind = Kind::Pointer;
    p.size = 8;
    return p;
  }
  return std::nullopt;
}

// A type without its name: kind, size, signedness; nullopt for void.
struct TypeResult {
  bool is_void = false;
  ParamInfo info;
};

Result<TypeResult> type_of(const std::vector<Token>& toks, bool cxx, const std::string& shown) {
  auto bad = [&](const std::string& why) { return Error::msg(why + " in '" + shown + "'"); };
  TypeResult r;
  // A function pointer, "void (*cb)(int)" or "int (*)(int)"; a pointer to a member
  // function (two registers' worth) is something else.
  for (size_t i = 0; i + 1 < toks.size(); ++i)
    if (is_punct(toks[i], '(')) {
      bool member = toks[i + 1].type == Token::Type::Ident && toks[i + 1].text.ends_with("::");
      if (!is_punct(toks[i + 1], '*') && !is_punct(toks[i + 1], '&') && !member)
        return bad("unexpected '('");
      r.info.kind = member ? Kind::Other : Kind::Pointer;
      r.info.size = member ? 16 : 8;
      return r;
    }
  int pointers = 0, references = 0, longs = 0, words = 0;
  bool is_unsigned = false, is_signed_word = false, has_char = false, has_short = false, has_int = false;
  bool has_float = false, has_double = false, has_void = false, has_bool = false, has_int128 = false;
  std::string tag, name;
  for (size_t i = 0; i < toks.size(); ++i) {
    const Token& t = toks[i];
    if (is_punct(t, '*')) {
      ++pointers;
    } else if (is_punct(t, '&')) {
      ++references;
    } else if (is_punct(t, '[')) {
      ++pointers;  // an array parameter is a pointer
      while (i < toks.size() && !is_punct(toks[i], ']')) ++i;
      if (i == toks.size()) return bad("missing ']'");
    } else if (t.type != Token::Type::Ident) {
      return bad("unexpected '" + t.text + "'");
    } else if (is_qualifier(t.text)) {
      continue;
    } else if (is_tag_word(t.text)) {
      if (i + 1 >= toks.size() || toks[i + 1].type != Token::Type::Ident) return bad("'" + t.text + "' without a name");
      tag = t.text;
      name = toks[++i].text;
      ++words;
    } else if (is_base_word(t.text)) {
      ++words;
      const std::string& w = t.text;
      if (w == "unsigned") is_unsigned = true;
      else if (w == "signed") is_signed_word = true;
      else if (w == "char") has_char = true;
      else if (w == "short") has_short = true;
      else if (w == "int") has_int = true;
      else if (w == "long") ++longs;
      else if (w == "float") has_float = true;
      else if (w == "double") has_double = true;
      else if (w == "void") has_void = true;
      else if (w == "__int128") has_int128 = true;
      else has_bool = true;
    } else {
      if (!name.empty()) return bad("two type names, '" + name + "' and '" + t.text + "'");
      name = t.text;
      ++words;
    }
  }
  if (words == 0) return bad("no type");
  if (!name.empty() && words > 1 && tag.empty()) return bad("'" + name + "' mixed with other type words");
  if (references > 0) {
    r.info.kind = Kind::Pointer;
    r.info.size = 8;
    return r;
  }
  if (pointers > 0) {
    r.info.kind = pointers == 1 && has_char && tag.empty() && name.empty() ? Kind::String : Kind::Pointer;
    r.info.size = 8;
    return r;
  }
  if (!tag.empty()) {
    if (tag == "enum") {
      r.info = integer(4, true);
    } else {
      r.info.kind = Kind::Other;  // a struct by value: its registers depend on its layout
    }
    return r;
  }
  if (!name.empty()) {
    if (symbolic::known(name)) {
      r.info = integer(4, true);
      r.info.format = name;
      return r;
    }
    if (auto td = typedef_type(name)) {
      r.info = *td;
      return r;
    }
    if (!cxx) return bad("unknown type '" + name + "'");
    r.info.kind = Kind::Other;  // a class by value
    return r;
  }
  if (has_void) {
    if (words > 1) return bad("'void' mixed with other type words");
    r.is_void = true;
    return r;
  }
  if (has_float || has_double) {
    if (is_unsigned || is_signed_word || has_char || has_short || has_int || (has_float && longs) || longs > 1)
      return bad("bad floating-point type");
    if (longs == 1) {  // long double: passed in memory
      r.info.kind = Kind::Other;
      r.info.size = 16;
    } else {
      r.info.kind = Kind::Float;
      r.info.size = has_float ? 4 : 8;
    }
    return r;
  }
  if (is_unsigned && is_signed_word) return bad("both signed and unsigned");
  if (has_bool) {
    if (words > 1) return bad("bad bool type");
    r.info = integer(1, false);
    return r;
  }
  if (has_int128) {
    r.info.kind = Kind::Other;  // two registers
    r.info.size = 16;
    return r;
  }
  if (longs > 2 || (has_char && (has_short || longs || has_int)) || (has_short && longs))
    return bad("bad integer type");
  int size = has_char ? 1 : has_short ? 2 : longs ? 8 : 4;
  // Plain char is signed on x86-64.
  r.info = integer(size, !is_unsigned);
  return r;
}

bool is_name_token(const std::vector<Token>& toks) {
  if (toks.size() < 2) return false;
  const Token& last = toks.back();
  if (last.type != Token::Type::Ident || is_keyword(last.text)) return false;
  const Token& prev = toks[toks.size() - 2];
  if (prev.type == Token::Type::Ident && is_tag_word(prev.text)) return false;
  for (size_t i = 0; i + 1 < toks.size(); ++i)
    if (!(toks[i].type == Token::Type::Ident && is_qualifier(toks[i].text))) return true;
  return false;
}

// The name of a function pointer parameter: "void (*cb)(int)" -> "cb".
std::string function_pointer_name(const std::vector<Token>& toks) {
  for (size_t i = 0; i + 2 < toks.size(); ++i)
    if (is_punct(toks[i], '(') && is_punct(toks[i + 1], '*') && toks[i + 2].type == Token::Type::Ident)
      return toks[i + 2].text;
  return "";
}

std::string join(const std::vector<Token>& toks) {
  std::string out;
  for (const Token& t : toks) {
    if (!out.empty() && t.type == Token::Type::Ident && (out.back() == '_' || std::isalnum(static_cast<unsigned char>(out.back()))))
      out += ' ';
    out += t.text;
  }
  return out;
}

std::string strip_comments(std::string_view line, bool* open_comment) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (*open_comment) {
      if (line.substr(i, 2) == "*/") {
        *open_comment = false;
        ++i;
      }
      continue;
    }
    if (line.substr(i, 2) == "//") break;
    if (line.substr(i, 2) == "/*") {
      *open_comment = true;
      ++i;
      out += ' ';
      continue;
    }
    out += line[i];
  }
  return out;
}

}  // namespace

Result<ParamInfo> parse_c_type(std::string_view text, bool cxx) {
  auto toks = tokenize(text, cxx);
  if (!toks) return toks.error();
  auto t = type_of(*toks, cxx, std::string(text));
  if (!t) return t.error();
  if (t->is_void) return Error::msg("'void' is not a parameter type");
  return t->info;
}

Result<CPrototype> parse_c_prototype(std::string_view line) {
  auto toks_r = tokenize(line, false);
  if (!toks_r) return toks_r.error();
  std::vector<Token> toks = std::move(*toks_r);
  if (!toks.empty() && is_punct(toks.back(), ';')) toks.pop_back();
  if (toks.empty()) return Error::msg("empty declaration");
  size_t open = 0;
  while (open < toks.size() && !is_punct(toks[open], '(')) ++open;
  if (open == toks.size()) return Error::msg("no parameter list in '" + std::string(line) + "'");
  if (open == 0 || toks[open - 1].type != Token::Type::Ident || is_keyword(toks[open - 1].text))
    return Error::msg("no function name before '(' (function pointer returns are not supported) in '" +
                      std::string(line) + "'");
  CPrototype proto;
  proto.name = toks[open - 1].text;
  std::vector<Token> ret(toks.begin(), toks.begin() + static_cast<long>(open) - 1);
  if (ret.empty()) return Error::msg("no return type for '" + proto.name + "'");
  auto rt = type_of(ret, false, join(ret));
  if (!rt) return rt.error();
  if (!rt->is_void && rt->info.kind == Kind::Other && rt->info.size < 0)
    return Error::msg("'" + proto.name + "' returns a struct or union by value, whose registers depend on its layout: "
                      "declare it as returning void");
  proto.sig.returns_void = rt->is_void;
  if (!rt->is_void) proto.sig.ret = rt->info;

  // The parameters, split at the commas outside parentheses.
  std::vector<std::vector<Token>> params(1);
  int depth = 0;
  size_t i = open + 1;
  for (; i < toks.size(); ++i) {
    const Token& t = toks[i];
    if (is_punct(t, '(')) ++depth;
    if (is_punct(t, ')') && depth-- == 0) break;
    if (is_punct(t, ',') && depth == 0) {
      params.emplace_back();
      continue;
    }
    if (is_punct(t, ';')) return Error::msg("unexpected ';' inside the parameters of '" + proto.name + "'");
    params.back().push_back(t);
  }
  if (i == toks.size()) return Error::msg("missing ')' after the parameters of '" + proto.name + "'");
  if (i + 1 != toks.size()) return Error::msg("unexpected '" + toks[i + 1].text + "' after the parameters of '" + proto.name + "'");
  if (params.size() == 1 && params[0].empty()) return proto;  // f()
  if (params.size() == 1 && params[0].size() == 1 && params[0][0].text == "void") return proto;
  for (size_t n = 0; n < params.size(); ++n) {
    std::vector<Token>& p = params[n];
    if (p.empty()) return Error::msg("empty parameter " + std::to_string(n + 1) + " of '" + proto.name + "'");
    if (p.size() == 1 && p[0].type == Token::Type::Ellipsis) {
      if (n + 1 != params.size()) return Error::msg("'...' is not the last parameter of '" + proto.name + "'");
      if (n == 0) return Error::msg("'...' without a parameter before it in '" + proto.name + "'");
      proto.variadic = true;
      break;
    }
    ParamInfo info;
    // "char name[16]": the name is before the brackets.
    std::vector<Token> array;
    while (!p.empty() && is_punct(p.back(), ']')) {
      size_t open_bracket = p.size();
      while (open_bracket > 0 && !is_punct(p[open_bracket - 1], '[')) --open_bracket;
      if (open_bracket == 0) return Error::msg("']' without '[' in parameter " + std::to_string(n + 1) + " of '" + proto.name + "'");
      array.insert(array.begin(), p.begin() + static_cast<long>(open_bracket) - 1, p.end());
      p.resize(open_bracket - 1);
    }
    std::string name = function_pointer_name(p);
    if (name.empty() && is_name_token(p)) {
      name = p.back().text;
      p.pop_back();
    }
    p.insert(p.end(), array.begin(), array.end());
    auto t = type_of(p, false, join(p));
    if (!t) return Error::msg(t.error().message + " (parameter " + std::to_string(n + 1) + " of '" + proto.name + "')");
    if (t->is_void) return Error::msg("parameter " + std::to_string(n + 1) + " of '" + proto.name + "' is void");
    info = t->info;
    info.name = name;
    proto.sig.params.push_back(std::move(info));
  }
  return proto;
}

Result<std::vector<CPrototype>> parse_c_prototypes(std::string_view text, const std::string& where) {
  std::vector<CPrototype> out;
  bool open_comment = false;
  size_t lineno = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view raw = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++lineno;
    std::string line = strip_comments(raw, &open_comment);
    size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    auto p = parse_c_prototype(line);
    if (!p) return Error::msg(where + ":" + std::to_string(lineno) + ": " + p.error().message);
    out.push_back(std::move(*p));
  }
  if (open_comment) return Error::msg(where + ": unterminated /* comment");
  return out;
}

}  // namespace ft
