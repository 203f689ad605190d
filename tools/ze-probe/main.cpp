// ze-probe: runs the MoE expert-FFN chain's cases on a device (or the host oracle), checks
// them bit for bit against docs/contract.md, then times the variants and reports the gate of
// CONTRACT §8. Exit codes: 0 all good, 1 a case failed, 2 bad input or usage (message on
// stderr). A failing gate verdict is a measurement, not an error: it does not change the code.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <set>

#include <unistd.h>

#include <string_view>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "card.hpp"
#include "cards_at_once.hpp"
#include "child_process.hpp"
#include "device_session.hpp"
#include "case_run.hpp"
#include "report_cards.hpp"
#include "repeat_run.hpp"
#include "step.hpp"
#include "sweep_run.hpp"
#include "timing.hpp"
#include "trace_json.hpp"
#include "zp/kernels/package.hpp"
#include "zp/runtime/ze.hpp"
#include "zp/cli/cli.hpp"
#include "zp/cli/option_values.hpp"
#include "zp/probe/case_io.hpp"
#include "zp/probe/sweep.hpp"
#include "zp/probe/compare.hpp"
#include "zp/probe/file_io.hpp"
#include "zp/probe/input_error.hpp"
#include "zp/scheduler/device_chain.hpp"
#include "zp/scheduler/device_errors.hpp"
#include "zp/scheduler/device_setup.hpp"
#include "zp/scheduler/kernel_modules.hpp"

