#include "zp/probe/gate_repeat.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace zp::probe {
namespace {

double number(const nlohmann::json& j, const char* key) {
    if (!j.contains(key) || j[key].is_null()) return std::nan("");
    if (!j[key].is_number()) throw std::invalid_argument(std::string("gate repeat: \"") + key + "\" is not a number");
    return j[key].get<double>();
}

template <class T>
T& findOrAdd(std::vector<T>& xs, auto match, auto make) {
    for (auto& x : xs)
        if (match(x)) return x;
    xs.push_back(make());
    return xs.back();
}

std::string shortVerdict(const std::string& v) {
    return v == "pass" ? "PASS" : v == "fail" ? "FAIL" : v == "on_the_bar" ? "BAR" : "-";
}

}  // namespace

RepeatSummary summarizeRepeats(const std::vector<nlohmann::json>& cards) {
    RepeatSummary s;
    s.runs = int(cards.size());
    const std::size_t n = cards.size();
    for (std::size_t r = 0; r < n; ++r) {
        const nlohmann::json& card = cards[r];
        if (!card.contains("gate") || card["gate"].is_null()) continue;
        const nlohmann::json& gate = card["gate"];
        if (!gate.contains("candidates") || !gate["candidates"].is_array())
            throw std::invalid_argument(fmt::format("gate repeat: run {}'s gate has no \"candidates\" array", r + 1));
        for (const auto& g : gate["candidates"]) {
            const std::string name = g.at("candidate").get<std::string>();
            RepeatCandidate& c = findOrAdd(
                s.candidates, [&](const RepeatCandidate& x) { return x.candidate == name; },
                [&] {
                    return RepeatCandidate{name, std::vector<std::string>(n, "missing"), false};
                });
            c.verdicts[r] = g.at("verdict").at("verdict").get<std::string>();
            for (const auto& p : g.at("projections")) {
                const std::string pattern = p.at("pattern").get<std::string>();
                RepeatCell& cell = findOrAdd(
                    s.cells, [&](const RepeatCell& x) { return x.candidate == name && x.pattern == pattern; },
                    [&] {
                        RepeatCell x;
                        x.candidate = name;
                        x.pattern = pattern;
                        x.verdicts.assign(n, "missing");
                        x.medianMs.assign(n, std::nan(""));
                        x.ciLowMs.assign(n, std::nan(""));
                        x.ciHighMs.assign(n, std::nan(""));
                        return x;
                    });
                cell.verdicts[r] = p.at("verdict").get<std::string>();
                cell.medianMs[r] = number(p, "median_ms");
                cell.ciLowMs[r] = number(p, "ci_low_ms");
                cell.ciHighMs[r] = number(p, "ci_high_ms");
            }
        }
    }
    std::stable_sort(s.cells.begin(), s.cells.end(), [&](const RepeatCell& a, const RepeatCell& b) {
        auto rank = [&](const std::string& c) {
            for (std::size_t i = 0; i < s.candidates.size(); ++i)
                if (s.candidates[i].candidate == c) return i;
            return s.candidates.size();
        };
        return rank(a.candidate) < rank(b.candidate);
    });
    for (RepeatCell& c : s.cells) {
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < n; ++j) {
                if (i == j) continue;
                ++c.pairsTotal;
                c.pairsInside += c.medianMs[i] >= c.ciLowMs[j] && c.medianMs[i] <= c.ciHighMs[j];  // NaN: outside
            }
        s.pairsInside += c.pairsInside;
        s.pairsTotal += c.pairsTotal;
    }
    for (RepeatCandidate& c : s.candidates) {
        const bool pass = std::count(c.verdicts.begin(), c.verdicts.end(), "pass") > 0;
        const bool fail = std::count(c.verdicts.begin(), c.verdicts.end(), "fail") > 0;
        c.contradicts = pass && fail;
        s.contradiction = s.contradiction || c.contradicts;
    }
    return s;
}

