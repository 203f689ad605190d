#include "trace_json.hpp"
#include "zp/probe/file_io.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace zp::app {

nlohmann::json traceJson(const std::vector<TraceSpan>& spans, const std::string& processName) {
    constexpr int kPid = 1;
    std::uint64_t origin = 0;
    if (!spans.empty())
        origin = std::min_element(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
                     return a.startNs < b.startNs;
                 })->startNs;

    nlohmann::json events = nlohmann::json::array();
    events.push_back(
        {{"name", "process_name"}, {"ph", "M"}, {"pid", kPid}, {"tid", 0}, {"args", {{"name", processName}}}});

    std::map<std::string, int> tids;
    std::vector<std::string> order;
    for (const auto& s : spans)
        if (tids.emplace(s.track, int(tids.size()) + 1).second) order.push_back(s.track);
    for (const auto& track : order) {
        const int tid = tids[track];
        events.push_back(
            {{"name", "thread_name"}, {"ph", "M"}, {"pid", kPid}, {"tid", tid}, {"args", {{"name", track}}}});
        events.push_back(
            {{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", kPid}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
    }
    for (const auto& s : spans) {
        if (s.endNs < s.startNs)
            throw std::invalid_argument("trace span " + s.track + "/" + s.name + " ends at " + std::to_string(s.endNs) +
                                        " ns, before its start at " + std::to_string(s.startNs) + " ns");
        events.push_back({{"name", s.name},
                          {"cat", s.category},
                          {"ph", "X"},
                          {"ts", double(s.startNs - origin) / 1000.0},
                          {"dur", double(s.endNs - s.startNs) / 1000.0},
                          {"pid", kPid},
                          {"tid", tids[s.track]},
                          {"args", s.args.is_null() ? nlohmann::json::object() : s.args}});
    }
    return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"}, {"otherData", {{"origin_ns", origin}}}};
}

void writeTrace(const std::filesystem::path& path, const std::vector<TraceSpan>& spans,
                const std::string& processName) {
    const std::string text = traceJson(spans, processName).dump() + "\n";
    probe::writeFileAtomically(path, text, "--trace");
}

}  // namespace zp::app
