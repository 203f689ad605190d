#include "zp/probe/gate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace zp::probe {
namespace {

bool finite(const Projection& p) {
    return std::isfinite(p.medianMs) && std::isfinite(p.ciLowMs) && std::isfinite(p.ciHighMs);
}

// NaN sorts first: a pattern whose bound is unknown is the worst there is.
bool worseThan(const Projection& a, const Projection& b) {
    if (std::isnan(a.ciLowMs)) return !std::isnan(b.ciLowMs);
    if (std::isnan(b.ciLowMs)) return false;
    return a.ciLowMs < b.ciLowMs;
}

std::string ms(double v) { return std::isfinite(v) ? fmt::format("{:.3f} ms", v) : fmt::format("{} ms", v); }
// A figure of the short line: 3 decimals, or 4 significant digits when that would run long.
std::string shortMs(double v) { return std::fabs(v) < 1e6 ? fmt::format("{:.3f}", v) : fmt::format("{:.4g}", v); }

std::string casesText(const CaseCounts& c) {
    std::string s = fmt::format("{}/{} cases passed", c.passed, c.passed + c.failed + c.skipped);
    if (c.skipped) s += fmt::format(", {} skipped", c.skipped);
    return s;
}

}  // namespace

namespace {

// Each verdict's two spellings, in one row: the table's and the JSON key.
struct VerdictNames {
    std::string_view name, key;
};
VerdictNames namesOf(Verdict v) {
    switch (v) {
        case Verdict::Pass: return {"PASS", "pass"};
        case Verdict::OnTheBar: return {"ON THE BAR", "on_the_bar"};
        case Verdict::Fail: break;
    }
    return {"FAIL", "fail"};
}

}  // namespace

std::string_view verdictName(Verdict v) { return namesOf(v).name; }
std::string_view verdictKey(Verdict v) { return namesOf(v).key; }

Verdict classifyInterval(double ciLowMs, double ciHighMs, double minSavingMs) {
    if (!std::isfinite(ciLowMs) || !std::isfinite(ciHighMs)) return Verdict::Fail;  // unknown is never a pass
    if (ciLowMs >= minSavingMs) return Verdict::Pass;
    if (ciHighMs < minSavingMs) return Verdict::Fail;
    return Verdict::OnTheBar;
}

namespace {

constexpr int kBlocksCap = 1000;

// The projections classified (verdict set): decidingPattern's rule.
const Projection* decidingProjection(std::span<const Projection> projections) {
    const Projection* decides = nullptr;
    for (const Projection& p : projections)
        if (!finite(p) && (!decides || worseThan(p, *decides))) decides = &p;
    if (!decides)
        for (const Projection& p : projections)
            if (p.verdict == Verdict::Fail && (!decides || p.ciHighMs < decides->ciHighMs)) decides = &p;
    if (!decides)
        for (const Projection& p : projections)
            if (!decides || worseThan(p, *decides)) decides = &p;
    return decides;
}

void classify(Projection& p, double minSavingMs) {
    p.verdict = finite(p) ? classifyInterval(p.ciLowMs, p.ciHighMs, minSavingMs) : Verdict::Fail;
    p.passes = p.verdict == Verdict::Pass;
    p.moreRounds.reset();
    if (p.verdict != Verdict::OnTheBar || p.blocks < 2) return;
    const double center = 0.5 * (p.ciLowMs + p.ciHighMs);
    const int k = blocksToDecide(p.blockSdMs, std::fabs(center - minSavingMs), 0.95, kBlocksCap);
    if (k < kBlocksCap)
        p.moreRounds = std::max<int>(1, k - int(p.blocks)) * int(std::max<std::size_t>(1, p.roundsPerBlock));
}

}  // namespace

std::optional<std::string> decidingPattern(std::vector<Projection> projections, double minSavingMs) {
    for (Projection& p : projections) classify(p, minSavingMs);
    const Projection* p = decidingProjection(projections);
    return p ? std::optional<std::string>(p->pattern) : std::nullopt;
}

Projection projectPattern(std::string pattern, std::span<const std::vector<double>> baselineNs,
                          std::span<const std::vector<double>> candidateNs, int layers, double minSavingMs,
                          double resolutionNs) {
    const BlockedSaving s = blockedSaving(baselineNs, candidateNs, 0.95, resolutionNs);
    const ProjectedSaving p = projectSaving(s, layers);
    Projection r;
    r.pattern = std::move(pattern);
    r.medianMs = p.medianMs;
    r.ciLowMs = p.ciLowMs;
    r.ciHighMs = p.ciHighMs;
    r.pairs = s.pairs;
    r.blocks = s.blocks;
    r.roundsPerBlock = s.pairs / s.blocks;
    r.blockSdMs = s.blockSd * double(layers) * 1e-6;
    r.baselineMedianNs = s.baseline.median;
    r.candidateMedianNs = s.candidate.median;
    classify(r, minSavingMs);
    return r;
}