std::string formatRepeatTable(const RepeatSummary& s) {
    std::string out = fmt::format("gate repeated in {} fresh processes (BAR = on the bar)\n", s.runs);
    out += fmt::format("  {:<22} | {:<{}} | {:>4} {:>4} {:>4} | {}\n", "candidate", "verdicts by run",
                       std::max(15, 5 * s.runs), "PASS", "BAR", "FAIL", "agree");
    for (const auto& c : s.candidates) {
        std::string vs;
        for (const auto& v : c.verdicts) vs += fmt::format("{:<5}", shortVerdict(v));
        const auto cnt = [&](const char* v) { return std::count(c.verdicts.begin(), c.verdicts.end(), v); };
        out += fmt::format("  {:<22} | {:<{}} | {:>4} {:>4} {:>4} | {}\n", c.candidate, vs, std::max(15, 5 * s.runs),
                           cnt("pass"), cnt("on_the_bar"), cnt("fail"), c.contradicts ? "NO: PASS and FAIL" : "yes");
    }
    out += fmt::format("  {:<22} {:<22} | {:>23} | {:>9} | {:>15} | {}\n", "candidate", "pattern",
                       "median saving ms min..max", "spread", "median in others' CI", "verdicts");
    for (const auto& c : s.cells) {
        double lo = INFINITY, hi = -INFINITY;
        for (double m : c.medianMs)
            if (std::isfinite(m)) lo = std::min(lo, m), hi = std::max(hi, m);
        std::string vs;
        for (const auto& v : c.verdicts) vs += shortVerdict(v) + " ";
        const std::string range = std::isfinite(lo) ? fmt::format("{:.3f}..{:.3f}", lo, hi) : "n/a";
        const std::string spread = std::isfinite(lo) ? fmt::format("{:.3f}", hi - lo) : "n/a";
        out += fmt::format("  {:<22} {:<22} | {:>23} | {:>9} | {:>7} of {:<4} | {}\n", c.candidate, c.pattern, range,
                           spread, c.pairsInside, c.pairsTotal, vs);
    }
    const double frac = s.pairsTotal ? double(s.pairsInside) / s.pairsTotal : 0.0;
    out += fmt::format(
        "repeatability: {} of {} ordered pairs of runs ({:.1f}%) have one run's median inside the other's 95% CI "
        "(aim >= 90%); {}\n",
        s.pairsInside, s.pairsTotal, 100 * frac,
        s.contradiction ? "a candidate PASSed in one run and FAILed in another"
                        : "no candidate PASSed in one run "
                          "and FAILed in another");
    return out;
}

std::string formatRunVerdicts(const nlohmann::json& card) {
    const RepeatSummary s = summarizeRepeats({card});
    if (s.candidates.empty()) return "no gate";
    std::string out;
    for (const auto& c : s.candidates) {
        const RepeatCell* least = nullptr;
        for (const auto& cell : s.cells)
            if (cell.candidate == c.candidate && std::isfinite(cell.medianMs[0]) &&
                (!least || cell.medianMs[0] < least->medianMs[0]))
                least = &cell;
        out += (out.empty() ? "" : "; ") + c.candidate + " " + shortVerdict(c.verdicts[0]);
        if (least) out += fmt::format(" (least saving {} {:.3f} ms)", least->pattern, least->medianMs[0]);
    }
    return out;
}

nlohmann::json repeatJson(const RepeatSummary& s) {
    auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
    nlohmann::json j = {{"runs", s.runs},
                        {"pairs_inside", s.pairsInside},
                        {"pairs_total", s.pairsTotal},
                        {"contradiction", s.contradiction}};
    j["candidates"] = nlohmann::json::array();
    for (const auto& c : s.candidates)
        j["candidates"].push_back(
            {{"candidate", c.candidate}, {"verdicts", c.verdicts}, {"contradicts", c.contradicts}});
    j["cells"] = nlohmann::json::array();
    for (const auto& c : s.cells) {
        nlohmann::json m = nlohmann::json::array(), lo = nlohmann::json::array(), hi = nlohmann::json::array();
        for (std::size_t i = 0; i < c.medianMs.size(); ++i) {
            m.push_back(num(c.medianMs[i]));
            lo.push_back(num(c.ciLowMs[i]));
            hi.push_back(num(c.ciHighMs[i]));
        }
        j["cells"].push_back({{"candidate", c.candidate},
                              {"pattern", c.pattern},
                              {"verdicts", c.verdicts},
                              {"median_ms", m},
                              {"ci_low_ms", lo},
                              {"ci_high_ms", hi},
                              {"pairs_inside", c.pairsInside},
                              {"pairs_total", c.pairsTotal}});
    }
    return j;
}

}  // namespace zp::probe
