// step.json: the expert-parallel decode step of several cards (README "Cards"). A decode step
// waits for the slowest card, so per pattern and variant the step's time in a round is the
// largest device time any card took in that round. Rounds are aligned by index: round i of
// block j of every card (the cards' own timed rounds, as their card<N>.json keeps them in
// timings.patterns.<p>.variants.<v>.samples.device_ns and block_ends). A block counts as many
// rounds as the card with the fewest in it, and the step as many blocks as the card with the
// fewest; what the others have beyond is dropped and counted.
//
// The gate on the step is CONTRACT §8's, unchanged (probe::projectPattern, hence
// classifyInterval): baseline step vs candidate step, paired per round, the interval over
// blocks, the bar and layers of the cards' config; correctness summed over the cards (a case
// failed on any card fails the step). The step's timer floor is the coarsest card's.
//
// Everything here is computed from the cards' JSON, so step.json can be recomputed from the
// card files alone; what the cards cannot say (where each card ran, whether at once, the
// medians alone) comes in StepRun.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "result_schemas.hpp"
#include "zp/probe/gate.hpp"

namespace zp::app {

// One card's timed rounds of one pattern.
struct CardPatternRounds {
    std::vector<std::size_t> blockEnds;                   // sample index one past each block's last
    std::map<std::string, std::vector<double>> deviceNs;  // variant -> one sample per round, round order
    double resolutionNs = 0;                              // one sample's timer step (tick / B)
};

struct CardRounds {
    int card = 0;
    std::vector<std::string> patterns;  // timed, in the card's order
    std::map<std::string, CardPatternRounds> rounds;
    std::vector<std::string> candidates;              // the card's gate candidates, in order
    std::map<std::string, probe::CaseCounts> counts;  // per variant, over the case set
    std::vector<probe::NotValidPattern> notValid;     // patterns not valid for the card's configuration
    int layers = 0;
    double minSavingMs = 0;
    std::optional<double> referenceStepMs;  // gate.reference_step_ms (older cards: none)
};

// The rounds of a card<N>.json with timing; InputError naming `what` when it has none or they
// are malformed.
CardRounds cardRoundsOf(const nlohmann::json& card, const std::string& what);

struct StepVariant {
    std::string variant;
    std::vector<double> stepNs;    // per aligned round: the slowest card's device time
    std::vector<int> slowestCard;  // per aligned round: which card that was
};

struct StepPattern {
    std::string pattern;
    std::vector<std::size_t> blockEnds;  // of the aligned rounds
    std::size_t droppedRounds = 0;       // rounds some card had beyond the alignment (per variant)
    double resolutionNs = 0;             // the coarsest card's
    std::vector<StepVariant> variants;   // baseline first, then the cards' order
    const StepVariant* find(const std::string& variant) const;
};

// The step of one pattern over cards `ids` (rounds[k] is card ids[k]'s), for the variants
// every card timed.
StepPattern combineRounds(const std::string& pattern, const std::vector<int>& ids,
                          const std::vector<const CardPatternRounds*>& rounds);

// Every pattern timed on all of `cards`, and the gate on the step of every candidate all of
// them ran. Patterns timed on some cards only are not valid for the step (the reason names
// the cards); so are the patterns not valid for some card's configuration.
struct Step {
    std::vector<StepPattern> patterns;
    std::vector<probe::CandidateGate> gates;
    std::vector<probe::NotValidPattern> notValid;
    int layers = 0;
    double minSavingMs = 0;
    std::optional<double> referenceStepMs;  // gate.reference_step_ms (older cards: none)
};
Step combineCards(const std::vector<CardRounds>& cards);

// What the card files cannot say.
struct CardPlacement {
    int card = 0;
    std::string deviceSpec;  // as --device takes it: the device index, or the kind when shared
    std::string device;      // the device's name
    std::string file;        // card<N>.json, relative to step.json
};
// One card's median device time alone and with the other cards running (interference).
struct AloneTogether {
    std::string pattern, variant;
    double aloneNs = 0, togetherNs = 0;
};
struct StepRun {
    bool concurrent = false;
    std::string why;  // how the cards ran, and when not at once why not
    std::vector<CardPlacement> placement;
    std::map<int, std::vector<AloneTogether>> interference;  // card -> figures; empty when not at once
    std::string interferenceSkipped;                         // why there are none
};

nlohmann::json stepJson(const Step&, const StepRun&);
// Text for the run's output: the step's medians, its gate table and verdicts, the interference.
std::string formatStep(const Step&, const StepRun&);

// Checks `step` against the schema (an internal error if it breaks it) and writes it atomically.
void writeStep(const std::filesystem::path&, const nlohmann::json& step);

}  // namespace zp::app
