// The gate of CONTRACT §8: a candidate variant against the baseline chain.
//
// Per valid route pattern a Projection of the saving over `layers` layers with its 95%
// interval over blocks (timing_stats.hpp, blockedSaving). Three verdicts (§8), by ONE rule
// (classifyInterval, the only place that compares an interval with the bar):
//  - a pattern PASSes when the interval's lower end is ≥ gate.min_saving_ms, FAILs when its
//    upper end is < the bar, and is ON THE BAR otherwise (a non-finite figure FAILs);
//  - the candidate PASSes when every valid pattern passes (at least one was measured) and
//    its correctness holds (failed == 0 and passed > 0; skipped cases, §2, are named but
//    neither block nor make up for no case having passed); it FAILs when a pattern fails or
//    correctness does not hold; it is ON THE BAR otherwise, never a pass, naming the
//    pattern(s) and how many more timed rounds would likely decide them.
// A median above the bar with a lower end below it does not pass. The verdict names the
// pattern that decides it (worstPattern, below): the line, the table's marker and the card agree.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "zp/probe/timing_stats.hpp"

namespace zp::probe {

enum class Verdict { Pass, OnTheBar, Fail };
std::string_view verdictName(Verdict);  // "PASS", "ON THE BAR", "FAIL"
std::string_view verdictKey(Verdict);   // "pass", "on_the_bar", "fail" (JSON)

// THE pass rule of CONTRACT §8 for one interval of the projected saving against the bar.
Verdict classifyInterval(double ciLowMs, double ciHighMs, double minSavingMs);

struct Projection {
    std::string pattern;
    double medianMs = 0, ciLowMs = 0, ciHighMs = 0;  // projected saving over `layers` layers
    Verdict verdict = Verdict::Fail;                 // classifyInterval against min_saving_ms
    bool passes = false;                             // verdict == Pass
    std::size_t pairs = 0, blocks = 0, roundsPerBlock = 0;
    double blockSdMs = 0;                                // spread of the block medians, projected
    std::optional<int> moreRounds;                       // ON THE BAR: rounds more that would likely decide it
    double baselineMedianNs = 0, candidateMedianNs = 0;  // per layer (per execution), for the table
};

// One pattern's projection from blocks of interleaved samples in ns (baselineNs[j][i],
// candidateNs[j][i] = pair i of block j); `resolutionNs`: one sample's timer step.
Projection projectPattern(std::string pattern, std::span<const std::vector<double>> baselineNs,
                          std::span<const std::vector<double>> candidateNs, int layers, double minSavingMs,
                          double resolutionNs = 0);

struct CaseCounts {
    int passed = 0, failed = 0, skipped = 0;
};

struct NotValidPattern {
    std::string pattern, reason;  // §6: "not valid for this configuration", not a route of the gate
};

struct GateVerdict {
    Verdict verdict = Verdict::Fail;
    bool pass = false;  // verdict == Pass
    bool correctnessOk = false, speedOk = false;
    // The pattern that decides the verdict: a non-finite one; else the failing one with the smallest
    // upper end; else (on the bar, or pass) the smallest lower end. None when nothing was measured.
    std::optional<std::string> worstPattern;
    std::vector<std::string> onTheBar;  // the patterns on the bar
    std::optional<int> moreRounds;      // ON THE BAR: the most any of them would likely need
    std::string line;    // "PASS ..." / "ON THE BAR ...: why" / "FAIL ...: why", at most kVerdictLineMax characters
    std::string detail;  // every reason in full (each pattern on the bar, the rounds that would decide it)
};

// The decode speed a saving buys, in the user's units: tokens per second gained when a decode
// step of `referenceStepMs` ms per token (gate.reference_step_ms) gets `savingMs` shorter,
// 1000 / (ref - saving) - 1000 / ref (+0.50 ms on 15.79 ms: +2.07 tok/s). NaN when a figure is
// not finite or the saving is not shorter than the step; a negative saving loses speed.
double decodeSpeedGain(double savingMs, double referenceStepMs);

inline constexpr std::size_t kVerdictLineMax = 200;

struct CandidateGate {
    std::string candidate;
    std::string baseline = "baseline";
    int layers = 43;
    double minSavingMs = 0.50;
    // gate.reference_step_ms: the table and the JSON also give each saving as decode speed
    // (decodeSpeedGain); none: savings in ms only.
    std::optional<double> referenceStepMs;
    std::vector<Projection> projections;  // valid patterns only
    std::vector<NotValidPattern> notValid;
    CaseCounts correctness;
    GateVerdict verdict;
};

// Fills in the verdict. Projections' `verdict` and `passes` are recomputed against minSavingMs.
CandidateGate evaluateGate(std::string candidate, std::vector<Projection> projections, CaseCounts correctness,
                           double minSavingMs, int layers, std::vector<NotValidPattern> notValid = {});

// The pattern that decides the verdict of these projections against the bar (the rule of
// GateVerdict::worstPattern; the report marks it from a card's projections); none when empty.
std::optional<std::string> decidingPattern(std::vector<Projection> projections, double minSavingMs);

// pattern | projected saving / N layers (median) | 95% CI | pass, then the verdict line.
std::string formatGateTable(const CandidateGate&);
nlohmann::json gateJson(const CandidateGate&);

}  // namespace zp::probe
