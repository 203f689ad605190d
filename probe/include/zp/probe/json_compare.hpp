// Naming how two JSON documents differ, for the refusals that keep results of different
// configurations apart (a --resume after the sweep's `set` changed, shards of different plans,
// gate runs of different configs).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace zp::probe {

// "" when `a` equals `b`; else each differing leaf as "<prefix>path.to.key: <in a> in <aName>,
// <in b> in <bName>" (a key one side lacks: "absent"; values as JSON, cut to 60 characters),
// joined by "; ", the first `most` of them and "(and N more)".
std::string describeJsonDifferences(const nlohmann::json& a, const nlohmann::json& b, std::string_view aName,
                                    std::string_view bName, std::string_view prefix = "", std::size_t most = 3);

}  // namespace zp::probe