namespace {

using namespace zp;
namespace fs = std::filesystem;

// docs/usage.md "Exit codes".
constexpr int kExitOk = 0, kExitCaseFailed = 1, kExitBadInput = 2, kExitDeviceError = 3;

struct Options {
    std::string configFile;
    std::vector<std::string> sets;
    std::string weightsFile, inputsFile, dumpFile;
    std::string variant;       // empty: every variant (with --inputs: baseline)
    std::string device;        // empty: the best device (first Intel GPU, else first zecl device)
    std::string kernelTuning;  // empty: the packaged tiles
    std::optional<scheduler::KernelTuning>
        tuning;  // kernelTuning parsed by run(); none: the device's recommended tiles
    std::string routePattern = "six_local";
    std::string outDir = "probe-out";
    std::optional<std::string> seedText;  // read strictly by strictValues()
    std::optional<std::uint64_t> seed;
    bool listDevices = false;
    bool json = false;  // --json: --list-devices as JSON
    bool kernels = false;
    // timing
    std::optional<int> repeats, warmup, blocks;
    std::optional<std::string> repeatsText, warmupText, blocksText, gateRepeatText,
        gateBudgetText;          // read by strictValues()
    double gateBudgetS = 0;      // --gate-budget: more blocks while a candidate is on the bar
    int gateRepeat = 0;          // --gate-repeat N: the gate N times in fresh processes
    std::string blockIsolation;  // --block-isolation process|rebuild; empty: the device's default
    // A child that times one block of its parent's run (hidden options, set by timeBlockInChild).
    std::string timingBlockChild;    // the JSON file the samples go to
    std::string timingBlockBatches;  // "pattern=B,...": the patterns to time, each with its B
    std::size_t timingBlockRotation = 0;
    std::vector<std::string> args;  // argv[1..], for --gate-repeat's children
    const CLI::App* app = nullptr;  // the parsed command line: which options it gives (given())
    bool noTiming = false;
    std::vector<std::string> cardLists;  // "0,1", read strictly by strictValues()
    std::vector<int> cards;
    bool cardsAtOnce = false;  // --cards-at-once: at once even on one shared device
    std::string traceFile, reportFile;
    // sweeps
    std::string sweepFile;
    std::string shard;  // --shard K/N
    bool resume = false, overwrite = false;
};

// The tools (never the library) point the loader at the Intel driver and zecl when the user
// has not set ZE_ENABLE_ALT_DRIVERS, so a fresh machine finds zecl without any setup: the
// device setup's default initialisation, also for the commands that open no device.
void initLevelZero() { runtime::init(scheduler::DeviceRequest{}.init); }

// Two --set of one key, or of a key and its group (swiglu.limit=7, swiglu={limit: 8}), or --set
// seed with --seed: refused, naming both, rather than the last one winning.
void checkSetsApart(const Options& o) {
    std::vector<std::string> keys;
    for (const auto& s : o.sets) keys.push_back(s.substr(0, s.find('=')));
    if (o.seedText) keys.push_back("seed");
    for (std::size_t i = 0; i < keys.size(); ++i)
        for (std::size_t j = 0; j < i; ++j) {
            const std::string& a = keys[j];
            const std::string& b = keys[i];
            const bool within = a == b ||
                                (b.size() > a.size() && b.compare(0, a.size(), a) == 0 && b[a.size()] == '.') ||
                                (a.size() > b.size() && a.compare(0, b.size(), b) == 0 && a[b.size()] == '.');
            if (!within) continue;
            auto named = [&](std::size_t k) {
                return k < o.sets.size() ? "--set " + o.sets[k] : "--seed " + *o.seedText;
            };
            throw probe::InputError(named(j) + " and " + named(i) + " both set " + (a.size() >= b.size() ? a : b) +
                                    ": give it once");
        }
}

probe::Config loadSettings(const Options& o) {
    checkSetsApart(o);
    probe::Config cfg = o.configFile.empty() ? probe::Config{} : probe::loadConfig(o.configFile);
    for (const auto& s : o.sets) probe::applySet(cfg, s);
    if (o.seed) cfg.seed = *o.seed;
    probe::validate(cfg);
    return cfg;
}

std::vector<probe::RoutePattern> choosePatterns(const std::string& name) {
    if (name == "all") return {probe::kAllRoutePatterns.begin(), probe::kAllRoutePatterns.end()};
    return {probe::parsePattern(name)};
}

// The values CLI11 would read loosely (a seed of -1 or 2^64 saturated, "0,,1" read as two
// cards), read strictly: out of range or malformed is bad input.
void strictValues(Options& o) {
    if (o.seedText) o.seed = cli::parseUnsignedOption(*o.seedText, "--seed", 0, UINT64_MAX);
    auto count = [](const std::optional<std::string>& text, const char* option, int least, int most) {
        return text ? std::optional<int>(cli::parseCountOption(*text, option, least, most)) : std::nullopt;
    };
    o.repeats = count(o.repeatsText, "--repeats", 1, 100000);
    o.warmup = count(o.warmupText, "--warmup", 0, 100000);
    o.blocks = count(o.blocksText, "--blocks", 2, 10000);
    if (o.gateRepeatText) o.gateRepeat = *count(o.gateRepeatText, "--gate-repeat", 2, 100);
    if (o.gateBudgetText) o.gateBudgetS = cli::parseDecimalOption(*o.gateBudgetText, "--gate-budget", 0.0, 86400.0);
    for (const auto& list : o.cardLists)
        for (std::uint64_t card : cli::parseUnsignedList(list, "--cards", 0, 1023)) o.cards.push_back(int(card));
}

// Whether the command line gives `option`, whatever its value.
bool given(const Options& o, std::string_view option) { return o.app->count(std::string(option)) > 0; }

// The files a run reads, and the files its options name for writing.
std::vector<probe::NamedFile> inputFiles(const Options& o) {
    return {
        {o.configFile, "--config"}, {o.weightsFile, "--weights"}, {o.inputsFile, "--inputs"}, {o.sweepFile, "--sweep"}};
}
std::vector<probe::NamedFile> optionOutputs(const Options& o) {
    return {{o.traceFile, "--trace"}, {o.reportFile, "--report"}, {o.dumpFile, "--dump"}};
}

// Flags that cannot both hold, and output paths that cannot be written: refused before any
// config is read or any device opened, so a run never ends in a write error after the work.
void checkBeforeWork(const Options& o) {
    if (o.resume && o.overwrite)
        throw probe::InputError("--resume and --overwrite contradict each other: continue the sweep or start afresh");
    const bool noTiming = o.noTiming || o.device == "host";
    for (const char* timing : {"--repeats", "--warmup", "--blocks", "--gate-budget", "--block-isolation"})
        if (noTiming && given(o, timing))
            throw probe::InputError(std::string(timing) + " sets the timing: not with --no-timing or --device host");
    // --inputs runs that one case, untimed, on one card: what would shape a gate's run is refused
    // rather than ignored.
    if (!o.inputsFile.empty())
        for (const char* gateOnly : {"--route-pattern", "--cards", "--cards-at-once", "--repeats", "--warmup",
                                     "--blocks", "--gate-budget", "--block-isolation", "--trace", "--report"})
            if (given(o, gateOnly))
                throw probe::InputError(std::string(gateOnly) +
                                        " shapes a run of the gate: not with --inputs (which checks that one case)");
    if (!o.cardLists.empty())
        for (const auto& set : o.sets)
            if (set.rfind("card=", 0) == 0)
                throw probe::InputError("--set " + set + " and --cards both say which card to play: give one");
    if (o.listDevices || o.kernels) return;
    probe::checkOutputDir(o.outDir, "--out");
    if (!o.traceFile.empty()) probe::checkOutputFile(o.traceFile, "--trace");
    if (!o.reportFile.empty()) probe::checkOutputFile(o.reportFile, "--report");
    if (!o.dumpFile.empty()) probe::checkOutputFile(o.dumpFile, "--dump");
    probe::checkOutputsApart(inputFiles(o), optionOutputs(o));
}

bool wantsTiming(const Options& o) { return !o.noTiming && o.device != "host"; }

// A run with no valid case checks nothing: bad input (the shape), named per pattern by the rule
// that rules it out, before any device work. One valid pattern is enough to run.
void checkSomePatternValid(const Options& o, const std::vector<probe::Config>& configs) {
    const std::vector<probe::RoutePattern> patterns = choosePatterns(o.routePattern);
    for (const auto& c : configs) {
        std::string why;
        bool someValid = false;
        for (auto p : patterns) {
            const auto reason = probe::patternInvalidReason(c.shape, p);
            someValid = someValid || !reason;
            if (reason) why += fmt::format("\n  {} {}", probe::patternName(p), *reason);
        }
        if (someValid) continue;
        const auto& s = c.shape;
        throw probe::InputError(fmt::format(
            "card {}: no case is valid to check at experts={} cards={} rows={} top_k={} ({} local experts on the "
            "card):{}\n(CONTRACT §6: give more experts, fewer rows or another --route-pattern)",
            s.card, s.experts, s.cards, s.rows, s.topK, s.localExperts(), why));
    }
}

// A run's results in --out are the files it writes there: a card, step.json or a gate-repeat's
// files that an earlier run left and this one would not replace (--cards 0,1 then card 0 alone)
// would read as this run's (ze-probe report o/card*.json). Refused, naming them, rather than
// deleted: they are the user's.
void checkNoStaleOutputs(const fs::path& out, const std::vector<probe::NamedFile>& written) {
    std::error_code ec;
    if (!fs::is_directory(out, ec)) return;
    auto numbered = [](std::string_view name, std::string_view head, std::string_view tail) {
        if (name.size() <= head.size() + tail.size() || name.substr(0, head.size()) != head ||
            name.substr(name.size() - tail.size()) != tail)
            return false;
        const std::string_view n = name.substr(head.size(), name.size() - head.size() - tail.size());
        return n.find_first_not_of("0123456789") == std::string_view::npos;
    };
    std::vector<std::string> stale;
    for (const auto& e : fs::directory_iterator(out, ec)) {
        const std::string name = e.path().filename().string();
        if (name != "step.json" && name != "gate_repeat.json" && !numbered(name, "card", ".json") &&
            !numbered(name, "repeat-", ""))
            continue;
        const bool rewritten = std::any_of(written.begin(), written.end(), [&](const probe::NamedFile& f) {
            return !f.path.empty() && probe::sameFile(f.path, e.path());
        });
        if (!rewritten) stale.push_back(name);
    }
    if (stale.empty()) return;
    std::sort(stale.begin(), stale.end());
    throw probe::InputError(fmt::format(
        "--out {} holds {} of an earlier run that this run would not replace, so the directory would mix two "
        "runs' results: remove {} or give another --out",
        out.string(), fmt::join(stale, ", "), stale.size() == 1 ? "it" : "them"));
}

// Every file a plain run writes under --out, checked before any device work (checkBeforeWork
// checks the options' own paths): the cards, step.json, the timing blocks' directory.
void checkRunOutputs(const Options& o, const std::vector<probe::Config>& configs) {
    const fs::path out(o.outDir);
    std::vector<probe::NamedFile> written = optionOutputs(o);
    for (const auto& c : configs) written.push_back({out / fmt::format("card{}.json", c.shape.card), "--out"});
    if (wantsTiming(o) && configs.size() > 1) written.push_back({out / "step.json", "--out"});
    probe::checkOutputsApart(inputFiles(o), written);
    if (o.timingBlockChild.empty()) checkNoStaleOutputs(out, written);  // a child times its parent's run
    for (const auto& c : configs) probe::checkOutputFile(out / fmt::format("card{}.json", c.shape.card), "--out");
    if (!wantsTiming(o)) return;
    if (configs.size() > 1) probe::checkOutputFile(out / "step.json", "--out");
    if (o.blockIsolation != "rebuild") probe::checkOutputDir(out / "blocks", "--out");
    if (!o.timingBlockChild.empty()) probe::checkOutputFile(o.timingBlockChild, "--timing-block-child");
}

// The variants a run covers: the on-device M1 oracle first (every other variant's `out` is
// checked against it too), then the chosen one or all of them.
std::vector<probe::Variant> chooseVariants(const std::string& name) {
    if (name.empty()) {
        std::vector<probe::Variant> all{probe::Variant::M1Oracle};
        for (probe::Variant v : probe::kAllVariants)
            if (v != probe::Variant::M1Oracle) all.push_back(v);
        return all;
    }
    const probe::Variant v = probe::parseVariant(name);
    if (v == probe::Variant::M1Oracle) return {v};
    return {probe::Variant::M1Oracle, v};
}

// --inputs: exactly that one case, optionally dumped with the tensors the executor produced.
int runOneCase(const Options& o, const probe::Config& cfg) {
    const auto& s = cfg.shape;
    const probe::Variant variant = o.variant.empty() ? probe::Variant::Baseline : probe::parseVariant(o.variant);
    probe::DType idsDType = probe::DType::I32;
    const auto in = probe::loadInputs(o.inputsFile, s, &idsDType);
    // The chain reads topk_ids at the file's width (I64: the route readers' int64 builds).
    const scheduler::IdWidth ids =
        idsDType == probe::DType::I64 ? scheduler::IdWidth::Int64 : scheduler::IdWidth::Int32;
    const auto weights = o.weightsFile.empty() ? probe::makeRandomWeights(s, cfg.seed)
                                               : probe::loadWeights(o.weightsFile, s, cfg.weightsPrefix);
    const auto silu = oracle::buildSiluTable(s.swigluAlpha);
    const auto want = oracle::runChain(s, weights, in, silu);

    std::unique_ptr<app::DeviceSession> session;
    app::Executor exec = app::Executor::hostM1();
    app::ExecutorResult got;
    if (o.device == "host") {
        got = exec.run(app::CaseRun{s, weights, in, silu, nullptr});
        // The host oracle's tensors, limited to what the variant materialises.
        got.outputs = want;
        got.materialised = probe::materialised(variant);
    } else {
        initLevelZero();
        session =
            std::make_unique<app::DeviceSession>(o.device, s, std::vector<probe::Variant>{variant}, o.tuning, ids);
        session->uploadWeights(weights, {});
        got = session->executors().front().run(app::CaseRun{s, weights, in, silu, nullptr});
        fmt::print("device: {} ({}; topk_ids {})\n", session->device().name(), session->kernelsText(),
                   scheduler::idWidthName(ids));
    }
    const auto mismatch = app::compareWithOracle(s, want, got);
    if (!o.dumpFile.empty()) {
        oracle::ChainOutputs dumped = got.outputs;
        if (variant == probe::Variant::M1Oracle) dumped.routes = want.routes;  // M1 does not compact
        probe::writeSafetensors(o.dumpFile, probe::dumpTensors(s, in, dumped, got.materialised, idsDType),
                                {{"variant", std::string(probe::variantName(variant))},
                                 {"device", session ? session->device().name() : "host"},
                                 {"contract", "1"}});
        fmt::print("wrote {}\n", o.dumpFile);
    }
    fmt::print("{}: {} compact rows, {}\n", o.inputsFile, want.routes.rows.size(),
               mismatch ? "FAILED: " + *mismatch : std::string("passed"));
    return mismatch ? kExitCaseFailed : kExitOk;
}

// Everything one card's run produces; printed and written by the caller, so cards played
// at once on several devices do not interleave their output.
struct CardOutcome {
    int card = 0;
    bool failed = false;
    bool nothingChecked = false;  // every case was not valid for the configuration, or skipped
    std::string text;
    nlohmann::json json;
    std::vector<probe::CandidateGate> gates;
    std::vector<app::TraceSpan> spans;
    std::string deviceName;
    std::string deviceIndex;                       // --list-devices' index ("host" for the oracle)
    std::vector<app::AloneTogether> interference;  // played at once: medians alone vs together
    std::string interferenceSkipped;               // why not, when played at once
    nlohmann::json blockSamples;                   // a timing-block child's samples (--timing-block-child)
};

probe::CaseCounts countsOf(const app::Correctness& c, const std::string& variant) {
    probe::CaseCounts n;
    for (const auto& [v, rows] : c.table)
        if (v == variant)
            for (const auto& r : rows) {
                n.passed += r.passed;
                n.failed += r.failed;
                n.skipped += r.skipped;
            }
    return n;
}

// --timing-block-batches "six_local=3,all_remote=2" as (pattern, B) pairs.
std::vector<std::pair<probe::RoutePattern, int>> parseBlockBatches(const std::string& text) {
    std::vector<std::pair<probe::RoutePattern, int>> out;
    std::size_t begin = 0;
    while (begin < text.size()) {
        std::size_t end = text.find(',', begin);
        if (end == std::string::npos) end = text.size();
        const std::string item = text.substr(begin, end - begin);
        const std::size_t eq = item.find('=');
        if (eq == std::string::npos)
            throw probe::InputError("--timing-block-batches: " + item + ": expected pattern=B");
        out.emplace_back(probe::parsePattern(item.substr(0, eq)),
                         cli::parseCountOption(item.substr(eq + 1), "--timing-block-batches", 1, 1 << 20));
        begin = end + 1;
    }
    if (out.empty()) throw probe::InputError("--timing-block-batches: no pattern");
    return out;
}

// One more timing block of `timings`' patterns (those in `only`, when given) in a fresh
// ze-probe process on the same card and device: the same options, each pattern's B of the
// first block, the round order continued. Its samples come back through a JSON file under
// <out>/blocks/, removed once read; its log stays there when it fails.
nlohmann::json timeBlockInChild(const Options& o, int card, const std::string& deviceSpec, int block,
                                const std::vector<app::PatternTiming>& timings, const std::set<std::string>* only) {
    std::string batches;
    for (const auto& pt : timings)
        if (!only || only->count(pt.pattern))
            batches += fmt::format("{}{}={}", batches.empty() ? "" : ",", pt.pattern, pt.batch);
    const fs::path dir = fs::path(o.outDir) / "blocks";
    fs::create_directories(dir);
    const fs::path file = dir / fmt::format("card{}-block{}.json", card, block);
    const fs::path log = dir / fmt::format("card{}-block{}.log", card, block);
    std::vector<std::string> args = app::withoutOptions(
        o.args, {"--gate-repeat", "--gate-budget", "--out", "--report", "--trace", "--cards", "--device"});
    std::erase(args, std::string("--cards-at-once"));  // a flag: the child plays its one card
    args.insert(args.end(), {"--cards", std::to_string(card), "--out", dir.string(), "--timing-block-child",
                             file.string(), "--timing-block-batches", batches, "--timing-block-rotation",
                             std::to_string(timings.front().variants.front().deviceNs.size())});
    if (!deviceSpec.empty()) args.insert(args.end(), {"--device", deviceSpec});
    std::error_code ec;
    fs::remove(file, ec);
    const int rc = app::runSelf(args, log, "timing block");
    if (rc != 0)
        throw scheduler::DeviceError(
            fmt::format("card {}: timing block {} (a fresh ze-probe process) exited {}; its log: {}", card, block + 1,
                        rc, log.string()));
    std::string text;  // the child's file, read bounded; none (or not JSON) is the child's failure
    try {
        text = probe::readTextFile(file, "timing block samples", probe::kMaxJsonFileBytes);
    } catch (const probe::InputError&) {}
    nlohmann::json samples = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (samples.is_discarded())
        throw scheduler::DeviceError(fmt::format("card {}: timing block {} wrote no samples to {}; its log: {}", card,
                                                 block + 1, file.string(), log.string()));
    fs::remove(file, ec);
    fs::remove(log, ec);
    fs::remove(dir, ec);  // only when empty
    return samples;
}

// One card's play, in steps over the card's device session, settings and timings: its cases
// checked, then (on a device, unless --no-timing) timed, projected and gated. playCard says who
// calls it and how.
class CardPlay {
public:
    CardPlay(const Options& o, const probe::Config& cfg, const std::string& deviceSpec, const std::string& progressTag,
             bool collectTrace, const std::string& trackPrefix, app::CardsAtOnce* atOnce, std::size_t slot)
        : o_(o),
          cfg_(cfg),
          deviceSpec_(deviceSpec),
          progressTag_(progressTag),
          collectTrace_(collectTrace),
          trackPrefix_(trackPrefix),
          atOnce_(atOnce),
          slot_(slot),
          timing_(wantsTiming(o)) {
        out_.card = cfg.shape.card;
        rs_.config = cfg;
        rs_.patterns = choosePatterns(o.routePattern);
        if (!o.weightsFile.empty()) rs_.fixedWeights = probe::loadWeights(o.weightsFile, cfg.shape, cfg.weightsPrefix);
        t0_ = std::chrono::steady_clock::now();
        tty_ = progressTag.empty() && ::isatty(STDERR_FILENO);
        rs_.progress = [this](const std::string& what) { progress(what); };
    }

