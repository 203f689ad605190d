#include "zp/probe/gate.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace zp::sched {
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

std::string casesText(const CaseCounts& c) {
    std::string s = fmt::format("{}/{} cases passed", c.passed, c.passed + c.failed + c.skipped);
    if (c.skipped) s += fmt::format(", {} skipped", c.skipped);
    return s;
}

}  // namespace

Projection projectPattern(std::string pattern, std::span<const double> baselineNs, std::span<const double> candidateNs,
                          int layers, double minSavingMs, const BootstrapOptions& o) {
    const PairedSaving s = pairedSaving(baselineNs, candidateNs, o);
    const ProjectedSaving p = projectSaving(s, layers);
    Projection r;
    r.pattern = std::move(pattern);
    r.medianMs = p.medianMs;
    r.ciLowMs = p.ciLowMs;
    r.ciHighMs = p.ciHighMs;
    r.passes = r.ciLowMs >= minSavingMs;
    r.pairs = s.pairs;
    r.baselineMedianNs = s.baseline.median;
    r.candidateMedianNs = s.candidate.median;
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

    int below = 0;
    for (Projection& p : g.projections) {
        p.passes = finite(p) && p.ciLowMs >= minSavingMs;
        below += !p.passes;
    }
    GateVerdict& v = g.verdict;
    v.correctnessOk = correctness.failed == 0 && correctness.passed > 0;
    v.speedOk = !g.projections.empty() && below == 0;
    v.pass = v.correctnessOk && v.speedOk;

    const Projection* worst = nullptr;
    for (const Projection& p : g.projections)
        if (!worst || worseThan(p, *worst)) worst = &p;
    if (worst) v.worstPattern = worst->pattern;

    std::vector<std::string> why;
    if (correctness.failed > 0)
        why.push_back(fmt::format("correctness: {} of {} cases failed", correctness.failed,
                                  correctness.passed + correctness.failed + correctness.skipped));
    else if (correctness.passed == 0)
        why.push_back(fmt::format("correctness: no case passed ({} skipped), so nothing shows the candidate is correct",
                                  correctness.skipped));

    std::string speed;
    if (!worst) {
        speed = "no valid route pattern was measured";
    } else if (!finite(*worst)) {
        speed = fmt::format("worst pattern {}: the projection is not a finite number (median {}, 95% CI [{}, {}])",
                            worst->pattern, worst->medianMs, worst->ciLowMs, worst->ciHighMs);
    } else if (!worst->passes) {
        speed = fmt::format("worst pattern {}: 95% CI lower end {} < {} over {} layers", worst->pattern,
                            ms(worst->ciLowMs), ms(minSavingMs), layers);
        if (worst->medianMs >= minSavingMs)
            speed +=
                fmt::format(" (its median {} is above the bar, but a median alone does not pass)", ms(worst->medianMs));
        if (below > 1) speed += fmt::format("; {} of {} patterns below the bar", below, g.projections.size());
    }

    if (v.pass) {
        v.line = fmt::format(
            "PASS {}: every pattern's 95% CI lower end >= {} over {} layers; worst pattern {} at {}; {}", g.candidate,
            ms(minSavingMs), layers, worst->pattern, ms(worst->ciLowMs), casesText(correctness));
    } else {
        if (!speed.empty())
            why.push_back(speed);
        else
            why.push_back(
                fmt::format("speed alone would pass (worst pattern {} at {})", worst->pattern, ms(worst->ciLowMs)));
        std::string joined;
        for (const auto& w : why) joined += (joined.empty() ? "" : "; ") + w;
        v.line = fmt::format("FAIL {}: {}", g.candidate, joined);
    }
    return g;
}

std::string formatGateTable(const CandidateGate& g) {
    const std::string savingHead = fmt::format("projected saving / {} layers (median)", g.layers);
    const std::size_t w = std::max<std::size_t>(savingHead.size(), 12);
    std::string out =
        fmt::format("{} vs {}: gate = 95% CI lower end >= {:.2f} ms\n", g.candidate, g.baseline, g.minSavingMs);
    out += fmt::format("  {:<22} | {:>{}} | {:^21} | {}\n", "pattern", savingHead, w, "95% CI", "pass");
    out += fmt::format("  {:-<22}-+-{:-<{}}-+-{:-<21}-+-{:-<4}\n", "", "", w, "", "");
    for (const Projection& p : g.projections) {
        const std::string ci = fmt::format("[{:.3f}, {:.3f}] ms", p.ciLowMs, p.ciHighMs);
        std::string mark = p.passes ? "yes" : "NO";
        if (g.verdict.worstPattern && *g.verdict.worstPattern == p.pattern) mark += "  <- worst";
        out += fmt::format("  {:<22} | {:>{}} | {:>21} | {}\n", p.pattern, fmt::format("{:.3f} ms", p.medianMs), w, ci,
                           mark);
    }
    for (const NotValidPattern& n : g.notValid)
        out += fmt::format("  {:<22} | not valid for this configuration: {}\n", n.pattern, n.reason);
    out += fmt::format("  correctness: {} passed, {} failed, {} skipped\n", g.correctness.passed, g.correctness.failed,
                       g.correctness.skipped);
    out += "verdict: " + g.verdict.line + "\n";
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
        j["projections"].push_back({{"pattern", p.pattern},
                                    {"median_ms", num(p.medianMs)},
                                    {"ci_low_ms", num(p.ciLowMs)},
                                    {"ci_high_ms", num(p.ciHighMs)},
                                    {"passes", p.passes},
                                    {"pairs", p.pairs},
                                    {"baseline_median_ns", num(p.baselineMedianNs)},
                                    {"candidate_median_ns", num(p.candidateMedianNs)}});
    j["not_valid"] = nlohmann::json::array();
    for (const NotValidPattern& n : g.notValid)
        j["not_valid"].push_back({{"pattern", n.pattern}, {"reason", n.reason}});
    j["verdict"] = {
        {"pass", g.verdict.pass},
        {"correctness_ok", g.verdict.correctnessOk},
        {"speed_ok", g.verdict.speedOk},
        {"worst_pattern", g.verdict.worstPattern ? nlohmann::json(*g.verdict.worstPattern) : nlohmann::json(nullptr)},
        {"line", g.verdict.line}};
    return j;
}

}  // namespace zp::sched
