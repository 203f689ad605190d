// ze-probe's run of the case set: cases × variants against the host oracle, counted as
// passed / failed / skipped, and the card JSON. main.cpp parses the options and runs the
// modes (one --inputs case, the cards, a sweep) over this and device_session.hpp.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zp/oracle/chain.hpp"
#include "zp/probe/cases.hpp"
#include "zp/probe/config.hpp"
#include "zp/probe/variant.hpp"

namespace zp::app {

// What one executor produced for one case (tensors in compact-row order, as the dump).
struct ExecutorResult {
    oracle::ChainOutputs outputs;
    probe::Materialised materialised;
    // The fixed-M1 chain's y per route (m, k), route order [M*K, H]; empty for other executors.
    std::vector<oracle::bf16_t> routeY;
    std::optional<std::string> error;  // e.g. the device's invalid-id flag
};

// Everything one case run needs.
struct CaseRun {
    const oracle::ChainShape& shape;
    const oracle::LocalWeights& weights;
    const oracle::ChainInputs& inputs;
    std::span<const oracle::bf16_t> silu;
    const probe::Case* kase;  // null for a user's --inputs file
};

// Something that runs the chain: the host oracle or a device variant.
struct Executor {
    // The host's fixed-M1 chain (runChainM1): an independent path to `out`, no compaction.
    static Executor hostM1();

    std::string name;  // variant name, or "host" for the host oracle
    std::function<ExecutorResult(const CaseRun&)> run;
};

struct Failure {
    std::string caseName, variant, message;
};
struct Skip {
    std::string caseName, variant, reason;
};

struct PatternCounts {
    std::string pattern;
    std::optional<std::string> invalidReason;
    int passed = 0, failed = 0, skipped = 0;
};

struct Correctness {
    int passed = 0, failed = 0, skipped = 0;
    std::vector<Failure> failures;
    std::vector<Skip> skips;
    // [variant][pattern]
    std::vector<std::pair<std::string, std::vector<PatternCounts>>> table;
};

struct RunSettings {
    probe::Config config;
    std::vector<probe::RoutePattern> patterns;
    std::vector<int> inputVariants = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    // Weights from a file, used by every case as they are; else each case draws the weights
    // of the experts it touches (§7).
    std::optional<oracle::LocalWeights> fixedWeights;
    bool deviceFlushesSubnormals = false;
    // Called once per case before the executors run, e.g. to upload the touched experts.
    std::function<void(const probe::Case&, const oracle::LocalWeights&)> prepare;
    std::function<void(const std::string&)> progress;  // one line per case, may be empty
    // Called after each pattern of `patterns` (with how many are done), e.g. to time a block
    // between them so the timing's blocks spread over the run; may be empty.
    std::function<void(std::size_t patternsDone)> afterPattern;
};

// Runs every case of the chosen patterns through each executor and compares with the host
// oracle (runChain), bit for bit; when an executor is named "m1_oracle" (the on-device
// fixed-M1 chain) it runs first and every other executor's `out` must equal its `out` too.
Correctness runCases(const RunSettings&, const std::vector<Executor>&);

// Compares one executor's outputs with the oracle; empty when equal.
std::optional<std::string> compareWithOracle(const oracle::ChainShape&, const oracle::ChainOutputs& want,
                                             const ExecutorResult& got);

nlohmann::json correctnessJson(const Correctness&);
std::string formatTable(const Correctness&);

}  // namespace zp::app
