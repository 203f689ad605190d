#include "repeat_run.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "card.hpp"
#include "child_process.hpp"
#include "report_cards.hpp"
#include "zp/probe/file_io.hpp"
#include "zp/probe/gate_repeat.hpp"
#include "zp/probe/input_error.hpp"
#include "zp/probe/json_compare.hpp"

namespace zp::app {
namespace fs = std::filesystem;
namespace {

// The command line without the options the repeat sets per run.
std::vector<std::string> childArgs(const std::vector<std::string>& args) {
    return withoutOptions(args, {"--gate-repeat", "--out", "--report", "--trace"});
}

// What a run's card measured, for telling repeats of one gate from runs of different ones: the
// card's config section, its device (name, type, driver, kernel tuning) and per candidate the
// patterns its gate compared.
nlohmann::json measuredBy(const nlohmann::json& card) {
    nlohmann::json device = nlohmann::json::object();
    if (card.contains("device") && card["device"].is_object())
        for (const char* k : {"name", "type", "driver", "kernel_tuning"})
            if (card["device"].contains(k)) device[k] = card["device"][k];
    nlohmann::json compared = nlohmann::json::object();
    if (card.contains("gate") && card["gate"].is_object() && card["gate"].contains("candidates"))
        for (const auto& g : card["gate"]["candidates"]) {
            nlohmann::json patterns = nlohmann::json::array();
            if (g.contains("projections"))
                for (const auto& p : g["projections"]) patterns.push_back(p.value("pattern", ""));
            compared[g.value("candidate", "")] = patterns;
        }
    return {{"config", card.contains("config") ? card["config"] : nlohmann::json()},
            {"device", device},
            {"compared", compared}};
}

// The gates of one run directory's cards as one card: one card keeps the candidate names,
// several prefix "cardN ". `measured` (when given): per card file, measuredBy its card.
nlohmann::json gatesOfRun(const fs::path& dir, nlohmann::json* measured = nullptr) {
    static const std::regex cardName(R"(card(\d+)\.json)");
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir))
        if (std::regex_match(e.path().filename().string(), cardName)) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    nlohmann::json merged = {{"gate", {{"candidates", nlohmann::json::array()}}}};
    if (measured) *measured = nlohmann::json::object();
    for (const auto& f : files) {
        const nlohmann::json card = loadCard(f).card;
        if (measured) (*measured)[f.filename().string()] = measuredBy(card);
        if (!card.contains("gate") || card["gate"].is_null()) continue;
        for (auto g : card["gate"]["candidates"]) {
            if (files.size() > 1)
                g["candidate"] = fmt::format("card{} {}", card.value("card", 0), g["candidate"].get<std::string>());
            merged["gate"]["candidates"].push_back(g);
        }
    }
    return merged;
}

// Prints the repeat table, writes <outDir>/gate_repeat.json and the report when asked.
void writeRepeatSummary(const std::vector<nlohmann::json>& cards, const std::string& outDir,
                        const std::string& reportFile) {
    const probe::RepeatSummary summary = probe::summarizeRepeats(cards);
    const std::string table = probe::formatRepeatTable(summary);
    fmt::print("{}", table);
    const fs::path json = fs::path(outDir) / "gate_repeat.json";
    probe::writeFileAtomically(json, probe::repeatJson(summary).dump(2) + "\n", "--out");
    fmt::print("wrote {}\n", json.string());
    if (!reportFile.empty()) {
        std::vector<LoadedCard> loaded;
        for (std::size_t i = 0; i < cards.size(); ++i) loaded.push_back({fmt::format("run {}", i + 1), cards[i]});
        writeCardsReport(reportFile, loaded, {}, table);
        fmt::print("wrote {}\n", reportFile);
    }
}

}  // namespace

int runGateRepeat(const std::vector<std::string>& args, int runs, const std::string& outDir,
                  const std::string& reportFile) {
    if (runs < 2) throw probe::InputError(fmt::format("--gate-repeat {}: compare at least 2 runs", runs));
    const std::vector<std::string> base = childArgs(args);
    std::vector<nlohmann::json> cards;
    int worst = 0;
    static const std::regex cardName(R"(card(\d+)\.json)");
    for (int r = 1; r <= runs; ++r) {
        const fs::path dir = fs::path(outDir) / fmt::format("repeat-{}", r);
        fs::create_directories(dir);
        for (const auto& e : fs::directory_iterator(dir))
            if (std::regex_match(e.path().filename().string(), cardName)) fs::remove(e.path());  // no stale card
        std::vector<std::string> a = base;
        a.insert(a.end(), {"--out", dir.string()});
        const auto t0 = std::chrono::steady_clock::now();
        const int rc = runSelf(a, dir / "ze-probe.log", "--gate-repeat");
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        fmt::print("gate repeat: run {} of {} exited {} after {:.1f} s ({})\n", r, runs, rc, s,
                   (dir / "ze-probe.log").string());
        std::fflush(stdout);
        if (rc == 2) {
            fmt::print(stderr, "ze-probe: error: --gate-repeat: run {} rejected its input; see {}\n", r,
                       (dir / "ze-probe.log").string());
            return 2;
        }
        worst = std::max(worst, rc);
        cards.push_back(gatesOfRun(dir));
        // each run's verdicts as it ends, so that a repeat cut short still shows the runs it finished
        fmt::print("gate repeat: run {} of {}: {}\n", r, runs, probe::formatRunVerdicts(cards.back()));
        std::fflush(stdout);
    }
    writeRepeatSummary(cards, outDir, reportFile);
    return worst;
}

int mergeGateRepeats(const std::vector<std::string>& runDirs, const std::string& outDir,
                     const std::string& reportFile) {
    if (runDirs.size() < 2)
        throw probe::InputError(
            fmt::format("gate-repeat-merge: {} run directory given: compare at least 2", runDirs.size()));
    for (const auto& d : runDirs)
        if (!fs::is_directory(d)) throw probe::InputError("gate-repeat-merge: " + d + ": not a directory");
    probe::refuseRepeatedPaths(std::vector<fs::path>(runDirs.begin(), runDirs.end()), "gate-repeat-merge");
    std::vector<nlohmann::json> cards;
    nlohmann::json first;
    for (const auto& d : runDirs) {
        nlohmann::json measured;
        nlohmann::json g;
        try {  // a card without a gate's verdicts as the table reads them: an older ze-probe's, or edited
            g = gatesOfRun(d, &measured);
            (void)probe::summarizeRepeats({g});
        } catch (const nlohmann::json::exception& e) {
            throw probe::InputError(
                "gate-repeat-merge: " + d + ": a card without the gate as this ze-probe writes it (" + e.what() +
                "): merge the runs of one ze-probe of card schema " + std::to_string(kCardSchemaVersion));
        }
        if (g["gate"]["candidates"].empty())
            throw probe::InputError("gate-repeat-merge: " + d + ": no card with a gate in it");
        // Repeats of one gate only: runs of another config, device or set of variants and patterns
        // would be compared as if they were the same measurement.
        if (cards.empty())
            first = std::move(measured);
        else if (measured != first)
            throw probe::InputError("gate-repeat-merge: " + runDirs.front() + " and " + d +
                                    " are not runs of one gate (" +
                                    probe::describeJsonDifferences(first, measured, runDirs.front(), d) +
                                    "): merge the repeats of one configuration only");
        cards.push_back(std::move(g));
    }
    fs::create_directories(outDir);
    writeRepeatSummary(cards, outDir, reportFile);
    return 0;
}

}  // namespace zp::app