    CardOutcome run() {
        openDevice();
        chooseTiming();
        if (!o_.timingBlockChild.empty()) return timeOneBlockOnly();
        timeBeforeCases();
        checkCases();
        if (!timing_) {
            const std::string why = o_.device == "host" ? "the host oracle has no device timestamps" : "--no-timing";
            out_.text += fmt::format("timing: skipped ({}); no gate verdicts\n", why);
            out_.json = withNotValid(app::cardJson(cfg_, deviceJson_, correctness_, nullptr, why));
            return std::move(out_);
        }
        timeAfterCases();
        out_.gates = evaluate();
        if (o_.gateBudgetS > 0) spendGateBudget();
        if (atOnce_) timeAlone();
        formatGates();
        const app::CardTiming cardTiming{timings_, ts_, bandwidth_, out_.gates, o_.gateBudgetS};
        out_.json = withNotValid(app::cardJson(cfg_, deviceJson_, correctness_, &cardTiming));
        return std::move(out_);
    }

private:
    void progress(const std::string& what) const {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
        // A terminal gets one line rewritten in place; a log gets one line per step.
        if (tty_)
            fmt::print(stderr, "\r  {:<30} {:6.1f} s", what, s);
        else
            fmt::print(stderr, "{}  {:<30} {:6.1f} s\n", progressTag_, what, s);
        std::fflush(stderr);
    }

    // The host oracle, or the device session with a chain of every variant asked for.
    void openDevice() {
        if (o_.device == "host") {
            executors_.push_back(app::Executor::hostM1());
            out_.deviceName = "host oracle";
            out_.deviceIndex = "host";
            return;
        }
        std::vector<probe::Variant> variants = chooseVariants(o_.variant);
        // The gate compares against baseline: a lone candidate brings it along.
        if (timing_ && std::find(variants.begin(), variants.end(), probe::Variant::Baseline) == variants.end() &&
            variants.back() != probe::Variant::M1Oracle)
            variants.insert(variants.begin() + 1, probe::Variant::Baseline);
        session_ = std::make_unique<app::DeviceSession>(deviceSpec_, cfg_.shape, variants, o_.tuning);
        executors_ = session_->executors();
        deviceJson_ = session_->describe();
        out_.deviceName = session_->device().name();
        out_.deviceIndex = std::to_string(session_->device().index);
        rs_.deviceFlushesSubnormals = session_->flushesSubnormals();
        // Weights from a file are uploaded once; random ones change with each case (§7).
        if (rs_.fixedWeights)
            session_->uploadWeights(*rs_.fixedWeights, {});
        else
            rs_.prepare = [this](const probe::Case& c, const oracle::LocalWeights& w) {
                session_->uploadWeights(w, c.touchedLocalExperts);
            };
        out_.text += fmt::format("device: {} [{}], {}\n", session_->device().name(),
                                 runtime::driverKindName(session_->device().kind), session_->kernelsText());
        for (const auto& [v, why] : session_->notValid())
            out_.text += fmt::format("variant {}: {}\n", probe::variantName(v), why);
    }

    // The timing settings of the device and the options; on a device that times the case set's
    // own executions, the recorder of those.
    void chooseTiming() {
        defaults_ = !o_.repeats && !o_.warmup && !o_.blocks;
        if (timing_) {
            ts_ = app::TimingSettings::defaultsFor(session_->device());
            if (!defaults_) {
                // A CPU asked for dedicated rounds gets fewer of them, in the §8 minimum of blocks.
                ts_ = {o_.repeats.value_or(ts_.caseSet ? 5 : ts_.repeats),
                       o_.warmup.value_or(ts_.caseSet ? 1 : ts_.warmup),
                       o_.blocks.value_or(ts_.caseSet ? app::TimingSettings{}.blocks : ts_.blocks), false};
            }
            if (ts_.caseSet) {
                recorder_ =
                    std::make_unique<app::CaseSetRecorder>(cfg_.shape, session_->device().kernelClock().nsPerTick,
                                                           collectTrace_ ? &out_.spans : nullptr, trackPrefix_);
                // Every second case opens a block on chains rebuilt as a fresh process builds them.
                rs_.prepare = [this, upload = rs_.prepare](const probe::Case& c, const oracle::LocalWeights& w) {
                    if (recorder_->opensBlock(c))
                        session_->rebuild(
                            w, rs_.fixedWeights ? std::span<const int>{} : std::span<const int>(c.touchedLocalExperts));
                    else if (upload)
                        upload(c, w);
                };
                session_->setExecutionSink([this](probe::Variant v, const app::CaseRun& run, double hostNs,
                                                  const std::vector<scheduler::KernelSpan>& spans) {
                    if (run.kase) recorder_->record(std::string(probe::variantName(v)), *run.kase, hostNs, spans);
                });
            }
        }
        if (timing_ && !o_.blockIsolation.empty()) {
            if (o_.blockIsolation == "process" && ts_.caseSet)
                throw probe::InputError(
                    "--block-isolation process: this device times the case set's own executions; give --repeats for "
                    "dedicated rounds");
            ts_.blockProcesses = o_.blockIsolation == "process";
        }
        // Baseline first (the tables and the pairs read it there), then the others.
        order_ = session_ ? session_->variants() : std::vector<probe::Variant>{};
        std::stable_partition(order_.begin(), order_.end(),
                              [](probe::Variant v) { return v == probe::Variant::Baseline; });
    }

