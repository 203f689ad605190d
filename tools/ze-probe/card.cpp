#include "card.hpp"

#include <fstream>
#include <stdexcept>

#include "zp/probe/file_io.hpp"
#include "zp/probe/input_error.hpp"
#include "zp/probe/json_schema.hpp"

namespace zp::app {

const char* const kGateCiMethod =
    "where an independent rerun's estimate lands (a 95% prediction interval over the block medians of the paired "
    "differences; each block started anew: in a fresh process, or on chains rebuilt as one builds them, "
    "timings.block_isolation): mean +- t(0.975, blocks - 1) * sd * sqrt(2 / blocks), never narrower than one "
    "sample's timer step; it contains Student's CI of the mean (+- t * sd / sqrt(blocks)), so a verdict under it "
    "holds under that CI too";

nlohmann::json cardJson(const probe::Config& cfg, const nlohmann::json& device, const Correctness& c,
                        const CardTiming* t, const std::string& timingSkipped) {
    nlohmann::json j = {
        {"schema", kCardSchemaVersion}, {"contract", cfg.contract},
        {"card", cfg.shape.card},       {"device", device},
        {"config", probe::toJson(cfg)}, {"correctness", correctnessJson(c)},
        {"timings", nullptr},           {"projections", nullptr},
        {"launch_floor", nullptr},      {"gate", nullptr},
    };
    if (!t) {
        j["timing_skipped"] = timingSkipped;
        return j;
    }
    j["timings"] = timingsJson(t->timings, t->settings, t->bandwidth);
    j["projections"] = projectionsJson(t->timings, cfg);
    j["launch_floor"] = launchFloorJson(t->timings);
    nlohmann::json gates = nlohmann::json::array();
    for (const auto& g : t->gates) gates.push_back(probe::gateJson(g));
    j["gate"] = {{"min_saving_ms", cfg.gateMinSavingMs},
                 {"reference_step_ms", cfg.gateReferenceStepMs},
                 {"layers", cfg.layers},
                 {"time", "device"},
                 {"ci", kGateCiMethod},
                 {"verdicts",
                  "pass: CI lower end >= min_saving_ms on every valid pattern and no case failed; fail: CI upper end < "
                  "min_saving_ms on some pattern, or a case failed; on_the_bar: neither (never a pass)"},
                 {"budget_s", t->budgetS},
                 {"candidates", gates}};
    return j;
}

void writeCard(const std::filesystem::path& file, const nlohmann::json& card) {
    const auto problems = probe::schemaProblems(cardSchema(), card);
    if (!problems.empty()) {
        std::string all;
        for (const auto& p : problems) all += "\n  " + p;
        throw std::logic_error("the card does not follow docs/card.schema.json:" + all);
    }
    // Through a temporary file renamed into place: a failure is bad input naming the path, and a
    // killed run never leaves half a card.
    probe::writeFileAtomically(file, card.dump(2) + "\n", "--out");
}

}  // namespace zp::app