CandidateGate evaluateGate(std::string candidate, std::vector<Projection> projections, CaseCounts correctness,
                           double minSavingMs, int layers, std::vector<NotValidPattern> notValid) {
    CandidateGate g;
    g.candidate = std::move(candidate);
    g.layers = layers;
    g.minSavingMs = minSavingMs;
    g.projections = std::move(projections);
    g.notValid = std::move(notValid);
    g.correctness = correctness;

    int failing = 0, passing = 0;
    GateVerdict& v = g.verdict;
    for (Projection& p : g.projections) {
        classify(p, minSavingMs);
        failing += p.verdict == Verdict::Fail;
        passing += p.verdict == Verdict::Pass;
        if (p.verdict == Verdict::OnTheBar) {
            v.onTheBar.push_back(p.pattern);
            if (p.moreRounds) v.moreRounds = std::max(v.moreRounds.value_or(0), *p.moreRounds);
        }
    }
    v.correctnessOk = correctness.failed == 0 && correctness.passed > 0;
    v.speedOk = !g.projections.empty() && passing == int(g.projections.size());
    if (!v.correctnessOk || g.projections.empty() || failing > 0)
        v.verdict = Verdict::Fail;
    else
        v.verdict = v.speedOk ? Verdict::Pass : Verdict::OnTheBar;
    v.pass = v.verdict == Verdict::Pass;

    // The pattern that decides the verdict, named by the line, the table's marker and the card's
    // worst_pattern alike: a non-finite one first; else the failing one most clearly below the bar
    // (smallest upper end); else the one on the bar furthest from passing (smallest lower end); else,
    // all passing, the one closest to the bar (smallest lower end).
    const Projection* decides = decidingProjection(g.projections);
    if (decides) v.worstPattern = decides->pattern;

    std::vector<std::string> why;
    if (correctness.failed > 0)
        why.push_back(fmt::format("correctness: {} of {} cases failed", correctness.failed,
                                  correctness.passed + correctness.failed + correctness.skipped));
    else if (correctness.passed == 0)
        why.push_back(fmt::format("correctness: no case passed ({} skipped), so nothing shows the candidate is correct",
                                  correctness.skipped));

    std::string speed;
    if (!decides) {
        speed = "no valid route pattern was measured";
    } else if (!finite(*decides)) {
        speed = fmt::format("pattern {}: the projection is not a finite number (median {}, 95% CI [{}, {}])",
                            decides->pattern, decides->medianMs, decides->ciLowMs, decides->ciHighMs);
    } else if (failing > 0) {
        speed = fmt::format("pattern {}: 95% CI [{}, {}] lies below {} over {} layers", decides->pattern,
                            ms(decides->ciLowMs), ms(decides->ciHighMs), ms(minSavingMs), layers);
        if (failing > 1) speed += fmt::format("; {} of {} patterns below the bar", failing, g.projections.size());
    } else if (!v.onTheBar.empty()) {
        std::string names;
        for (const Projection& p : g.projections) {
            if (p.verdict != Verdict::OnTheBar) continue;
            names += names.empty() ? "" : "; ";
            names +=
                fmt::format("{} 95% CI [{}, {}] holds {}", p.pattern, ms(p.ciLowMs), ms(p.ciHighMs), ms(minSavingMs));
            if (p.medianMs >= minSavingMs) names += " (its median is above the bar, but a median alone does not pass)";
            names += p.moreRounds ? fmt::format(", about {} more timed rounds would likely decide it", *p.moreRounds)
                                  : std::string(", the saving sits at the bar: more rounds would not likely decide it");
        }
        speed = "on the bar: " + names;
    }

    // The detail: every reason in full (the card keeps it); the line: the verdict, what decided
    // it, and what else fits in kVerdictLineMax characters.
    if (v.verdict == Verdict::Pass) {
        v.detail = fmt::format(
            "PASS {}: every pattern's 95% CI lower end >= {} over {} layers; worst pattern {} at {}; {}", g.candidate,
            ms(minSavingMs), layers, decides->pattern, ms(decides->ciLowMs), casesText(correctness));
    } else {
        if (!speed.empty())
            why.push_back(speed);
        else
            why.push_back(
                fmt::format("speed alone would pass (worst pattern {} at {})", decides->pattern, ms(decides->ciLowMs)));
        std::string joined;
        for (const auto& w : why) joined += (joined.empty() ? "" : "; ") + w;
        v.detail = fmt::format("{} {}: {}", verdictName(v.verdict), g.candidate, joined);
    }
    const auto ci = [](const Projection& p) {
        return fmt::format("95% CI [{}, {}] ms", shortMs(p.ciLowMs), shortMs(p.ciHighMs));
    };
    std::vector<std::string> clauses;  // the first always, the others while they fit
    if (correctness.failed > 0)
        clauses.push_back(fmt::format("{} of {} cases failed", correctness.failed,
                                      correctness.passed + correctness.failed + correctness.skipped));
    else if (correctness.passed == 0)
        clauses.push_back(fmt::format("no case passed ({} skipped)", correctness.skipped));
    if (!decides) {
        clauses.push_back("no valid route pattern was measured");
    } else if (!finite(*decides)) {
        clauses.push_back(fmt::format("{}'s projection is not a finite number", decides->pattern));
    } else if (failing > 0) {
        clauses.push_back(
            fmt::format("{} {} below the {} ms bar", decides->pattern, ci(*decides), shortMs(minSavingMs)));
        if (failing > 1) clauses.push_back(fmt::format("{} of {} patterns below", failing, g.projections.size()));
    } else if (v.verdict == Verdict::OnTheBar) {
        clauses.push_back(
            fmt::format("{} {} holds the {} ms bar", decides->pattern, ci(*decides), shortMs(minSavingMs)));
        if (v.onTheBar.size() > 1)
            clauses.push_back(fmt::format("{} of {} patterns on the bar", v.onTheBar.size(), g.projections.size()));
        if (v.moreRounds) clauses.push_back(fmt::format("about {} more rounds would likely decide it", *v.moreRounds));
    } else if (v.verdict == Verdict::Pass) {
        clauses.push_back(
            fmt::format("every pattern >= {} ms; closest {} {}", shortMs(minSavingMs), decides->pattern, ci(*decides)));
        if (correctness.skipped) clauses.push_back(casesText(correctness));
    } else {  // a correctness failure alone: the speed would pass
        clauses.push_back(fmt::format("speed alone would pass (closest {} {})", decides->pattern, ci(*decides)));
    }
    v.line = fmt::format("{} {}: {}", verdictName(v.verdict), g.candidate, clauses.front());
    for (std::size_t i = 1; i < clauses.size(); ++i)
        if (v.line.size() + 2 + clauses[i].size() <= kVerdictLineMax) v.line += "; " + clauses[i];
    if (v.line.size() > kVerdictLineMax) v.line = v.line.substr(0, kVerdictLineMax - 3) + "...";
    return g;
}

