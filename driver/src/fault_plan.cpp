#include "fault_plan.hpp"

#include <algorithm>
#include <charconv>

namespace zecl {

FaultSchedule parseFaultSchedule(std::string_view text) {
    FaultSchedule s;
    auto ignore = [&](std::string_view item, std::string_view why) {
        s.problems.push_back("ZECL_FAULT item '" + std::string(item) + "' ignored: " + std::string(why));
    };
    while (!text.empty()) {
        const std::size_t comma = text.find(',');
        const std::string_view item = text.substr(0, comma);
        text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
        if (item.empty()) continue;
        const std::size_t colon = item.find(':');
        if (colon == std::string_view::npos) {
            ignore(item, "not kind:N");
            continue;
        }
        const std::string_view kind = item.substr(0, colon), count = item.substr(colon + 1);
        const auto* name = std::find(kFaultNames.begin(), kFaultNames.end(), kind);
        if (name == kFaultNames.end()) {
            std::string known;
            for (const std::string_view n : kFaultNames) known += (known.empty() ? "" : ", ") + std::string(n);
            ignore(item, "the kind is not one of " + known);
            continue;
        }
        uint64_t n = 0;
        const auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
        if (ec != std::errc{} || end != count.data() + count.size() || n == 0) {
            ignore(item, "N is not a positive integer (the 1-based call that fails)");
            continue;
        }
        s.failAt[std::size_t(name - kFaultNames.begin())] = n;
    }
    return s;
}

}  // namespace zecl
