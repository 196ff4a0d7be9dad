#include "common/cli/numbers.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <type_traits>

namespace suite {

template <class T>
std::optional<T> parse_number(const std::string& s) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return std::nullopt;
  if constexpr (std::is_floating_point_v<T>) {
    // strtof/strtod rather than from_chars: they take a leading '+' and hexadecimal floats, as
    // std::stod did; strtof for float rounds once from the decimal.
    char* end = nullptr;
    errno = 0;
    const T v = std::is_same_v<T, float> ? T(std::strtof(s.c_str(), &end)) : T(std::strtod(s.c_str(), &end));
    if (*end != '\0' || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
    return v;
  } else {
    T v{};
    const char* begin = s.data() + (s[0] == '+' ? 1 : 0);
    const auto [ptr, ec] = std::from_chars(begin, s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
    return v;
  }
}

template std::optional<int> parse_number<int>(const std::string&);
template std::optional<long> parse_number<long>(const std::string&);
template std::optional<unsigned> parse_number<unsigned>(const std::string&);
template std::optional<unsigned long> parse_number<unsigned long>(const std::string&);
template std::optional<unsigned long long> parse_number<unsigned long long>(const std::string&);
template std::optional<float> parse_number<float>(const std::string&);
template std::optional<double> parse_number<double>(const std::string&);

}  // namespace suite