double decodeSpeedGain(double savingMs, double referenceStepMs) {
    if (!std::isfinite(savingMs) || !std::isfinite(referenceStepMs) || referenceStepMs <= 0 ||
        savingMs >= referenceStepMs)
        return std::numeric_limits<double>::quiet_NaN();
    return 1000.0 / (referenceStepMs - savingMs) - 1000.0 / referenceStepMs;
}

namespace {
std::string tokensText(double gain) {
    return std::isfinite(gain) ? fmt::format("{:+.2f} tok/s", gain) : std::string("–");
}
}  // namespace

std::string formatGateTable(const CandidateGate& g) {
    const std::string savingHead = fmt::format("projected saving / {} layers (median)", g.layers);
    const std::size_t w = std::max<std::size_t>(savingHead.size(), 12);
    const bool speed = g.referenceStepMs.has_value();
    const std::string speedHead = "decode speed", speedRule(14, '-');
    std::string out =
        fmt::format("{} vs {}: pass = 95% CI lower end >= {:.2f} ms, fail = upper end below it, else on the bar\n",
                    g.candidate, g.baseline, g.minSavingMs);
    if (speed)
        out += fmt::format(
            "  decode speed: the median saving against a reference step of {:.2f} ms per token ({:.2f} tok/s; "
            "gate.reference_step_ms): the bar, {:.2f} ms, is {}\n",
            *g.referenceStepMs, 1000.0 / *g.referenceStepMs, g.minSavingMs,
            tokensText(decodeSpeedGain(g.minSavingMs, *g.referenceStepMs)));
    out += fmt::format("  {:<22} | {:>{}} | {:^21} | {}{}\n", "pattern", savingHead, w, "95% CI",
                       speed ? fmt::format("{:>14} | ", speedHead) : "", "verdict");
    out += fmt::format("  {:-<22}-+-{:-<{}}-+-{:-<21}-+-{}{:-<4}\n", "", "", w, "", speed ? speedRule + "-+-" : "", "");
    for (const Projection& p : g.projections) {
        const std::string ci = fmt::format("[{:.3f}, {:.3f}] ms", p.ciLowMs, p.ciHighMs);
        std::string mark(verdictName(p.verdict));
        if (g.verdict.worstPattern && *g.verdict.worstPattern == p.pattern) mark += "  <- decides the verdict";
        const std::string gain =
            speed ? fmt::format("{:>14} | ", tokensText(decodeSpeedGain(p.medianMs, *g.referenceStepMs))) : "";
        out += fmt::format("  {:<22} | {:>{}} | {:>21} | {}{}\n", p.pattern, fmt::format("{:.3f} ms", p.medianMs), w,
                           ci, gain, mark);
    }
    for (const NotValidPattern& n : g.notValid)
        out += fmt::format("  {:<22} | not valid for this configuration: {}\n", n.pattern, n.reason);
    out += fmt::format("  correctness: {} passed, {} failed, {} skipped\n", g.correctness.passed, g.correctness.failed,
                       g.correctness.skipped);
    out += "verdict: " + g.verdict.line + "\n";
    if (g.verdict.detail != g.verdict.line) out += "  detail: " + g.verdict.detail + "\n";
    return out;
}