    const oracle::LocalWeights* fixedWeights() const { return rs_.fixedWeights ? &*rs_.fixedWeights : nullptr; }

    // A child of the run's timing: one block of each pattern asked for, no cases checked.
    CardOutcome timeOneBlockOnly() {
        app::TimingSettings one = ts_;
        one.repeats = ts_.roundsPerBlock();
        one.blocks = 1;
        std::unique_ptr<oracle::LocalWeights> scratch;
        if (!rs_.fixedWeights)
            scratch = std::make_unique<oracle::LocalWeights>(oracle::LocalWeights::zeros(cfg_.shape));
        std::vector<app::PatternTiming> pts;
        for (const auto& [p, batch] : parseBlockBatches(o_.timingBlockBatches)) {
            progress(fmt::format("timing block: {}", probe::patternName(p)));
            pts.push_back(app::timePattern(*session_, order_, cfg_, p, fixedWeights(), scratch.get(), one, nullptr, "",
                                           batch, o_.timingBlockRotation));
        }
        out_.blockSamples = app::blockSamplesJson(pts);
        return std::move(out_);
    }

    // What comes before the cases: the start line of cards at once, the B of every pattern and,
    // with fresh-process blocks, the first block.
    void timeBeforeCases() {
        // Cards at once start their timing together: on a CPU device the case set's executions are
        // the timing, with fresh-process blocks the first block comes before the cases.
        if (atOnce_ && timing_ && (ts_.caseSet || ts_.blockProcesses)) atOnce_->startLine(slot_);
        // Fresh-process blocks spread over the run: the first here before the cases, the others
        // in children between the patterns' cases, so drift on the scale of a run (the H200's
        // launch gaps moved by whole µs between runs while the blocks of one run agreed) falls
        // between blocks, where the interval sees it.
        if (timing_ && !ts_.caseSet && !rs_.fixedWeights)
            scratch_ = std::make_unique<oracle::LocalWeights>(oracle::LocalWeights::zeros(cfg_.shape));
        if (timing_ && !ts_.caseSet) {
            progress("timing: B");
            batch_ = app::deviceBatch(*session_, order_, cfg_, rs_.patterns, fixedWeights(), scratch_.get());
        }
        if (timing_ && !ts_.caseSet && ts_.blockProcesses) {
            app::TimingSettings first = ts_;
            first.repeats = ts_.roundsPerBlock();
            first.blocks = 1;
            for (auto p : rs_.patterns) {
                if (probe::patternInvalidReason(cfg_.shape, p)) continue;
                progress(fmt::format("timing {}: block 1 of {}", probe::patternName(p), ts_.blocks));
                timings_.push_back(app::timePattern(*session_, order_, cfg_, p, fixedWeights(), scratch_.get(), first,
                                                    collectTrace_ ? &out_.spans : nullptr, trackPrefix_, batch_));
            }
            rs_.afterPattern = [this](std::size_t patternsDone) { childBlocksDue(patternsDone); };
        }
    }

    // The fresh-process blocks due after `patternsDone` patterns' cases: child b (1 .. blocks-1)
    // after ceil(b * patterns / (blocks - 1)) patterns.
    void childBlocksDue(std::size_t patternsDone) {
        while (!timings_.empty() && 1 + childBlocks_ < ts_.blocks &&
               std::size_t(1 + childBlocks_) * rs_.patterns.size() <= patternsDone * std::size_t(ts_.blocks - 1)) {
            const int b = 1 + childBlocks_++;
            progress(fmt::format("timing block {} of {} (fresh process)", b + 1, ts_.blocks));
            app::appendBlock(timings_, timeBlockInChild(o_, cfg_.shape.card, deviceSpec_, b, timings_, nullptr));
        }
    }

    void checkCases() {
        correctness_ = app::runCases(rs_, executors_);
        const app::Correctness& c = correctness_;
        if (timing_ && !ts_.caseSet && ts_.blockProcesses) childBlocksDue(rs_.patterns.size());
        if (session_) session_->setExecutionSink(nullptr);
        if (tty_) fmt::print(stderr, "\n");
        out_.text += app::formatTable(c);
        for (const auto& f : c.failures)
            out_.text += fmt::format("FAILED {} [{}]: {}\n", f.caseName, f.variant, f.message);
        out_.failed = c.failed > 0;
        // Nothing checked is no pass: "0 passed, 0 failed" must not read as success.
        out_.nothingChecked = c.passed + c.failed == 0;
    }

    // Variants this device cannot run (one_launch without cooperative launches), with why.
    nlohmann::json withNotValid(nlohmann::json card) const {
        if (session_ && !session_->notValid().empty()) {
            nlohmann::json nv = nlohmann::json::object();
            for (const auto& [v, why] : session_->notValid()) nv[std::string(probe::variantName(v))] = why;
            card["variants_not_valid"] = nv;
        }
        return card;
    }

    // The timings of every valid pattern (the case set's recorded ones, or dedicated rounds) and
    // the device's bandwidth.
    void timeAfterCases() {
        for (auto p : rs_.patterns)
            if (auto why = probe::patternInvalidReason(cfg_.shape, p))
                notValidPatterns_.push_back({std::string(probe::patternName(p)), *why});
        if (atOnce_ && !ts_.caseSet && !ts_.blockProcesses) atOnce_->startLine(slot_);
        if (ts_.caseSet) {
            std::vector<std::string> names;
            for (auto v : order_) names.emplace_back(probe::variantName(v));
            timings_ = recorder_->result(names);
        } else if (!ts_.blockProcesses) {
            for (auto p : rs_.patterns) {
                if (probe::patternInvalidReason(cfg_.shape, p)) continue;
                progress(fmt::format("timing {}", probe::patternName(p)));
                timings_.push_back(app::timePattern(*session_, order_, cfg_, p, fixedWeights(), scratch_.get(), ts_,
                                                    collectTrace_ ? &out_.spans : nullptr, trackPrefix_, batch_));
            }
        }
        progress("bandwidth");
        bandwidth_ = app::deviceBandwidth(*session_);
        if (tty_) fmt::print(stderr, "\n");
        if (defaults_ && ts_.caseSet)
            out_.text +=
                "timing: CPU device: no dedicated rounds by default (the case set alone takes most of the main job's "
                "time); the case set's executions were timed, in blocks of two cases. For dedicated rounds of one "
                "case: --repeats N [--warmup N] [--blocks N]\n";
        else if (defaults_)
            out_.text += fmt::format(
                "timing: {} blocks x {} rounds after {} warm-up(s) each, the default for a GPU (--blocks, --repeats, "
                "--warmup to change)\n",
                ts_.blocks, ts_.roundsPerBlock(), ts_.warmup);
        out_.text += app::formatTimings(timings_, ts_, bandwidth_);
    }

    std::vector<probe::CandidateGate> evaluate() const {
        return app::evaluateCandidates(
            timings_, cfg_, [this](const std::string& v) { return countsOf(correctness_, v); }, notValidPatterns_);
    }

    // More blocks of the patterns some candidate is on the bar for, until every candidate is
    // decided or --gate-budget is spent (a block is not cut short).
    void spendGateBudget() {
        const auto start = std::chrono::steady_clock::now();
        const auto spent = [&] {
            return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        };
        if (!rs_.fixedWeights && !scratch_)
            scratch_ = std::make_unique<oracle::LocalWeights>(oracle::LocalWeights::zeros(cfg_.shape));
        int added = 0;
        std::set<std::string> undecided;
        for (;;) {
            undecided.clear();
            for (const auto& g : out_.gates)
                if (g.verdict.verdict == probe::Verdict::OnTheBar)
                    undecided.insert(g.verdict.onTheBar.begin(), g.verdict.onTheBar.end());
            if (undecided.empty() || spent() >= o_.gateBudgetS) break;
            if (ts_.blockProcesses) {  // one fresh process times a block of every undecided pattern
                const int block = int(timings_.front().blockEnds.size());
                progress(fmt::format("gate budget: block {} (fresh process)", block + 1));
                app::appendBlock(timings_,
                                 timeBlockInChild(o_, cfg_.shape.card, deviceSpec_, block, timings_, &undecided));
                ++added;
                out_.gates = evaluate();
                continue;
            }
            for (auto& pt : timings_) {
                if (!undecided.count(pt.pattern) || spent() >= o_.gateBudgetS) continue;
                progress(fmt::format("gate budget: block {} of {}", pt.blockEnds.size() + 1, pt.pattern));
                app::addBlocks(pt, 1, *session_, order_, cfg_, fixedWeights(), scratch_.get(), ts_,
                               collectTrace_ ? &out_.spans : nullptr, trackPrefix_);
                ++added;
            }
            out_.gates = evaluate();
        }
        if (tty_) fmt::print(stderr, "\n");
        out_.text +=
            fmt::format("gate budget {:g} s: {} block(s) added in {:.1f} s; {}\n", o_.gateBudgetS, added, spent(),
                        undecided.empty() ? std::string("every candidate decided")
                                          : fmt::format("still on the bar: {}", fmt::join(undecided, ", ")));
    }

