#include "zp/probe/json_compare.hpp"

#include <set>
#include <vector>

#include <fmt/format.h>

namespace zp::probe {
namespace {

std::string shown(const nlohmann::json* v) {
    if (!v) return "absent";
    std::string s = v->dump();
    if (s.size() > 60) s = s.substr(0, 57) + "...";
    return s;
}

void collect(const nlohmann::json* a, const nlohmann::json* b, const std::string& path,
             std::vector<std::pair<std::string, std::pair<std::string, std::string>>>& out) {
    if (a && b && *a == *b) return;
    if (a && b && a->is_object() && b->is_object()) {
        std::set<std::string> keys;
        for (auto it = a->begin(); it != a->end(); ++it) keys.insert(it.key());
        for (auto it = b->begin(); it != b->end(); ++it) keys.insert(it.key());
        for (const auto& k : keys) {
            const auto ia = a->find(k), ib = b->find(k);
            collect(ia == a->end() ? nullptr : &*ia, ib == b->end() ? nullptr : &*ib, path.empty() ? k : path + "." + k,
                    out);
        }
        return;
    }
    if (a && b && a->is_array() && b->is_array() && a->size() == b->size()) {
        for (std::size_t i = 0; i < a->size(); ++i) collect(&(*a)[i], &(*b)[i], fmt::format("{}[{}]", path, i), out);
        return;
    }
    out.push_back({path, {shown(a), shown(b)}});
}

}  // namespace

std::string describeJsonDifferences(const nlohmann::json& a, const nlohmann::json& b, std::string_view aName,
                                    std::string_view bName, std::string_view prefix, std::size_t most) {
    std::vector<std::pair<std::string, std::pair<std::string, std::string>>> diffs;
    collect(&a, &b, std::string(prefix), diffs);
    std::string s;
    for (std::size_t i = 0; i < diffs.size() && i < most; ++i)
        s += fmt::format("{}{}: {} in {}, {} in {}", i ? "; " : "", diffs[i].first.empty() ? "(whole)" : diffs[i].first,
                         diffs[i].second.first, aName, diffs[i].second.second, bName);
    if (diffs.size() > most) s += fmt::format(" (and {} more)", diffs.size() - most);
    return s;
}

}  // namespace zp::probe
