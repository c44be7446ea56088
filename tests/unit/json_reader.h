// A small JSON reader for the unit tests, to check the shape of --json output: objects
// keep their keys in order (the reports promise an order), numbers are integers (the
// reports write no others), and escaped code points are not decoded (not needed so far).
#pragma once

#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ft::post {

struct Json {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  int64_t number = 0;
  std::string string;
  std::vector<Json> items;
  // An object's members, in order: names[i] is the name of values[i]. (A vector of
  // pairs holding Json cannot be declared in Json itself with every compiler.)
  std::vector<std::string> names;
  std::vector<Json> values;

  const Json* get(const std::string& key) const {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == key) return &values[i];
    }
    return nullptr;
  }
  std::vector<std::string> keys() const { return names; }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  std::optional<Json> parse() {
    Json v;
    ws();
    if (!value(v)) return std::nullopt;
    ws();
    if (i_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  bool value(Json& v) {
    if (i_ >= s_.size()) return false;
    char c = s_[i_];
    if (c == '{') {
      v.type = Json::Type::kObject;
      ++i_;
      ws();
      if (eat('}')) return true;
      do {
        ws();
        Json key;
        if (!string(key.string)) return false;
        ws();
        if (!eat(':')) return false;
        ws();
        Json item;
        if (!value(item)) return false;
        v.names.push_back(key.string);
        v.values.push_back(std::move(item));
        ws();
      } while (eat(','));
      return eat('}');
    }
    if (c == '[') {
      v.type = Json::Type::kArray;
      ++i_;
      ws();
      if (eat(']')) return true;
      do {
        ws();
        Json item;
        if (!value(item)) return false;
        v.items.push_back(std::move(item));
        ws();
      } while (eat(','));
      return eat(']');
    }
    if (c == '"') {
      v.type = Json::Type::kString;
      return string(v.string);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      v.type = Json::Type::kNumber;
      size_t start = i_;
      if (c == '-') ++i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      v.number = std::stoll(s_.substr(start, i_ - start));
      return i_ > start;
    }
    for (const char* lit : {"null", "true", "false"}) {
      std::string l = lit;
      if (s_.compare(i_, l.size(), l) == 0) {
        i_ += l.size();
        v.type = l == "null" ? Json::Type::kNull : Json::Type::kBool;
        v.boolean = l == "true";
        return true;
      }
    }
    return false;
  }
  bool string(std::string& out) {
    if (!eat('"')) return false;
    while (i_ < s_.size() && s_[i_] != '"') {
      if (s_[i_] == '\\') {
        if (++i_ >= s_.size()) return false;
        char e = s_[i_];
        if (e == 'u') {
          out += "?";  // not needed by these tests
          i_ += 5;
          continue;
        }
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
        ++i_;
        continue;
      }
      out += s_[i_++];
    }
    return eat('"');
  }
  bool eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  void ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  const std::string& s_;
  size_t i_ = 0;
};

}  // namespace ft::post
