// The gate's repeatability: the cards of N runs of the same gate in fresh
// processes, summarised per candidate and pattern: the verdicts of every run, the spread of
// the median savings, and how often one run's median lies inside another run's 95% CI
// (over the ordered pairs of runs i != j). Two runs that call one candidate PASS and FAIL
// contradict each other; ON THE BAR beside either does not.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace zp::probe {

struct RepeatCell {
    std::string candidate, pattern;
    std::vector<std::string> verdicts;  // per run: "pass", "on_the_bar", "fail"; "missing" when not measured
    std::vector<double> medianMs, ciLowMs, ciHighMs;  // per run; NaN when missing or not finite
    int pairsInside = 0, pairsTotal = 0;              // run i's median inside run j's CI, i != j
};

struct RepeatCandidate {
    std::string candidate;
    std::vector<std::string> verdicts;  // per run
    bool contradicts = false;           // PASS in one run, FAIL in another
};

struct RepeatSummary {
    int runs = 0;
    std::vector<RepeatCandidate> candidates;  // first-seen order
    std::vector<RepeatCell> cells;            // candidate-major, patterns in first-seen order
    int pairsInside = 0, pairsTotal = 0;
    bool contradiction = false;
};

// `cards`: each run's card JSON (its "gate" object; a card without one counts as a run that
// measured nothing). Throws std::invalid_argument when a gate object is malformed.
RepeatSummary summarizeRepeats(const std::vector<nlohmann::json>& cards);
std::string formatRepeatTable(const RepeatSummary&);
// One run's card in a line, as each run of a repeat ends: every candidate's verdict and its
// smallest median saving, e.g. "one_launch PASS (least saving six_local 0.612 ms)"; "no gate".
std::string formatRunVerdicts(const nlohmann::json& card);
nlohmann::json repeatJson(const RepeatSummary&);

}  // namespace zp::probe