    // Cards at once: this card timed again in its turn, the others idle.
    void timeAlone() {
        if (ts_.caseSet) {
            out_.interferenceSkipped =
                "CPU devices: the timing was the case set's own executions, no dedicated rounds to repeat alone";
            atOnce_->soloTurn(slot_, [] {});
            return;
        }
        // The same patterns and rounds again, alone. All its blocks in this process (rebuilt),
        // also under --block-isolation process.
        atOnce_->soloTurn(slot_, [this] {
            for (const auto& together : timings_) {
                progress(fmt::format("alone: timing {}", together.pattern));
                const app::PatternTiming alone =
                    app::timePattern(*session_, order_, cfg_, probe::parsePattern(together.pattern), fixedWeights(),
                                     scratch_.get(), ts_, nullptr);
                for (const auto& vt : together.variants)
                    if (const app::VariantTiming* a = alone.find(vt.variant);
                        a && !a->deviceNs.empty() && !vt.deviceNs.empty())
                        out_.interference.push_back(
                            {together.pattern, vt.variant, probe::median(a->deviceNs), probe::median(vt.deviceNs)});
            }
        });
    }

    void formatGates() {
        std::string& text = out_.text;
        text += fmt::format(
            "gate (CONTRACT §8): saving = baseline - candidate device time per layer x {} layers; 95% CI = {}\n",
            cfg_.layers, app::kGateCiMethod);
        for (const auto& g : out_.gates) text += probe::formatGateTable(g);
        text += "verdicts:\n";
        if (out_.gates.empty())
            text += "  (no candidate variant was run: the gate needs one besides baseline and m1_oracle)\n";
        for (const auto& g : out_.gates) text += fmt::format("  {:<20} {}\n", g.candidate, g.verdict.line);
        text += "(a failing gate verdict is a measurement, not an error: the exit code reports correctness only)\n";
    }

