// The schemas of ze-probe's result files, built into the tool from docs/: card<N>.json
// (schema 3, docs/card.schema.json; and schema 2, which older ze-probes wrote,
// docs/card-2.schema.json) and step.json (docs/step.schema.json). The writers check every file
// against them before writing it (card.cpp, step.cpp); every reader of a result file (ze-probe
// report, gate-repeat-merge, --gate-repeat's runs) goes through checkCardRead / checkStepRead,
// so a card that lacks a key, carries one no writer writes or holds a value of another type is
// refused, naming the file and where, never drawn or merged as if it were whole.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace zp::app {

inline constexpr int kCardSchemaVersion = 3;  // 3: blocks, B per sample, three verdicts
inline constexpr int kOldestCardSchemaRead = 2;
inline constexpr int kStepSchemaVersion = 1;

// The schema of card<N>.json of `version` (kOldestCardSchemaRead .. kCardSchemaVersion).
const nlohmann::json& cardSchema(int version = kCardSchemaVersion);
// docs/step.schema.json, its $defs completed from the card's schema (the gate's candidates and
// the summaries are the card's: one definition, in card.schema.json).
const nlohmann::json& stepSchema();

// A card read back from `file`: returns when it is an object whose integer "schema" is a
// version this ze-probe reads and which follows that version's schema; else a probe::InputError
// "<file>: card schema 9: this ze-probe reads card schemas 2 to 3; ..." or "<file>: not a card
// of schema 3 as ze-probe writes it (docs/card.schema.json): /gate/ci: missing (a required key)"
// (the first problem by the schema checker's walk, and how many more there are).
void checkCardRead(const nlohmann::json& card, const std::string& file);
// The same for a step.json (schema 1).
void checkStepRead(const nlohmann::json& step, const std::string& file);

}  // namespace zp::app