nlohmann::json gateJson(const CandidateGate& g) {
    // JSON has no NaN/Inf: a non-finite figure is written as null.
    auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
    nlohmann::json j = {
        {"candidate", g.candidate},
        {"baseline", g.baseline},
        {"layers", g.layers},
        {"min_saving_ms", g.minSavingMs},
        {"confidence", 0.95},
        {"correctness",
         {{"passed", g.correctness.passed}, {"failed", g.correctness.failed}, {"skipped", g.correctness.skipped}}},
    };
    j["projections"] = nlohmann::json::array();
    for (const Projection& p : g.projections)
        j["projections"].push_back(
            {{"pattern", p.pattern},
             {"median_ms", num(p.medianMs)},
             {"ci_low_ms", num(p.ciLowMs)},
             {"ci_high_ms", num(p.ciHighMs)},
             {"verdict", verdictKey(p.verdict)},
             {"passes", p.passes},
             {"pairs", p.pairs},
             {"blocks", p.blocks},
             {"rounds_per_block", p.roundsPerBlock},
             {"block_sd_ms", num(p.blockSdMs)},
             {"more_rounds", p.moreRounds ? nlohmann::json(*p.moreRounds) : nlohmann::json(nullptr)},
             {"baseline_median_ns", num(p.baselineMedianNs)},
             {"candidate_median_ns", num(p.candidateMedianNs)}});
    if (g.referenceStepMs) {
        j["reference_step_ms"] = *g.referenceStepMs;
        for (std::size_t i = 0; i < g.projections.size(); ++i) {
            const Projection& p = g.projections[i];
            const double ref = *g.referenceStepMs;
            j["projections"][i]["decode_gain_tok_s"] = {{"median", num(decodeSpeedGain(p.medianMs, ref))},
                                                        {"ci_low", num(decodeSpeedGain(p.ciLowMs, ref))},
                                                        {"ci_high", num(decodeSpeedGain(p.ciHighMs, ref))}};
        }
    }
    j["not_valid"] = nlohmann::json::array();
    for (const NotValidPattern& n : g.notValid)
        j["not_valid"].push_back({{"pattern", n.pattern}, {"reason", n.reason}});
    j["verdict"] = {
        {"verdict", verdictKey(g.verdict.verdict)},
        {"pass", g.verdict.pass},
        {"on_the_bar", g.verdict.onTheBar},
        {"more_rounds", g.verdict.moreRounds ? nlohmann::json(*g.verdict.moreRounds) : nlohmann::json(nullptr)},
        {"correctness_ok", g.verdict.correctnessOk},
        {"speed_ok", g.verdict.speedOk},
        {"worst_pattern", g.verdict.worstPattern ? nlohmann::json(*g.verdict.worstPattern) : nlohmann::json(nullptr)},
        {"line", g.verdict.line},
        {"detail", g.verdict.detail}};
    return j;
}

}  // namespace zp::probe