    const Options& o_;
    const probe::Config& cfg_;
    const std::string& deviceSpec_;
    const std::string& progressTag_;
    const bool collectTrace_;
    const std::string& trackPrefix_;
    app::CardsAtOnce* const atOnce_;
    const std::size_t slot_;
    const bool timing_;
    CardOutcome out_;
    app::RunSettings rs_;
    std::chrono::steady_clock::time_point t0_;
    bool tty_ = false;
    // Declared before what uses the device: destroyed after it.
    std::unique_ptr<app::DeviceSession> session_;
    std::vector<app::Executor> executors_;
    nlohmann::json deviceJson_ = {{"name", "host oracle"}, {"type", "host"}};
    app::TimingSettings ts_;
    bool defaults_ = false;  // no --repeats, --warmup or --blocks
    std::unique_ptr<app::CaseSetRecorder> recorder_;
    std::vector<probe::Variant> order_;  // baseline first
    std::vector<app::PatternTiming> timings_;
    std::unique_ptr<oracle::LocalWeights> scratch_;
    int childBlocks_ = 0;  // fresh-process blocks timed so far in children
    int batch_ = 0;        // one B for every pattern (deviceBatch)
    app::Correctness correctness_;
    std::vector<probe::NotValidPattern> notValidPatterns_;
    app::Bandwidth bandwidth_;
};

// Correctness of the case set, then (on a device, unless --no-timing) the timing, the
// projections and the gate of one card. `progressTag`: empty for a lone card (a line
// rewritten in place on a terminal), "[card N] " when several play at once. `atOnce`: the
// cards played at once (null when one after another), this card is its `slot`: the timing
// starts with the others', and afterwards the card is timed again alone in its turn.
CardOutcome playCard(const Options& o, const probe::Config& cfg, const std::string& deviceSpec,
                     const std::string& progressTag, bool collectTrace, const std::string& trackPrefix,
                     app::CardsAtOnce* atOnce = nullptr, std::size_t slot = 0) {
    const app::CardsAtOnce::Seat seat(atOnce, slot);  // an early end never keeps the others waiting
    return CardPlay(o, cfg, deviceSpec, progressTag, collectTrace, trackPrefix, atOnce, slot).run();
}

// Which device each card plays on: card i of --cards on the i-th device of the chosen kind
// where the kind has a device for every card (the cards then play at once), else all on the
// one device, one after another; `why` says which and why, for the output and step.json.
struct CardDevices {
    std::vector<std::string> specs;
    bool atOnce = false;
    std::string why;
};
CardDevices cardDevices(const Options& o, std::size_t cards) {
    CardDevices d{std::vector<std::string>(cards, o.device), false, ""};
    if (cards < 2) return d;
    const std::string n = std::to_string(cards);
    if (o.device == "host") {
        d.why = "one after another on the host oracle (--device host)";
        return d;
    }
    const std::string shared = fmt::format(
        "at once on one shared device (--cards-at-once): the {} cards contend for it, which is not the deployment's "
        "one device per card",
        n);
    if (!o.device.empty() && o.device != "intel" && o.device != "zecl") {
        d.atOnce = o.cardsAtOnce;
        d.why = o.cardsAtOnce ? shared + ", device " + o.device
                              : "one after another on device " + o.device + ", the one --device names (not at once)";
        return d;
    }
    const auto all = runtime::listDevices();
    std::string kind = o.device;
    if (kind.empty()) {
        const runtime::DeviceInfo best = app::selectDeviceOrInputError("");
        kind = best.isIntel() ? "intel" : best.isZecl() ? "zecl" : "";
    }
    std::vector<std::string> same;
    for (const auto& dev : all)
        if ((kind == "intel" && dev.isIntel() && dev.isGpu()) || (kind == "zecl" && dev.isZecl()))
            same.push_back(std::to_string(dev.index));
    const std::string kindName = kind.empty() ? "device" : kind + " device";
    if (same.size() < cards && o.cardsAtOnce) {
        d.atOnce = true;
        d.why = shared;
        return d;
    }
    if (same.size() < cards) {
        d.why = fmt::format(
            "one after another on one shared device: {} {}{} for {} cards (at once needs one device per card)",
            same.size(), kindName, same.size() == 1 ? "" : "s", n);
        return d;
    }
    for (std::size_t i = 0; i < cards; ++i) d.specs[i] = same[i];
    d.atOnce = true;
    d.why = fmt::format("at once, one {} each (one thread per card in this process), card i of --cards on the i-th",
                        kindName);
    return d;
}

// --list-devices --json: what the text list says, one object per device, for scripts.
nlohmann::json devicesJson(const std::vector<runtime::DeviceInfo>& devices) {
    auto typeName = [](ze_device_type_t t) {
        switch (t) {
            case ZE_DEVICE_TYPE_GPU: return "gpu";
            case ZE_DEVICE_TYPE_CPU: return "cpu";
            case ZE_DEVICE_TYPE_FPGA: return "fpga";
            case ZE_DEVICE_TYPE_MCA: return "mca";
            case ZE_DEVICE_TYPE_VPU: return "vpu";
            default: return "other";
        }
    };
    nlohmann::json all = nlohmann::json::array();
    for (const auto& d : devices)
        all.push_back(
            {{"index", d.index},
             {"name", d.name()},
             {"type", typeName(d.props.type)},
             {"driver", runtime::driverKindName(d.kind)},
             {"driver_version", d.driverProps.driverVersion},
             {"api_version", fmt::format("{}.{}", ZE_MAJOR_VERSION(d.apiVersion), ZE_MINOR_VERSION(d.apiVersion))},
             {"compute_units", d.computeUnits()},
             {"memory_bytes", d.totalMemory()},
             {"max_group_size", d.compute.maxTotalGroupSize},
             {"fp32_denorm", d.supportsFp32Denorm()},
             {"spirv", d.supportsSpirv()},
             {"ip_version", d.ipVersion ? nlohmann::json(*d.ipVersion) : nlohmann::json(nullptr)}});
    return all;
}

// --kernels: the packaged native binaries' figures, then which module each device gets and why.
int printKernels() {
    const auto& package = kernels::Package::instance();
    fmt::print("{}", kernels::describeNativeBinaries(package));
    initLevelZero();
    for (const auto& d : runtime::listDevices()) {
        std::string why;
        try {
            why = scheduler::chooseModules(d, package).why;
        } catch (const scheduler::UnsupportedDevice& e) {
            why = e.what();
        }
        fmt::print("device {} ({}, {}): {}\n", d.index, d.name(), runtime::driverKindName(d.kind), why);
    }
    return kExitOk;
}

// step.json beside the cards: the step of the cards' timed rounds and its gate, where each
// card ran, and (played at once) each card's medians alone vs together. Printed and written.
nlohmann::json writeStep(const Options& o, const CardDevices& placed, const std::vector<CardOutcome>& outcomes) {
    std::vector<app::CardRounds> rounds;
    app::StepRun run;
    run.concurrent = placed.atOnce;
    run.why = placed.why;
    for (const auto& out : outcomes) {
        const std::string file = fmt::format("card{}.json", out.card);
        rounds.push_back(app::cardRoundsOf(out.json, file));
        run.placement.push_back({out.card, out.deviceIndex, out.deviceName, file});
        if (!out.interference.empty()) run.interference[out.card] = out.interference;
        if (!out.interferenceSkipped.empty()) run.interferenceSkipped = out.interferenceSkipped;
    }
    if (!placed.atOnce) run.interferenceSkipped = "the cards did not run at once: each ran alone";
    const app::Step step = app::combineCards(rounds);
    const nlohmann::json j = app::stepJson(step, run);
    const fs::path file = fs::path(o.outDir) / "step.json";
    app::writeStep(file, j);
    fmt::print("{}wrote {}\n", app::formatStep(step, run), file.string());
    return j;
}

// One config per --cards card (the base config's own card when none is given), each checked.
std::vector<probe::Config> cardConfigs(const Options& o, const probe::Config& base) {
    if (o.cardsAtOnce && o.cards.size() < 2)
        throw probe::InputError("--cards-at-once plays several cards at once: give them with --cards, e.g. 0,1,2,3");
    if (o.cardsAtOnce && o.device == "host")
        throw probe::InputError("--cards-at-once plays the cards at once on a device: not with --device host");
    std::vector<probe::Config> configs;
    if (o.cards.empty()) configs.push_back(base);
    for (std::size_t i = 0; i < o.cards.size(); ++i) {
        const int card = o.cards[i];
        if (std::find(o.cards.begin(), o.cards.begin() + std::ptrdiff_t(i), card) !=
            o.cards.begin() + std::ptrdiff_t(i))
            throw probe::InputError(fmt::format("--cards: card {} is listed twice", card));
        probe::Config c = base;
        probe::applySet(c, fmt::format("card={}", card));
        probe::validate(c);
        configs.push_back(c);
    }
    return configs;
}

// Every card played, at once (threads that meet at the start of their timing) or one after
// another, as `placed` says; their outcomes in card order.
std::vector<CardOutcome> playCards(const Options& o, const std::vector<probe::Config>& configs,
                                   const CardDevices& placed) {
    const std::vector<std::string>& specs = placed.specs;
    const bool together = placed.atOnce;
    const bool collectTrace = !o.traceFile.empty();
    auto trackPrefix = [&](const probe::Config& c) {
        return configs.size() > 1 ? fmt::format("card{} ", c.shape.card) : std::string();
    };

    std::vector<CardOutcome> outcomes;
    if (together) {
        fmt::print("{} cards {}\n", configs.size(), placed.why);
        std::fflush(stdout);
        // Threads, not processes: the cards meet at the start of their timing and take solo
        // turns after it (CardsAtOnce), and the step is combined from their results in memory.
        app::CardsAtOnce atOnce(configs.size());
        std::vector<std::future<CardOutcome>> running;
        for (std::size_t i = 0; i < configs.size(); ++i)
            running.push_back(std::async(std::launch::async, playCard, std::cref(o), std::cref(configs[i]),
                                         std::cref(specs[i]), fmt::format("[card {}] ", configs[i].shape.card),
                                         collectTrace, trackPrefix(configs[i]), &atOnce, i));
        for (auto& f : running) outcomes.push_back(f.get());
    } else {
        if (configs.size() > 1) fmt::print("{} cards {}\n", configs.size(), placed.why);
        for (std::size_t i = 0; i < configs.size(); ++i) {
            if (configs.size() > 1) {
                fmt::print("== card {} ({} of {}, one after another on one device)\n", configs[i].shape.card, i + 1,
                           configs.size());
                std::fflush(stdout);
            }
            outcomes.push_back(playCard(o, configs[i], specs[i],
                                        configs.size() > 1 ? fmt::format("[card {}] ", configs[i].shape.card) : "",
                                        collectTrace, trackPrefix(configs[i])));
            if (configs.size() > 1) {
                fmt::print("{}", outcomes.back().text);
                outcomes.back().text.clear();
            }
        }
    }
    return outcomes;
}

// The cards' tables printed and their card<N>.json written, then the trace, the step of several
// cards and the report; returns the exit code (1 when a case failed or a card checked nothing).
int writeOutcomes(const Options& o, const std::vector<probe::Config>& configs, const CardDevices& placed,
                  std::vector<CardOutcome>& outcomes) {
    const bool together = placed.atOnce;
    bool failed = false;
    std::vector<app::TraceSpan> spans;
    for (auto& out : outcomes) {
        if (together) fmt::print("== card {}\n", out.card);
        fmt::print("{}", out.text);
        const fs::path cardFile = fs::path(o.outDir) / fmt::format("card{}.json", out.card);
        app::writeCard(cardFile, out.json);
        fmt::print("wrote {}\n", cardFile.string());
        failed = failed || out.failed;
        if (out.nothingChecked) {
            fmt::print(stderr,
                       "ze-probe: error: card {}: no case was valid to check ({} skipped; see the table above for "
                       "why each pattern is not valid for this configuration)\n",
                       out.card, out.json["correctness"]["skipped"].get<int>());
            failed = true;
        }
        spans.insert(spans.end(), out.spans.begin(), out.spans.end());
    }
    if (!o.traceFile.empty()) {
        app::writeTrace(o.traceFile, spans);
        fmt::print("wrote {} ({} kernel spans; open in ui.perfetto.dev)\n", o.traceFile, spans.size());
    }
    nlohmann::json step;
    if (configs.size() > 1 && wantsTiming(o)) {
        step = writeStep(o, placed, outcomes);
    } else if (configs.size() > 1) {
        fmt::print("step: not made ({}: the cards have no timed rounds)\n",
                   o.device == "host" ? "--device host" : "--no-timing");
    }
    if (!o.reportFile.empty()) {
        std::vector<app::LoadedCard> cards;
        for (const auto& out : outcomes)
            cards.push_back({fmt::format("card{} · {}", out.card, out.deviceName), out.json});
        app::writeCardsReport(o.reportFile, cards, {}, {}, step);
        fmt::print("wrote {}\n", o.reportFile);
    }
    return failed ? kExitCaseFailed : kExitOk;
}

int run(Options& o) {
    strictValues(o);
    checkBeforeWork(o);
    if (o.json && !o.listDevices) throw probe::InputError("--json goes with --list-devices");
    if (o.listDevices) {
        initLevelZero();
        if (o.json)
            fmt::print("{}\n", devicesJson(runtime::listDevices()).dump(2));
        else
            fmt::print("{}", runtime::formatDeviceList());
        return kExitOk;
    }
    if (o.kernels) return printKernels();
    if (o.gateRepeat > 0) {
        if (!o.sweepFile.empty()) throw probe::InputError("--gate-repeat repeats the gate: not with --sweep");
        if (!wantsTiming(o))
            throw probe::InputError("--gate-repeat needs the gate's timing: not with --no-timing or --device host");
        if (!o.inputsFile.empty()) throw probe::InputError("--gate-repeat needs the gate: not with --inputs");
        if (!o.reportFile.empty()) app::reportFormatOf(o.reportFile);
        std::vector<probe::NamedFile> written = optionOutputs(o);
        written.push_back({fs::path(o.outDir) / "gate_repeat.json", "--out"});
        for (int r = 1; r <= o.gateRepeat; ++r) {
            written.push_back({fs::path(o.outDir) / fmt::format("repeat-{}", r), "--out"});
            probe::checkOutputDir(written.back().path, "--out");
        }
        probe::checkOutputsApart(inputFiles(o), written);
        checkNoStaleOutputs(o.outDir, written);
        probe::checkOutputFile(fs::path(o.outDir) / "gate_repeat.json", "--out");
        return app::runGateRepeat(o.args, o.gateRepeat, o.outDir, o.reportFile);
    }
    if (!o.sweepFile.empty()) {
        if (o.device == "host") throw probe::InputError("--sweep times the chain on a device: not with --device host");
    } else {
        if (!o.shard.empty()) throw probe::InputError("--shard goes with --sweep");
        if (o.resume || o.overwrite) throw probe::InputError("--resume and --overwrite go with --sweep");
        if (!o.reportFile.empty()) app::reportFormatOf(o.reportFile);  // a bad extension fails before any work
        if (o.device == "host" && !o.kernelTuning.empty())
            throw probe::InputError("--kernel-tuning tiles the device kernels: not with --device host");
    }
    o.tuning = app::parseTuningOrInputError(o.kernelTuning);  // a bad tuning fails before any work
    if (!o.sweepFile.empty())
        return app::runSweep({o.sweepFile, o.device, o.tuning, o.outDir, o.resume, o.overwrite, o.repeats, o.warmup,
                              initLevelZero, o.shard});
    const probe::Config base = loadSettings(o);
    if (!o.variant.empty()) probe::parseVariant(o.variant);  // bad names fail before any work
    if (!o.inputsFile.empty()) return runOneCase(o, base);
    if (!o.dumpFile.empty()) throw probe::InputError("--dump needs --inputs (it dumps exactly that one case)");
    if (!wantsTiming(o) && (!o.traceFile.empty() || !o.reportFile.empty()))
        throw probe::InputError(std::string(o.traceFile.empty() ? "--report" : "--trace") +
                                " needs the timing: not with --no-timing or --device host");

    const std::vector<probe::Config> configs = cardConfigs(o, base);
    checkSomePatternValid(o, configs);
    checkRunOutputs(o, configs);
    if (o.device != "host") initLevelZero();
    const CardDevices placed = cardDevices(o, configs.size());
    if (!o.timingBlockChild.empty()) {
        if (configs.size() != 1 || !wantsTiming(o))
            throw probe::InputError("--timing-block-child times one card's block: give one card and a device");
        const CardOutcome child = playCard(o, configs.front(), placed.specs.front(), "", false, "");
        probe::writeFileAtomically(o.timingBlockChild, child.blockSamples.dump() + "\n", "--timing-block-child");
        return kExitOk;
    }
    std::vector<CardOutcome> outcomes = playCards(o, configs, placed);
    return writeOutcomes(o, configs, placed, outcomes);
}

// Errors of the run or a subcommand in the one style, by type (docs/usage.md "Exit codes"); returns
// the exit code.
template <class F>
int guarded(F&& body) {
    auto badInput = [](const std::exception& e) {
        fmt::print(stderr, "ze-probe: error: {}\n", e.what());
        return kExitBadInput;
    };
    try {
        return body();
    } catch (const probe::InputError& e) {
        return badInput(e);
    } catch (const cli::OptionError& e) {
        return badInput(e);
    } catch (const runtime::Error& e) {
        fmt::print(stderr, "ze-probe: error: Level Zero: {}\n", e.what());
        return kExitDeviceError;
    } catch (const scheduler::DeviceError& e) {
        fmt::print(stderr, "ze-probe: error: device: {}\n", e.what());
        return kExitDeviceError;
    } catch (const std::exception& e) {
        fmt::print(stderr, "ze-probe: error: internal error: {}\n", e.what());
        return kExitCaseFailed;
    }
}

struct ReportCommand {
    std::vector<std::string> cardFiles;
    std::string sweepFile;
    std::string outFile;
};

// `ze-probe report` as a subcommand of `app`, its values in `args` (which must outlive the parse).
CLI::App* addReportCommand(CLI::App& parent, ReportCommand& args) {
    CLI::App& app = *parent.add_subcommand(
        "report",
        "ze-probe report: render saved results (card<N>.json of any run, schema 2 or later) as one page: "
        "the overview of candidates x patterns against the bar, per-pattern panels on their own scales, "
        "the per-kernel breakdown, the launch floor and the roofline fraction. Several cards render side by "
        "side (the cards of one run, or runs of two devices); with the step.json of a --cards run, the step first (its "
        "gate, the cards side by side, the interference).");
    cli::configureApp(app, "ze-probe report", probe::Config{}.contract,
                      {"ze-probe report h200/card0.json b580/card0.json -o two-devices.html",
                       "ze-probe report probe-out/card*.json probe-out/step.json -o step.html   # of --cards 0,1,2,3",
                       "ze-probe report --sweep probe-out/smoke/smoke.jsonl -o smoke.html   # a sweep alone"});
    std::vector<std::string>& cardFiles = args.cardFiles;
    std::string& sweepFile = args.sweepFile;
    std::string& outFile = args.outFile;
    app.add_option("cards", cardFiles,
                   "card<N>.json files written by ze-probe, and at most one step.json of --cards (none with --sweep: "
                   "the sweep alone)")
        ->check(CLI::ExistingFile);
    app.add_option("--sweep", sweepFile, "a sweep's JSONL: its plots and its points as a table (HTML only)")
        ->check(CLI::ExistingFile);
    app.add_option("-o,--out", outFile, "the report: OUT.html (tables and pictures) or OUT.svg (pictures)")->required();
    return &app;
}

// What to say when drawing the cards met a value of a type it cannot draw (a card edited by hand
// or written by something else: "card": "x"): the first card that fails drawn alone, by its
// file, else the step or the sweep rows.
std::string undrawableCard(const std::vector<app::LoadedCard>& cards, const std::vector<std::string>& names,
                           const nlohmann::json::exception& e) {
    for (std::size_t i = 0; i < cards.size(); ++i) try {
            (void)app::cardsReportHtml({cards[i]});
        } catch (const nlohmann::json::exception& one) {
            return names[i] + ": a value of a type the report cannot draw (" + one.what() +
                   "): is it a card ze-probe wrote, unedited?";
        }
    return std::string("the step or the sweep's rows hold a value of a type the report cannot draw (") + e.what() + ")";
}

int runReport(const ReportCommand& args) {
    const std::vector<std::string>& cardFiles = args.cardFiles;
    const std::string& sweepFile = args.sweepFile;
    const std::string& outFile = args.outFile;
    return guarded([&] {
        const app::ReportFormat format = app::reportFormatOf(outFile);  // before any work
        if (cardFiles.empty() && sweepFile.empty())
            throw probe::InputError("nothing to report: give card<N>.json files, --sweep FILE.jsonl, or both");
        probe::checkOutputFile(outFile, "-o");
        if (format == app::ReportFormat::svg && !sweepFile.empty())
            throw probe::InputError("--sweep goes into the HTML report's tables: write OUT.html");
        // One card given twice would be drawn twice, as if two cards had measured it.
        probe::refuseRepeatedPaths(std::vector<fs::path>(cardFiles.begin(), cardFiles.end()), "report");
        std::vector<app::LoadedCard> cards;
        std::vector<std::string> cardNames;  // the file of each card, for messages
        nlohmann::json step;
        for (const auto& f : cardFiles) {
            // Checked against the schema of its version (loadResult): a card of a later ze-probe may mean
            // other things by the same keys, an edited one may lack what the drawing reads.
            app::LoadedResult r = app::loadResult(f);
            if (!r.step) {
                cards.push_back(std::move(r.card));
                cardNames.push_back(f);
            } else if (step.is_null())
                step = std::move(r.card.card);
            else
                throw probe::InputError(f + ": a second step.json: the report shows one step");
        }
        std::vector<nlohmann::json> rows;
        if (!sweepFile.empty()) rows = probe::readSweepRows(sweepFile, false);
        if (!sweepFile.empty() && rows.empty() && cards.empty() && step.is_null())
            throw probe::InputError(sweepFile + ": no sweep row in the file: nothing to report");
        try {
            app::writeCardsReport(outFile, cards, rows, {}, step);
        } catch (const nlohmann::json::exception& e) {
            throw probe::InputError(undrawableCard(cards, cardNames, e));
        }
        fmt::print("wrote {} ({} card{}{}{})\n", outFile, cards.size(), cards.size() == 1 ? "" : "s",
                   step.is_null() ? "" : " and the step",
                   sweepFile.empty() ? "" : fmt::format(", {} sweep points", rows.size()));
        return kExitOk;
    });
}

struct SweepMergeCommand {
    std::vector<std::string> dirs;
    std::string outDir = "sweep-merged";
};

// `ze-probe sweep-merge` as a subcommand of `app`, its values in `args` (which must outlive the parse).
CLI::App* addSweepMergeCommand(CLI::App& parent, SweepMergeCommand& args) {
    CLI::App& app = *parent.add_subcommand(
        "sweep-merge",
        "ze-probe sweep-merge: join the --out directories of a sweep's shards (--shard K/N) into one "
        "sweep: <OUT>/<name>.jsonl and .csv in plan order. Overlapping shards are refused (exit 2); "
        "missing points are listed and exit 1 (the merge is still written).");
    cli::configureApp(app, "ze-probe sweep-merge", probe::Config{}.contract,
                      {"ze-probe sweep-merge shard1 shard2 shard3 -o merged",
                       "ze-probe sweep-merge probe-out/smoke-* -o probe-out/smoke",
                       "ze-probe sweep-merge s1 s2 s3 -o s   # after --shard 1/3, 2/3, 3/3 with --out s1, s2, s3"});
    std::vector<std::string>& dirs = args.dirs;
    std::string& outDir = args.outDir;
    app.add_option("dirs", dirs, "the shards' --out directories")->required();
    app.add_option("-o,--out", outDir, "directory for the merged <name>.jsonl and .csv (must not hold them yet)");
    return &app;
}

int runSweepMerge(const SweepMergeCommand& args) {
    const std::vector<std::string>& dirs = args.dirs;
    const std::string& outDir = args.outDir;
    return guarded([&] {
        probe::checkOutputDir(outDir, "-o");
        return app::runSweepMerge(dirs, outDir);
    });
}

struct GateRepeatMergeCommand {
    std::vector<std::string> dirs;
    std::string outDir = "probe-out";
    std::string report;
};

// `ze-probe gate-repeat-merge` as a subcommand of `app`, its values in `args` (which must outlive the parse).
CLI::App* addGateRepeatMergeCommand(CLI::App& parent, GateRepeatMergeCommand& args) {
    CLI::App& app = *parent.add_subcommand(
        "gate-repeat-merge",
        "ze-probe gate-repeat-merge: the --gate-repeat table (per candidate the verdicts of every run, per "
        "candidate and pattern the spread of the medians and how often one run's median lies in another's CI) "
        "from run directories already made, e.g. the repeat-<i>/ of two --gate-repeat calls that each fitted a "
        "time limit. Each directory holds the card<N>.json of one run.");
    cli::configureApp(app, "ze-probe gate-repeat-merge", probe::Config{}.contract,
                      {"ze-probe gate-repeat-merge a/repeat-1 a/repeat-2 a/repeat-3 b/repeat-1 b/repeat-2 -o five",
                       "ze-probe gate-repeat-merge run1 run2 --report repeat.html"});
    std::vector<std::string>& dirs = args.dirs;
    std::string& outDir = args.outDir;
    std::string& report = args.report;
    app.add_option("dirs", dirs, "run directories, each with the cards of one run")->required();
    app.add_option("-o,--out", outDir, "directory for gate_repeat.json");
    app.add_option("--report", report, "also write the table as FILE.html or FILE.svg");
    return &app;
}

int runGateRepeatMerge(const GateRepeatMergeCommand& args) {
    const std::vector<std::string>& dirs = args.dirs;
    const std::string& outDir = args.outDir;
    const std::string& report = args.report;
    return guarded([&] {
        if (!report.empty()) app::reportFormatOf(report);  // a bad extension fails before any work
        if (!report.empty()) probe::checkOutputFile(report, "--report");
        probe::checkOutputDir(outDir, "-o");
        probe::checkOutputFile(fs::path(outDir) / "gate_repeat.json", "-o");
        return app::mergeGateRepeats(dirs, outDir, report);
    });
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "ze-probe: the MoE expert-FFN decode chain on Level Zero, checked bit for bit against the host "
        "oracle, timed, and gated (CONTRACT §8). Subcommands: `ze-probe report CARD.json... -o OUT.html` "
        "renders saved cards; `ze-probe sweep-merge DIR... -o OUT` merges sharded sweeps; `ze-probe "
        "gate-repeat-merge DIR...` tables the gates of runs already made."};
    cli::configureApp(app, "ze-probe", probe::Config{}.contract,
                      {"ze-probe --route-pattern six_local               # the 12 cases of one pattern",
                       "ze-probe --device zecl --set hidden=256 --report gate.html   # check, time, gate",
                       "ze-probe --sweep configs/sweeps/smoke.yaml --shard 2/3 --out shard2   # a third of a sweep"});
    Options o;
    app.add_option("--config", o.configFile, "YAML config (CONTRACT §1 keys)")->check(CLI::ExistingFile);
    app.add_option("--set", o.sets, "override a config key, e.g. --set swiglu.limit=7 (repeatable)");
    app.add_option("--weights", o.weightsFile, "safetensors with CONTRACT §3 tensors (default: random from --seed)")
        ->check(CLI::ExistingFile);
    app.add_option("--inputs", o.inputsFile, "safetensors case: hidden, topk_ids, topk_weights (runs that one case)")
        ->check(CLI::ExistingFile);
    app.add_option("--dump", o.dumpFile, "write the case's inputs and tensors to this safetensors file");
    app.add_option("--variant", o.variant,
                   "chain variant: baseline, gemm2_loader_fused, source_direct, paired_epilogue, paired_direct, "
                   "m1_oracle, two_launch, one_launch (default: all; with --inputs: baseline)");
    app.add_option("--device", o.device,
                   "host (the host oracle), intel, zecl, or an index from --list-devices (default: first Intel GPU, "
                   "else first zecl device)");
    app.add_option("--kernel-tuning", o.kernelTuning,
                   "GEMM tiles, built from the zecl source bundle, e.g. gemm_tile=2,cols_per_wg=32,cols_per_item=4 "
                   "(docs/perf.md; keys: cols_per_wg, cols_per_item, rows_per_pass, e2m1_decode, gemm_tile, and for "
                   "two_launch's kernel B b_cols_per_wg, b_cols_per_item); "
                   "\"packaged\" = the packaged kernels (default: the device's recommended tiles, the packaged "
                   "ones except on NVIDIA GPUs)");
    app.add_option("--route-pattern", o.routePattern, "route pattern of CONTRACT §6, or all");
    app.add_option("--out", o.outDir, "directory for card<N>.json");
    app.add_option("--seed", o.seedText, "base seed of cases and random weights (config key: seed)");
    app.add_flag("--list-devices", o.listDevices, "list Level Zero drivers and devices (Intel GPUs, zecl) and exit");
    app.add_flag("--json", o.json, "with --list-devices: the devices as a JSON array (index, name, type, driver, ...)");
    app.add_flag("--kernels", o.kernels,
                 "the packaged native binaries (SIMD, GRF, instructions, spill and private bytes per thread, per "
                 "target and kernel) and which module each device gets and why, then exit");
    app.add_option(
           "--repeats", o.repeatsText,
           "dedicated timed rounds per pattern in all, spread over --blocks, each variant once a round (default: "
           "50 on a GPU; on a CPU the case set's own executions are timed instead, and --warmup alone gives 5)")
        ->type_name("N in [1, 100000]");
    app.add_option("--warmup", o.warmupText,
                   "untimed rounds at the start of each block (default: 2 on a GPU, 1 on a CPU)")
        ->type_name("N in [0, 100000]");
    app.add_option("--blocks", o.blocksText,
                   "blocks the timed rounds come in, each started anew (--block-isolation); the gate's "
                   "interval is over blocks (default 10 on a GPU, 6 two-case blocks on a CPU; at least 2)")
        ->type_name("N in [2, 10000]");
    app.add_option("--gate-budget", o.gateBudgetText,
                   "seconds to spend on more blocks while a candidate is ON THE BAR (default 0: none)")
        ->type_name("SECONDS in [0, 86400]");
    app.add_option("--gate-repeat", o.gateRepeatText,
                   "run the gate N times in fresh processes (<out>/repeat-<i>/) and report, per candidate and pattern, "
                   "the verdicts and the spread of the medians (--report shows it)")
        ->type_name("N in [2, 100]");
    app.add_option("--block-isolation", o.blockIsolation,
                   "how a timing block starts anew: process = each block after the first in a fresh ze-probe "
                   "process, so the interval holds the variation between runs (default on a GPU); rebuild = the "
                   "chains, buffers and lists rebuilt in this process (default on a CPU)")
        ->check(CLI::IsMember({"process", "rebuild"}));
    // Set by a run for the child that times one of its blocks; not for users.
    app.add_option("--timing-block-child", o.timingBlockChild)->group("");
    app.add_option("--timing-block-batches", o.timingBlockBatches)->group("");
    app.add_option("--timing-block-rotation", o.timingBlockRotation)->group("");
    app.add_flag("--no-timing", o.noTiming, "check the cases only: no timing, no gate");
    app.add_option("--cards", o.cardLists,
                   "play these cards (config key card), e.g. 0,1,2,3: card<N>.json each and step.json (the step: per "
                   "round the slowest card, and its gate); card i on the i-th device of the kind when there is one "
                   "per card, all at once; else one after another on the one device");
    app.add_flag("--cards-at-once", o.cardsAtOnce,
                 "with --cards: play the cards at once even when they share one device (they contend for it)");
    app.add_option("--trace", o.traceFile,
                   "write the timed kernels as a Chrome trace (ui.perfetto.dev), one track per variant");
    app.add_option("--report", o.reportFile,
                   "write the report (as `ze-probe report` would from the cards): FILE.html with the tables, or "
                   "FILE.svg");
    auto* sweep =
        app.add_option("--sweep", o.sweepFile, "run a sweep file (configs/sweeps/*.yaml): <out>/<name>.jsonl and .csv")
            ->check(CLI::ExistingFile);
    app.add_flag("--resume", o.resume, "with --sweep: continue the sweep's JSONL under --out");
    app.add_flag("--overwrite", o.overwrite, "with --sweep: start afresh over an existing JSONL");
    app.add_option("--shard", o.shard,
                   "with --sweep: run slice K of N (points whose index % N == K-1), e.g. 2/3; merge the shards' "
                   "--out directories with `ze-probe sweep-merge`");
    for (const char* name : {"--config", "--set", "--weights", "--inputs", "--dump", "--variant", "--route-pattern",
                             "--seed", "--no-timing", "--cards", "--cards-at-once", "--trace", "--report"})
        sweep->excludes(app.get_option(name));
    for (int i = 1; i < argc; ++i) o.args.emplace_back(argv[i]);
    // The subcommands: the rest of the line is theirs (the run's options do not apply to them).
    ReportCommand report;
    SweepMergeCommand sweepMerge;
    GateRepeatMergeCommand gateRepeatMerge;
    const CLI::App* reportCommand = addReportCommand(app, report);
    const CLI::App* sweepMergeCommand = addSweepMergeCommand(app, sweepMerge);
    const CLI::App* gateRepeatMergeCommand = addGateRepeatMergeCommand(app, gateRepeatMerge);
    if (const int rc = cli::parse(app, "ze-probe", argc, argv); rc >= 0) return rc;
    if (reportCommand->parsed()) return runReport(report);
    if (sweepMergeCommand->parsed()) return runSweepMerge(sweepMerge);
    if (gateRepeatMergeCommand->parsed()) return runGateRepeatMerge(gateRepeatMerge);
    return guarded([&] {
        // An option given an empty value (--shard "", --report "") would read as not given at all.
        cli::refuseEmptyValues(app, {"--config", "--set", "--weights", "--inputs", "--dump", "--variant", "--device",
                                     "--kernel-tuning", "--route-pattern", "--out", "--seed", "--cards", "--trace",
                                     "--report", "--sweep", "--shard", "--block-isolation", "--gate-budget"});
        o.app = &app;
        return run(o);
    });
}
