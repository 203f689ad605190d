// card<N>.json: the one writer of ze-probe's card, and the one schema it follows
// (docs/card.schema.json, built into the tool). cardJson() names every top-level key; the
// sections come from their modules (config, correctness, timings, gate). writeCard() checks
// the card against the schema before it writes (an internal error if not: the tool never
// writes a card its schema does not describe), then writes a temporary file and renames it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "case_run.hpp"
#include "result_schemas.hpp"
#include "timing.hpp"
#include "zp/probe/config.hpp"
#include "zp/probe/gate.hpp"

namespace zp::app {

extern const char* const kGateCiMethod;  // the interval's method, one sentence

struct CardTiming {
    const std::vector<PatternTiming>& timings;
    const TimingSettings& settings;
    const Bandwidth& bandwidth;
    const std::vector<probe::CandidateGate>& gates;
    double budgetS = 0;
};

// `timing` null: the card of a run without timing, `timingSkipped` says why.
nlohmann::json cardJson(const probe::Config&, const nlohmann::json& device, const Correctness&,
                        const CardTiming* timing, const std::string& timingSkipped = "");

void writeCard(const std::filesystem::path&, const nlohmann::json& card);

}  // namespace zp::app
