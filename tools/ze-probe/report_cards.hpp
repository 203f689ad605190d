// `ze-probe report CARD.json... [--sweep FILE.jsonl] -o OUT.html|OUT.svg`: renders saved
// results, several cards side by side (the cards of one run, or runs of two devices).
//
// The page leads with one overview: candidates x patterns, each cell the projected saving
// (median and 95% CI, ms over `layers`) coloured pass (CI low end >= the bar), fail (CI high
// end < the bar) or on the bar (the CI straddles it). Then per candidate one small panel per
// pattern, each on its own scale (a noisy pattern cannot flatten the others), the per-kernel
// breakdown (stacked median time of each kernel, baseline and every candidate, per pattern),
// the launch floor and the roofline fraction, as real <table>s. SVG output holds the
// overview and the panels only.
//
// A card read from a file renders when it follows the schema of its version, 2 or 3
// (result_schemas.hpp); parts a card lacks (null timings of --no-timing) are said to be missing.
// Verdicts: `verdict.pass` (bool, schema 2) or `verdict.verdict` ("pass", "fail", "on_the_bar").
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace zp::app {

struct LoadedCard {
    std::string label;  // "card0 · NVIDIA H200" (the file name when there is no device)
    nlohmann::json card;
};

// Throws probe::InputError naming the file: unreadable, not JSON, not a card, a schema this
// ze-probe does not read, or a card that breaks its schema (checkCardRead: the JSON path of the
// first problem).
LoadedCard loadCard(const std::filesystem::path&);
// A results file: a card (loadCard's checks) or a step.json (`step` set; then `card` is it).
// InputError naming the file otherwise.
struct LoadedResult {
    LoadedCard card;
    bool step = false;
};
LoadedResult loadResult(const std::filesystem::path&);

// The report's format from the output path: ".html" or ".svg"; anything else is an
// InputError naming the path (nothing is written).
enum class ReportFormat { html, svg };
ReportFormat reportFormatOf(const std::filesystem::path&);

// `repeatTable`: the table of `--gate-repeat` (verdicts and spread of medians over fresh
// processes), shown after the overview when given. `step`: a step.json (null: none), shown
// first: how and where the cards ran, the overview of the gate on the step, the cards' and
// the step's medians side by side, and the interference (alone vs together).
std::string cardsReportHtml(const std::vector<LoadedCard>&, const std::vector<nlohmann::json>& sweepRows = {},
                            const std::string& repeatTable = {}, const nlohmann::json& step = nullptr);
// The step's gate is one more row group of the overview.
std::string cardsReportSvg(const std::vector<LoadedCard>&, const nlohmann::json& step = nullptr);
// Renders by the path's extension and writes it; InputError on a bad extension or I/O error.
void writeCardsReport(const std::filesystem::path&, const std::vector<LoadedCard>&,
                      const std::vector<nlohmann::json>& sweepRows = {}, const std::string& repeatTable = {},
                      const nlohmann::json& step = nullptr);

}  // namespace zp::app
