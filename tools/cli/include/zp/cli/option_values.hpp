// Command-line values read strictly, for the tools' options: a value out of range or malformed
// is an OptionError naming the option and the text (bad usage: exit 2), never saturated, wrapped
// or dropped (CLI11 reads "-1" into a size_t as a huge number and "0,,1" as two cards).
// Standard C++ only: moe-server builds it against the installed zeprobe package.
#pragma once

#include <charconv>
#include <cstdio>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace zp::cli {

// A malformed or out-of-range option value: the caller prints it and exits 2.
struct OptionError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

// A decimal integer in [least, most]: digits only (no sign, no spaces, no hex).
inline std::uint64_t parseUnsignedOption(std::string_view text, std::string_view option, std::uint64_t least,
                                         std::uint64_t most) {
    const std::string range = "[" + std::to_string(least) + ", " + std::to_string(most) + "]";
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    const bool digitsOnly = !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
    if (!digitsOnly && !(text.size() > 1 && text.front() == '-' &&
                         text.substr(1).find_first_not_of("0123456789") == std::string_view::npos))
        throw OptionError(std::string(option) + " '" + std::string(text) + "': not a decimal integer in " + range);
    if (!digitsOnly || ec == std::errc::result_out_of_range || end != text.data() + text.size() || v < least ||
        v > most)
        throw OptionError(std::string(option) + " " + std::string(text) + ": out of range " + range);
    return v;
}

// A count: a decimal integer in [least, most], as an int (the ranges of counts fit one).
inline int parseCountOption(std::string_view text, std::string_view option, int least, int most) {
    return int(parseUnsignedOption(text, option, std::uint64_t(least), std::uint64_t(most)));
}

// A decimal number in [least, most]: digits with an optional fraction and exponent ("2", "0.5",
// "1e3"); no sign other than an exponent's, no hex, no "nan" or "inf" (a NaN would pass every
// range check, and strtod reads "0x10" as 16).
inline double parseDecimalOption(std::string_view text, std::string_view option, double least, double most) {
    const std::string named = std::string(option) + " '" + std::string(text) + "'";
    char range[64];
    std::snprintf(range, sizeof range, "[%g, %g]", least, most);
    std::size_t i = 0;
    auto digits = [&] {
        const std::size_t from = i;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
        return i - from;
    };
    std::size_t mantissa = digits();
    if (i < text.size() && text[i] == '.') {
        ++i;
        mantissa += digits();
    }
    bool ok = mantissa > 0;
    if (ok && i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
        ++i;
        if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
        ok = digits() > 0;
    }
    if (!ok || i != text.size()) throw OptionError(named + ": not a decimal number in " + range);
    double v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || !(v >= least && v <= most))
        throw OptionError(named + ": out of range " + range);
    return v;
}

// "0,1,3": each element a decimal integer in [least, most]; an empty element ("0,,1", "0,",
// "") is an error, not skipped.
inline std::vector<std::uint64_t> parseUnsignedList(std::string_view text, std::string_view option, std::uint64_t least,
                                                    std::uint64_t most) {
    std::vector<std::uint64_t> out;
    std::size_t at = 0;
    while (true) {
        const std::size_t comma = text.find(',', at);
        const std::string_view item = text.substr(at, comma == std::string_view::npos ? comma : comma - at);
        if (item.empty())
            throw OptionError(std::string(option) + " '" + std::string(text) + "': element " +
                              std::to_string(out.size() + 1) + " is empty (give a comma-separated list, e.g. 0,1,2)");
        out.push_back(parseUnsignedOption(item, option, least, most));
        if (comma == std::string_view::npos) return out;
        at = comma + 1;
    }
}

}  // namespace zp::cli
