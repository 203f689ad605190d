// ze-probe: runs the MoE expert-FFN chain's cases on a device (or the host oracle) and
// checks them bit for bit against CONTRACT.md. Exit codes: 0 all good, 1 a case failed,
// 2 bad input or usage (message on stderr).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "device_session.hpp"
#include "probe.hpp"
#include "zp/runtime/ze.hpp"
#include "zp/scheduler/case_io.hpp"
#include "zp/scheduler/compare.hpp"
#include "zp/scheduler/input_error.hpp"

namespace {

using namespace zp;
namespace fs = std::filesystem;

constexpr int kExitOk = 0, kExitCaseFailed = 1, kExitBadInput = 2;
constexpr int kCardSchema = 1;

struct Options {
    std::string configFile;
    std::vector<std::string> sets;
    std::string weightsFile, inputsFile, dumpFile;
    std::string variant;  // empty: every variant (with --inputs: baseline)
    std::string device;   // empty: the best device (first Intel GPU, else first zecl device)
    std::string routePattern = "six_local";
    std::string outDir = "probe-out";
    std::optional<std::uint64_t> seed;
    bool listDevices = false;
};

// The tools (never the library) point the loader at the Intel driver and zecl when the user
// has not set ZE_ENABLE_ALT_DRIVERS, so a fresh machine finds zecl without any setup.
void initLevelZero() { ze::init(ze::InitOptions{.flags = 0, .setAltDriversIfUnset = true, .zeclPath = std::nullopt}); }

sched::Config loadSettings(const Options& o) {
    sched::Config cfg = o.configFile.empty() ? sched::Config{} : sched::loadConfig(o.configFile);
    for (const auto& s : o.sets) sched::applySet(cfg, s);
    if (o.seed) cfg.seed = *o.seed;
    sched::validate(cfg);
    return cfg;
}

std::vector<sched::RoutePattern> choosePatterns(const std::string& name) {
    if (name == "all") return {sched::kAllRoutePatterns.begin(), sched::kAllRoutePatterns.end()};
    return {sched::parsePattern(name)};
}

void writeJson(const fs::path& file, const nlohmann::json& j) {
    fs::create_directories(file.parent_path().empty() ? fs::path(".") : file.parent_path());
    const fs::path tmp = file.string() + ".tmp";
    {
        std::ofstream f(tmp);
        if (!f) throw sched::InputError("cannot write " + tmp.string() + ": check --out");
        f << j.dump(2) << '\n';
        if (!f) throw sched::InputError("cannot write " + tmp.string() + ": disk full?");
    }
    fs::rename(tmp, file);
}

// The variants a run covers: the on-device M1 oracle first (every other variant's `out` is
// checked against it too), then the chosen one or all of them.
std::vector<sched::Variant> chooseVariants(const std::string& name) {
    if (name.empty()) {
        std::vector<sched::Variant> all{sched::Variant::M1Oracle};
        for (sched::Variant v : sched::kAllVariants)
            if (v != sched::Variant::M1Oracle) all.push_back(v);
        return all;
    }
    const sched::Variant v = sched::parseVariant(name);
    if (v == sched::Variant::M1Oracle) return {v};
    return {sched::Variant::M1Oracle, v};
}

// --inputs: exactly that one case, optionally dumped with the tensors the executor produced.
int runOneCase(const Options& o, const sched::Config& cfg) {
    const auto& s = cfg.shape;
    const sched::Variant variant = o.variant.empty() ? sched::Variant::Baseline : sched::parseVariant(o.variant);
    const auto in = sched::loadInputs(o.inputsFile, s);
    const auto weights = o.weightsFile.empty() ? sched::makeRandomWeights(s, cfg.seed)
                                               : sched::loadWeights(o.weightsFile, s, cfg.weightsPrefix);
    const auto silu = oracle::buildSiluTable(s.swigluAlpha);
    const auto want = oracle::runChain(s, weights, in, silu);

    std::unique_ptr<probe::DeviceSession> session;
    probe::Executor exec = probe::Executor::hostM1();
    probe::ExecutorResult got;
    if (o.device == "host") {
        got = exec.run(probe::CaseRun{s, weights, in, silu, nullptr});
        // The host oracle's tensors, limited to what the variant materialises.
        got.outputs = want;
        got.materialised = sched::materialised(variant);
    } else {
        initLevelZero();
        session = std::make_unique<probe::DeviceSession>(o.device, s, std::vector<sched::Variant>{variant});
        session->uploadWeights(weights, {});
        got = session->executors().front().run(probe::CaseRun{s, weights, in, silu, nullptr});
        fmt::print("device: {} ({})\n", session->device().name(), session->moduleChoice().why);
    }
    const auto mismatch = probe::compareWithOracle(s, want, got);
    if (!o.dumpFile.empty()) {
        oracle::ChainOutputs dumped = got.outputs;
        if (variant == sched::Variant::M1Oracle) dumped.routes = want.routes;  // M1 does not compact
        sched::writeSafetensors(o.dumpFile, sched::dumpTensors(s, in, dumped, got.materialised),
                                {{"variant", std::string(sched::variantName(variant))},
                                 {"device", session ? session->device().name() : "host"},
                                 {"contract", "1"}});
        fmt::print("wrote {}\n", o.dumpFile);
    }
    fmt::print("{}: {} compact rows, {}\n", o.inputsFile, want.routes.rows.size(),
               mismatch ? "FAILED: " + *mismatch : std::string("passed"));
    return mismatch ? kExitCaseFailed : kExitOk;
}

int run(const Options& o) {
    if (o.listDevices) {
        initLevelZero();
        fmt::print("{}", ze::formatDeviceList());
        return kExitOk;
    }
    const sched::Config cfg = loadSettings(o);
    if (!o.variant.empty()) sched::parseVariant(o.variant);  // bad names fail before any work
    if (!o.inputsFile.empty()) return runOneCase(o, cfg);
    if (!o.dumpFile.empty()) throw sched::InputError("--dump needs --inputs (it dumps exactly that one case)");

    probe::RunSettings rs;
    rs.config = cfg;
    rs.patterns = choosePatterns(o.routePattern);
    if (!o.weightsFile.empty()) rs.fixedWeights = sched::loadWeights(o.weightsFile, cfg.shape, cfg.weightsPrefix);
    const auto t0 = std::chrono::steady_clock::now();
    const bool tty = ::isatty(STDERR_FILENO);
    rs.progress = [&](const std::string& caseName) {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        // A terminal gets one line rewritten in place; a log gets one line per case.
        if (tty) fmt::print(stderr, "\r  {:<30} {:6.1f} s", caseName, s);
        else fmt::print(stderr, "  {:<30} {:6.1f} s\n", caseName, s);
        std::fflush(stderr);
    };
    std::unique_ptr<probe::DeviceSession> session;
    std::vector<probe::Executor> executors;
    nlohmann::json deviceJson = {{"name", "host oracle"}, {"type", "host"}};
    if (o.device == "host") {
        executors.push_back(probe::Executor::hostM1());
    } else {
        initLevelZero();
        session = std::make_unique<probe::DeviceSession>(o.device, cfg.shape, chooseVariants(o.variant));
        executors = session->executors();
        deviceJson = session->describe();
        rs.deviceFlushesSubnormals = session->flushesSubnormals();
        // Weights from a file are uploaded once; random ones change with each case (§7).
        if (rs.fixedWeights) session->uploadWeights(*rs.fixedWeights, {});
        else rs.prepare = [&](const sched::Case& c, const oracle::LocalWeights& w) {
            session->uploadWeights(w, c.touchedLocalExperts);
        };
        fmt::print("device: {} [{}], {}\n", session->device().name(), ze::driverKindName(session->device().kind),
                   session->moduleChoice().why);
    }
    const probe::Correctness c = probe::runCases(rs, executors);
    if (tty) fmt::print(stderr, "\n");
    fmt::print("{}", probe::formatTable(c));
    for (const auto& f : c.failures) fmt::print("FAILED {} [{}]: {}\n", f.caseName, f.variant, f.message);

    nlohmann::json card = {
        {"schema", kCardSchema},
        {"contract", cfg.contract},
        {"card", cfg.shape.card},
        {"device", deviceJson},
        {"config", sched::toJson(cfg)},
        {"correctness", probe::correctnessJson(c)},
    };
    const fs::path cardFile = fs::path(o.outDir) / fmt::format("card{}.json", cfg.shape.card);
    writeJson(cardFile, card);
    fmt::print("wrote {}\n", cardFile.string());
    return c.failed ? kExitCaseFailed : kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"ze-probe: the MoE expert-FFN decode chain on Level Zero, checked bit for bit"};
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
                   "m1_oracle (default: all; with --inputs: baseline)");
    app.add_option("--device", o.device,
                   "host (the host oracle), intel, zecl, or an index from --list-devices (default: first Intel GPU, "
                   "else first zecl device)");
    app.add_option("--route-pattern", o.routePattern, "route pattern of CONTRACT §6, or all");
    app.add_option("--out", o.outDir, "directory for card<N>.json");
    app.add_option("--seed", o.seed, "base seed of cases and random weights (config key: seed)");
    app.add_flag("--list-devices", o.listDevices, "list Level Zero drivers and devices (Intel GPUs, zecl) and exit");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? kExitOk : kExitBadInput;
    }
    try {
        return run(o);
    } catch (const sched::InputError& e) {
        fmt::print(stderr, "ze-probe: error: {}\n", e.what());
        return kExitBadInput;
    } catch (const ze::Error& e) {
        fmt::print(stderr, "ze-probe: Level Zero error: {}\n", e.what());
        return kExitCaseFailed;
    } catch (const std::exception& e) {
        fmt::print(stderr, "ze-probe: internal error: {}\n", e.what());
        return kExitCaseFailed;
    }
}
