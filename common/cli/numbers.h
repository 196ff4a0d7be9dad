// Numbers read from text the same strict way everywhere (option values, configuration fields,
// environment variables): the whole text or nothing.
#pragma once

#include <optional>
#include <string>

namespace suite {

// text as a T (int, long, unsigned, unsigned long, unsigned long long, float or double), or
// nothing when it is not entirely one: leading spaces, trailing characters, values out of T's
// range, infinities, NaN and, for the integer types, fractions and exponents are not numbers.
template <class T>
std::optional<T> parse_number(const std::string& text);

}  // namespace suite
