#include "step.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "card.hpp"
#include "timing.hpp"
#include "zp/probe/file_io.hpp"
#include "zp/probe/input_error.hpp"
#include "zp/probe/json_schema.hpp"
#include "zp/probe/timing_stats.hpp"

namespace zp::app {

namespace {

using nlohmann::json;

bool isCandidate(const std::string& v) { return v != "baseline" && v != "m1_oracle"; }

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

double med(const std::vector<double>& x) { return x.empty() ? std::nan("") : probe::median(x); }

const json& at(const json& j, const char* key, const std::string& what) {
    if (!j.is_object() || !j.contains(key)) throw probe::InputError(fmt::format("{}: no \"{}\"", what, key));
    return j[key];
}

std::string cardList(const std::vector<int>& cards) {
    std::string s;
    for (int c : cards) s += (s.empty() ? "" : ", ") + std::to_string(c);
    return s;
}

}  // namespace

CardRounds cardRoundsOf(const json& card, const std::string& what) {
    CardRounds r;
    r.card = at(card, "card", what).get<int>();
    const json& timings = at(card, "timings", what);
    const json& gate = at(card, "gate", what);
    if (!timings.is_object() || !gate.is_object())
        throw probe::InputError(what + ": a card without timing (--no-timing?): no rounds to make a step of");
    r.layers = at(gate, "layers", what).get<int>();
    r.minSavingMs = at(gate, "min_saving_ms", what).get<double>();
    if (gate.contains("reference_step_ms") && gate["reference_step_ms"].is_number())
        r.referenceStepMs = gate["reference_step_ms"].get<double>();
    for (const json& cand : at(gate, "candidates", what)) {
        r.candidates.push_back(cand.at("candidate").get<std::string>());
        if (r.candidates.size() == 1)
            for (const json& nv : cand.at("not_valid"))
                r.notValid.push_back({nv.at("pattern").get<std::string>(), nv.at("reason").get<std::string>()});
    }
    // The card's timing order: its first candidate's projections (timings.patterns is keyed by name).
    const json& patterns = at(timings, "patterns", what);
    if (!gate["candidates"].empty())
        for (const json& p : gate["candidates"][0].at("projections"))
            if (patterns.contains(p.at("pattern").get<std::string>())) r.patterns.push_back(p["pattern"]);
    for (auto it = patterns.begin(); it != patterns.end(); ++it)
        if (std::find(r.patterns.begin(), r.patterns.end(), it.key()) == r.patterns.end())
            r.patterns.push_back(it.key());
    for (const std::string& p : r.patterns) {
        const json& pt = patterns[p];
        CardPatternRounds& cr = r.rounds[p];
        cr.blockEnds = at(pt, "block_ends", what).get<std::vector<std::size_t>>();
        const double batch = std::max(1, at(pt, "batch", what).get<int>());
        cr.resolutionNs = at(pt, "tick_ns", what).get<double>() / batch;
        const json& vars = at(pt, "variants", what);
        for (auto v = vars.begin(); v != vars.end(); ++v)
            cr.deviceNs[v.key()] = at(at(*v, "samples", what), "device_ns", what).get<std::vector<double>>();
    }
    const json& byVariant = at(at(card, "correctness", what), "by_variant", what);
    for (auto v = byVariant.begin(); v != byVariant.end(); ++v) {
        probe::CaseCounts& n = r.counts[v.key()];
        for (const json& row : *v)
            if (row.value("valid", false)) {
                n.passed += row.value("passed", 0);
                n.failed += row.value("failed", 0);
                n.skipped += row.value("skipped", 0);
            }
    }
    return r;
}

const StepVariant* StepPattern::find(const std::string& variant) const {
    for (const auto& v : variants)
        if (v.variant == variant) return &v;
    return nullptr;
}

StepPattern combineRounds(const std::string& pattern, const std::vector<int>& ids,
                          const std::vector<const CardPatternRounds*>& rounds) {
    if (ids.size() != rounds.size() || rounds.empty())
        throw std::invalid_argument("combineRounds: one card id per card's rounds, at least one card");
    StepPattern sp;
    sp.pattern = pattern;
    // The variants every card timed: baseline first, then the first card's (name order).
    std::vector<std::string> names;
    for (const auto& [v, samples] : rounds.front()->deviceNs) {
        bool everywhere = true;
        for (const auto* r : rounds) everywhere = everywhere && r->deviceNs.count(v);
        if (everywhere) names.push_back(v);
    }
    std::stable_partition(names.begin(), names.end(), [](const std::string& v) { return v == "baseline"; });
    // blocks[k][v][j]: card k's block j of variant v.
    std::vector<std::vector<std::vector<std::vector<double>>>> blocks(rounds.size());
    std::size_t nBlocks = SIZE_MAX;
    for (std::size_t k = 0; k < rounds.size(); ++k) {
        sp.resolutionNs = std::max(sp.resolutionNs, rounds[k]->resolutionNs);
        for (const auto& v : names) {
            blocks[k].push_back(splitBlocks(rounds[k]->deviceNs.at(v), rounds[k]->blockEnds));
            nBlocks = std::min(nBlocks, blocks[k].back().size());
        }
    }
    if (names.empty()) nBlocks = 0;
    std::vector<std::size_t> perBlock(nBlocks, SIZE_MAX);
    for (std::size_t j = 0; j < nBlocks; ++j)
        for (const auto& card : blocks)
            for (const auto& variant : card) perBlock[j] = std::min(perBlock[j], variant[j].size());
    for (std::size_t vi = 0; vi < names.size(); ++vi) {
        StepVariant sv;
        sv.variant = names[vi];
        for (std::size_t j = 0; j < nBlocks; ++j)
            for (std::size_t i = 0; i < perBlock[j]; ++i) {
                std::size_t slowest = 0;
                for (std::size_t k = 1; k < rounds.size(); ++k)
                    if (blocks[k][vi][j][i] > blocks[slowest][vi][j][i]) slowest = k;
                sv.stepNs.push_back(blocks[slowest][vi][j][i]);
                sv.slowestCard.push_back(ids[slowest]);
            }
        std::size_t dropped = 0;
        for (const auto* r : rounds) dropped += r->deviceNs.at(names[vi]).size() - sv.stepNs.size();
        sp.droppedRounds = std::max(sp.droppedRounds, dropped);
        sp.variants.push_back(std::move(sv));
    }
    for (std::size_t j = 0; j < nBlocks; ++j) sp.blockEnds.push_back((j ? sp.blockEnds.back() : 0) + perBlock[j]);
    return sp;
}

Step combineCards(const std::vector<CardRounds>& cards) {
    if (cards.empty()) throw std::invalid_argument("combineCards: no cards");
    Step step;
    step.layers = cards.front().layers;
    step.minSavingMs = cards.front().minSavingMs;
    step.referenceStepMs = cards.front().referenceStepMs;
    std::vector<int> ids;
    for (const auto& c : cards) ids.push_back(c.card);
    // Patterns in the first card's order, then any the others add.
    std::vector<std::string> patterns;
    for (const auto& c : cards)
        for (const auto& p : c.patterns)
            if (std::find(patterns.begin(), patterns.end(), p) == patterns.end()) patterns.push_back(p);
    for (const auto& p : patterns) {
        std::vector<const CardPatternRounds*> rounds;
        std::vector<int> missing;
        for (const auto& c : cards) {
            const auto it = c.rounds.find(p);
            if (it == c.rounds.end())
                missing.push_back(c.card);
            else
                rounds.push_back(&it->second);
        }
        if (!missing.empty()) {
            step.notValid.push_back({p, fmt::format("not timed on card {}", cardList(missing))});
            continue;
        }
        StepPattern sp = combineRounds(p, ids, rounds);
        // The cards' order: baseline, m1_oracle, then the candidates as the gate lists them.
        const auto rank = [&](const StepVariant& v) {
            const auto& cands = cards.front().candidates;
            if (v.variant == "baseline") return std::ptrdiff_t(-2);
            if (v.variant == "m1_oracle") return std::ptrdiff_t(-1);
            return std::find(cands.begin(), cands.end(), v.variant) - cands.begin();
        };
        std::stable_sort(sp.variants.begin(), sp.variants.end(),
                         [&](const StepVariant& a, const StepVariant& b) { return rank(a) < rank(b); });
        if (sp.blockEnds.empty() || sp.variants.empty())
            step.notValid.push_back({p, "no round was timed on every card"});
        else
            step.patterns.push_back(std::move(sp));
    }
    for (const auto& c : cards)
        for (const auto& nv : c.notValid)
            if (std::none_of(step.notValid.begin(), step.notValid.end(),
                             [&](const probe::NotValidPattern& n) { return n.pattern == nv.pattern; }))
                step.notValid.push_back({nv.pattern, fmt::format("card {}: {}", c.card, nv.reason)});

    for (const std::string& cand : cards.front().candidates) {
        bool everywhere = true;
        for (const auto& c : cards)
            everywhere = everywhere && std::find(c.candidates.begin(), c.candidates.end(), cand) != c.candidates.end();
        if (!everywhere || !isCandidate(cand)) continue;
        probe::CaseCounts counts;
        for (const auto& c : cards) {
            const auto it = c.counts.find(cand);
            if (it == c.counts.end()) continue;
            counts.passed += it->second.passed;
            counts.failed += it->second.failed;
            counts.skipped += it->second.skipped;
        }
        std::vector<probe::Projection> proj;
        for (const auto& sp : step.patterns) {
            const StepVariant* base = sp.find("baseline");
            const StepVariant* got = sp.find(cand);
            if (!base || !got) continue;
            const auto a = splitBlocks(base->stepNs, sp.blockEnds), b = splitBlocks(got->stepNs, sp.blockEnds);
            if (a.size() < 2) {  // no between-block spread: no interval, never a pass (as projectTiming)
                probe::Projection p;
                p.pattern = sp.pattern;
                p.medianMs = p.ciLowMs = p.ciHighMs = std::nan("");
                p.blocks = a.size();
                p.pairs = base->stepNs.size();
                proj.push_back(p);
                continue;
            }
            proj.push_back(probe::projectPattern(sp.pattern, a, b, step.layers, step.minSavingMs, sp.resolutionNs));
        }
        step.gates.push_back(
            probe::evaluateGate(cand, std::move(proj), counts, step.minSavingMs, step.layers, step.notValid));
        step.gates.back().referenceStepMs = step.referenceStepMs;
    }
    return step;
}

json stepJson(const Step& step, const StepRun& run) {
    json placement = json::array();
    std::vector<int> ids;
    for (const auto& p : run.placement) {
        placement.push_back({{"card", p.card}, {"device_spec", p.deviceSpec}, {"device", p.device}, {"file", p.file}});
        ids.push_back(p.card);
    }
    json patterns = json::object();
    for (const auto& sp : step.patterns) {
        json vars = json::object();
        for (const auto& sv : sp.variants) {
            json slowest = json::object();
            for (int c : sv.slowestCard) slowest[std::to_string(c)] = slowest.value(std::to_string(c), 0) + 1;
            // combineCards keeps no pattern without rounds: the summary has samples.
            vars[sv.variant] = {{"step_ns", summaryJson(sv.stepNs)},
                                {"samples", sv.stepNs},
                                {"slowest_card", sv.slowestCard},
                                {"slowest_count", slowest}};
        }
        patterns[sp.pattern] = {{"blocks", sp.blockEnds.size()},
                                {"block_ends", sp.blockEnds},
                                {"rounds", sp.blockEnds.empty() ? 0 : sp.blockEnds.back()},
                                {"dropped_rounds", sp.droppedRounds},
                                {"resolution_ns", sp.resolutionNs},
                                {"variants", std::move(vars)}};
    }
    json gates = json::array();
    for (const auto& g : step.gates) gates.push_back(probe::gateJson(g));
    json notValid = json::array();
    for (const auto& nv : step.notValid) notValid.push_back({{"pattern", nv.pattern}, {"reason", nv.reason}});
    json interference = nullptr;
    if (!run.interference.empty()) {
        interference = json::array();
        for (const auto& [card, rows] : run.interference)
            for (const auto& r : rows)
                interference.push_back({{"card", card},
                                        {"pattern", r.pattern},
                                        {"variant", r.variant},
                                        {"alone_median_ns", num(r.aloneNs)},
                                        {"together_median_ns", num(r.togetherNs)},
                                        {"ratio", num(r.togetherNs / r.aloneNs)}});
    }
    return {
        {"schema", kStepSchemaVersion},
        {"cards", ids},
        {"concurrent", run.concurrent},
        {"how", run.why},
        {"placement", placement},
        {"step_time",
         "per round, the largest device time (first kernel start to last kernel end, ns, one sample as the card "
         "keeps it) of any card in that round: a decode step waits for the slowest card"},
        {"alignment",
         "round i of block j of every card; a block has as many rounds as the card with the fewest in it, the step as "
         "many blocks as the card with the fewest; the rest is dropped (dropped_rounds, summed over the cards)"},
        {"patterns", patterns},
        {"not_valid", notValid},
        {"gate",
         {{"min_saving_ms", step.minSavingMs},
          {"layers", step.layers},
          {"time", "step"},
          {"ci", kGateCiMethod},
          {"verdicts",
           "CONTRACT §8 on step times, baseline step vs candidate step paired per round; correctness summed over the "
           "cards: pass: CI lower end >= min_saving_ms on every pattern of the step and no case failed on any card; "
           "fail: CI upper end < min_saving_ms on some pattern, or a case failed; on_the_bar: neither (never a pass)"},
          {"reference_step_ms", step.referenceStepMs ? json(*step.referenceStepMs) : json(nullptr)},
          {"candidates", gates}}},
        {"interference", interference},
        {"interference_skipped", run.interference.empty() ? json(run.interferenceSkipped) : json(nullptr)},
    };
}

std::string formatStep(const Step& step, const StepRun& run) {
    std::string out = fmt::format(
        "step of cards {}: {}\n",
        [&] {
            std::vector<int> ids;
            for (const auto& p : run.placement) ids.push_back(p.card);
            return cardList(ids);
        }(),
        run.why);
    for (const auto& p : run.placement)
        out += fmt::format("  card {} on device {} ({})\n", p.card, p.deviceSpec, p.device);
    if (step.patterns.empty()) return out + "  no pattern was timed on every card: no step\n";
    out +=
        "step time = per round the slowest card's device time; medians in us (slowest card: rounds it was slowest)\n";
    for (const auto& sp : step.patterns) {
        out += fmt::format("  {:<22} {} blocks, {} rounds{}\n", sp.pattern, sp.blockEnds.size(),
                           sp.blockEnds.empty() ? 0 : sp.blockEnds.back(),
                           sp.droppedRounds ? fmt::format(", {} dropped to align the cards", sp.droppedRounds) : "");
        for (const auto& sv : sp.variants) {
            std::map<int, int> slowest;
            for (int c : sv.slowestCard) ++slowest[c];
            std::string who;
            for (const auto& [c, n] : slowest) who += fmt::format("{}card {} x{}", who.empty() ? "" : ", ", c, n);
            out += fmt::format("    {:<20} {:>9.1f}   ({})\n", sv.variant, med(sv.stepNs) / 1e3, who);
        }
    }
    out += fmt::format(
        "gate on the step (CONTRACT §8 on step times): saving = baseline step - candidate step per "
        "layer x {} layers; 95% CI = {}\n",
        step.layers, kGateCiMethod);
    for (const auto& g : step.gates) out += probe::formatGateTable(g);
    out += "step verdicts:\n";
    if (step.gates.empty()) out += "  (no candidate ran on every card)\n";
    for (const auto& g : step.gates) out += fmt::format("  {:<20} {}\n", g.candidate, g.verdict.line);
    if (run.interference.empty()) {
        out += "interference: not measured (" + run.interferenceSkipped + ")\n";
    } else {
        out += "interference: median device time alone vs with the other cards running, us\n";
        for (const auto& [card, rows] : run.interference)
            for (const auto& r : rows)
                out += fmt::format("  card {} {:<22} {:<20} alone {:>9.1f}  together {:>9.1f}  x{:.3f}\n", card,
                                   r.pattern, r.variant, r.aloneNs / 1e3, r.togetherNs / 1e3, r.togetherNs / r.aloneNs);
    }
    return out;
}

void writeStep(const std::filesystem::path& file, const json& step) {
    const auto problems = probe::schemaProblems(stepSchema(), step);
    if (!problems.empty()) {
        std::string all;
        for (const auto& p : problems) all += "\n  " + p;
        throw std::logic_error("step.json does not follow docs/step.schema.json:" + all);
    }
    probe::writeFileAtomically(file, step.dump(2) + "\n", "--out");
}

}  // namespace zp::app
