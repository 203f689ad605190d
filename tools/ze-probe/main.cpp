// ze-probe: runs the MoE expert-FFN chain's cases on a device (or the host oracle) and
// checks them bit for bit against CONTRACT.md. Exit codes: 0 all good, 1 a case failed,
// 2 bad input or usage (message on stderr).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

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
    std::string variant = "baseline";
    std::string device = "host";
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

// --inputs: exactly that one case, optionally dumped.
int runOneCase(const Options& o, const sched::Config& cfg, const probe::Executor& exec, sched::Variant variant) {
    const auto& s = cfg.shape;
    const auto in = sched::loadInputs(o.inputsFile, s);
    const auto weights = o.weightsFile.empty() ? sched::makeRandomWeights(s, cfg.seed)
                                               : sched::loadWeights(o.weightsFile, s, cfg.weightsPrefix);
    const auto silu = oracle::buildSiluTable(s.swigluAlpha);
    const auto want = oracle::runChain(s, weights, in, silu);
    const auto got = exec.run(probe::CaseRun{s, weights, in, silu, nullptr});
    const auto mismatch = probe::compareWithOracle(s, want, got);
    if (!o.dumpFile.empty()) {
        // The host oracle's tensors, limited to what the variant materialises.
        sched::writeSafetensors(o.dumpFile, sched::dumpTensors(s, in, want, sched::materialised(variant)),
                                {{"variant", std::string(sched::variantName(variant))}, {"device", o.device},
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
    const sched::Variant variant = sched::parseVariant(o.variant);
    if (o.device != "host")
        throw sched::InputError("--device " + o.device + ": this build runs only the host oracle (--device host)");
    const probe::Executor exec = probe::Executor::hostM1();

    if (!o.inputsFile.empty()) return runOneCase(o, cfg, exec, variant);
    if (!o.dumpFile.empty()) throw sched::InputError("--dump needs --inputs (it dumps exactly that one case)");

    probe::RunSettings rs;
    rs.config = cfg;
    rs.patterns = choosePatterns(o.routePattern);
    if (!o.weightsFile.empty()) rs.weightsFile = o.weightsFile;
    const auto t0 = std::chrono::steady_clock::now();
    rs.progress = [&](const std::string& caseName) {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        fmt::print(stderr, "\r  {:<30} {:6.1f} s", caseName, s);
        std::fflush(stderr);
    };
    const probe::Correctness c = probe::runCases(rs, {exec});
    fmt::print(stderr, "\n");
    fmt::print("{}", probe::formatTable(c));
    for (const auto& f : c.failures) fmt::print("FAILED {} [{}]: {}\n", f.caseName, f.variant, f.message);

    nlohmann::json card = {
        {"schema", kCardSchema},
        {"contract", cfg.contract},
        {"card", cfg.shape.card},
        {"device", {{"name", "host oracle"}, {"type", "host"}}},
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
    app.add_option("--variant", o.variant, "chain variant (baseline, gemm2_loader_fused, source_direct, ...)");
    app.add_option("--device", o.device, "host (the host oracle)");
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
