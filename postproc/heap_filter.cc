#include "postproc/heap_filter.h"

#include <fmt/format.h>

#include <charconv>

namespace ft::post {

namespace {

std::optional<uint64_t> parse_unsigned(std::string_view s) {
  uint64_t v = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || res.ec != std::errc() || res.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// "12", "4k", "1M", "2G".
std::optional<uint64_t> parse_size(std::string_view s) {
  uint64_t scale = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'k': case 'K': scale = uint64_t{1} << 10; break;
      case 'M': scale = uint64_t{1} << 20; break;
      case 'G': scale = uint64_t{1} << 30; break;
      default: break;
    }
    if (scale != 1) s.remove_suffix(1);
  }
  auto v = parse_unsigned(s);
  if (!v || *v > UINT64_MAX / scale) return std::nullopt;
  return *v * scale;
}

}  // namespace

Result<When> parse_when(std::string_view text) {
  auto bad = [&]() {
    return Error::msg("'" + std::string(text) +
                      "' is not a moment: give a time since the start of the trace with a unit "
                      "(250ms, 1.5s, 40us, 1200ns) or an event as #SEQ");
  };
  if (!text.empty() && text[0] == '#') {
    auto seq = parse_unsigned(text.substr(1));
    if (!seq) return bad();
    return When{When::Kind::kEvent, *seq};
  }
  struct Unit {
    std::string_view suffix;
    uint64_t ns;
  };
  static constexpr Unit kUnits[] = {{"ns", 1}, {"us", 1000}, {"ms", 1000'000}, {"s", 1000'000'000}};
  for (const Unit& u : kUnits) {
    if (text.size() <= u.suffix.size() || !text.ends_with(u.suffix)) continue;
    std::string_view number = text.substr(0, text.size() - u.suffix.size());
    if (number.back() < '0' || number.back() > '9') continue;  // "ms" must not end "s"
    size_t dot = number.find('.');
    auto whole = parse_unsigned(number.substr(0, dot));
    if (!whole) return bad();
    uint64_t fraction_ns = 0;
    if (dot != std::string_view::npos) {
      std::string_view digits = number.substr(dot + 1);
      if (digits.empty() || digits.size() > 9 || !parse_unsigned(digits)) return bad();
      // digits / 10^len units, in ns, truncated.
      uint64_t scaled = *parse_unsigned(digits) * u.ns;
      for (size_t i = 0; i < digits.size(); ++i) scaled /= 10;
      fraction_ns = scaled;
    }
    if (*whole > (UINT64_MAX - fraction_ns) / u.ns) return bad();
    return When{When::Kind::kTime, *whole * u.ns + fraction_ns};
  }
  return bad();
}

std::string format_when(const When& when) {
  if (when.kind == When::Kind::kEvent) return fmt::format("#{}", when.value);
  uint64_t ns = when.value;
  if (ns % 1000'000'000 == 0) return fmt::format("{}s", ns / 1000'000'000);
  if (ns % 1000'000 == 0) return fmt::format("{}ms", ns / 1000'000);
  if (ns % 1000 == 0) return fmt::format("{}us", ns / 1000);
  return fmt::format("{}ns", ns);
}

Result<SizeRange> parse_size_range(std::string_view text) {
  auto bad = [&]() {
    return Error::msg("'" + std::string(text) +
                      "' is not a size range: give SIZE, MIN-MAX, MIN- or -MAX in bytes "
                      "(suffixes k, M, G)");
  };
  SizeRange range;
  size_t dash = text.find('-');
  if (dash == std::string_view::npos) {
    auto v = parse_size(text);
    if (!v) return bad();
    range.min = range.max = *v;
    return range;
  }
  std::string_view lo = text.substr(0, dash), hi = text.substr(dash + 1);
  if (lo.empty() && hi.empty()) return bad();
  if (!lo.empty()) {
    auto v = parse_size(lo);
    if (!v) return bad();
    range.min = *v;
  }
  if (!hi.empty()) {
    auto v = parse_size(hi);
    if (!v) return bad();
    range.max = *v;
  }
  if (range.min > range.max) return bad();
  return range;
}

bool BlockFilter::accepts(int64_t block_tid, uint64_t block_size, uint64_t time_ns,
                          uint64_t seq) const {
  if (tid && block_tid != *tid) return false;
  if (!size.contains(block_size)) return false;
  if (from && from->position(time_ns, seq) < from->value) return false;
  if (to && to->before(time_ns, seq)) return false;
  return true;
}

}  // namespace ft::post
