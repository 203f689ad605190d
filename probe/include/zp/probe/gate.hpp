// The gate of CONTRACT §8: a candidate variant against the baseline chain.
//
// Per valid route pattern a Projection of the saving over `layers` layers with its 95%
// bootstrap interval (timing_stats.hpp); a pattern passes when the interval's lower end is
// ≥ gate.min_saving_ms. A median above the bar with a lower end below it does not pass.
//
// The verdict passes only when BOTH hold:
//  - speed: every valid pattern passes (at least one pattern was measured);
//  - correctness: failed == 0 and passed > 0 on the case set. Skipped cases (a device that
//    flushes subnormals, §2) are neither passes nor failures: they are named in the verdict
//    but do not block it, and they cannot make up for no case having passed.
// The verdict names the worst pattern (the smallest lower end) whether it passes or not.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zp/probe/timing_stats.hpp"

namespace zp::sched {

struct Projection {
    std::string pattern;
    double medianMs = 0, ciLowMs = 0, ciHighMs = 0;  // projected saving over `layers` layers
    bool passes = false;                             // ciLowMs >= min_saving_ms (false when not finite)
    std::size_t pairs = 0;
    double baselineMedianNs = 0, candidateMedianNs = 0;  // per layer, for the table
};

// One pattern's projection from interleaved samples in ns (baselineNs[i], candidateNs[i] = pair i).
Projection projectPattern(std::string pattern, std::span<const double> baselineNs, std::span<const double> candidateNs,
                          int layers, double minSavingMs, const BootstrapOptions& = {});

struct CaseCounts {
    int passed = 0, failed = 0, skipped = 0;
};

struct NotValidPattern {
    std::string pattern, reason;  // §6: "not valid for this configuration", not a route of the gate
};

struct GateVerdict {
    bool pass = false;
    bool correctnessOk = false, speedOk = false;
    std::optional<std::string> worstPattern;  // smallest lower end; none when nothing was measured
    std::string line;                         // "PASS ..." / "FAIL ...: why", one line
};

struct CandidateGate {
    std::string candidate;
    std::string baseline = "baseline";
    int layers = 43;
    double minSavingMs = 0.50;
    std::vector<Projection> projections;  // valid patterns only
    std::vector<NotValidPattern> notValid;
    CaseCounts correctness;
    GateVerdict verdict;
};

// Fills in the verdict. Projections' `passes` is recomputed against minSavingMs.
CandidateGate evaluateGate(std::string candidate, std::vector<Projection> projections, CaseCounts correctness,
                           double minSavingMs, int layers, std::vector<NotValidPattern> notValid = {});

// pattern | projected saving / N layers (median) | 95% CI | pass, then the verdict line.
std::string formatGateTable(const CandidateGate&);
nlohmann::json gateJson(const CandidateGate&);

}  // namespace zp::sched
