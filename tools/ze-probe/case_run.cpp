#include "case_run.hpp"

#include <fmt/format.h>

#include "zp/probe/case_io.hpp"
#include "zp/probe/compare.hpp"

namespace zp::app {

Executor Executor::hostM1() {
    return {"host_m1", [](const CaseRun& run) {
                ExecutorResult r;
                r.outputs.out = oracle::runChainM1(run.shape, run.weights, run.inputs, run.silu);
                r.materialised = {false, false, false};
                return r;
            }};
}

std::optional<std::string> compareWithOracle(const oracle::ChainShape& s, const oracle::ChainOutputs& want,
                                             const ExecutorResult& got) {
    if (got.error) return *got.error;
    const std::size_t R = want.routes.rows.size();
    if (got.materialised.y || got.materialised.gateUp || got.materialised.act) {
        if (got.outputs.routes.rows != want.routes.rows)
            return fmt::format("compact_rows: got {} rows, want {} (or a different order)",
                               got.outputs.routes.rows.size(), R);
    }
    struct Item {
        bool on;
        const char* name;
        const std::vector<oracle::bf16_t>& got;
        const std::vector<oracle::bf16_t>& want;
        std::size_t cols;
    };
    const Item items[] = {
        {got.materialised.gateUp, "gate_up", got.outputs.gateUp, want.gateUp, std::size_t(2) * s.intermediate},
        {got.materialised.act, "act", got.outputs.act, want.act, std::size_t(s.intermediate)},
        {got.materialised.y, "y", got.outputs.y, want.y, std::size_t(s.hidden)},
        {true, "out", got.outputs.out, want.out, std::size_t(s.hidden)},
    };
    for (const Item& it : items) {
        if (!it.on) continue;
        if (auto mm = probe::firstMismatch(it.name, it.got, it.want, it.cols)) return mm->describe(it.want.size());
    }
    if (!got.routeY.empty()) {
        // The M1 chain's y of every local route (m, k) equals y of its compact row cr(m, k).
        const std::size_t H = std::size_t(s.hidden);
        if (got.routeY.size() != std::size_t(s.rows) * s.topK * H)
            return fmt::format("y per route: got {} values, want {}", got.routeY.size(),
                               std::size_t(s.rows) * s.topK * H);
        for (int route = 0; route < s.rows * s.topK; ++route) {
            const std::int32_t r = want.routes.routeRow[std::size_t(route)];
            if (r < 0) continue;
            const std::span<const oracle::bf16_t> g(got.routeY.data() + std::size_t(route) * H, H);
            const std::span<const oracle::bf16_t> w(want.y.data() + std::size_t(r) * H, H);
            if (auto mm =
                    probe::firstMismatch(fmt::format("y(route m={}, k={})", route / s.topK, route % s.topK), g, w, H))
                return mm->describe(H);
        }
    }
    return std::nullopt;
}

Correctness runCases(const RunSettings& rs, const std::vector<Executor>& executors) {
    const oracle::ChainShape& s = rs.config.shape;
    Correctness c;
    for (const Executor& e : executors) {
        std::vector<PatternCounts> rows;
        for (auto p : rs.patterns)
            rows.push_back({std::string(probe::patternName(p)), probe::patternInvalidReason(s, p)});
        c.table.emplace_back(e.name, std::move(rows));
    }
    const auto silu = oracle::buildSiluTable(s.swigluAlpha);
    const bool drawWeights = !rs.fixedWeights;
    oracle::LocalWeights drawn = drawWeights ? oracle::LocalWeights::zeros(s) : oracle::LocalWeights{};
    const oracle::LocalWeights& weights = drawWeights ? drawn : *rs.fixedWeights;

    std::size_t caseNumber = 0;
    for (std::size_t pi = 0; pi < rs.patterns.size(); ++pi) {
        const auto pattern = rs.patterns[pi];
        // An invalid pattern has no cases; afterPattern still marks it done.
        const std::span<const int> variants =
            probe::patternInvalidReason(s, pattern) ? std::span<const int>{} : std::span<const int>(rs.inputVariants);
        for (int v : variants) {
            const probe::Case kase = probe::makeCase(s, pattern, v, rs.config.seed, drawWeights ? &drawn : nullptr);
            const std::string caseName = kase.name();
            const oracle::ChainOutputs want = oracle::runChain(s, weights, kase.inputs, silu);
            if (rs.prepare) rs.prepare(kase, weights);
            std::optional<std::vector<oracle::bf16_t>> m1Out;  // the on-device M1 oracle's out
            // The M1 oracle first (the others are checked against it), the rest rotated by
            // one each case, so their executions interleave in every order (timing, §8).
            const std::size_t fixed = !executors.empty() && executors.front().name == "m1_oracle" ? 1 : 0;
            std::vector<std::size_t> order;
            for (std::size_t i = 0; i < fixed; ++i) order.push_back(i);
            const std::size_t rest = executors.size() - fixed;
            for (std::size_t i = 0; i < rest; ++i) order.push_back(fixed + (i + caseNumber) % rest);
            ++caseNumber;
            for (std::size_t ei : order) {
                PatternCounts& counts = c.table[ei].second[pi];
                const std::string& variant = executors[ei].name;
                auto fail = [&](const std::string& msg) {
                    ++counts.failed;
                    ++c.failed;
                    c.failures.push_back({caseName, variant, msg});
                };
                if (rs.deviceFlushesSubnormals && want.metSubnormal) {
                    ++counts.skipped;
                    ++c.skipped;
                    c.skips.push_back(
                        {caseName, variant,
                         "the device flushes f32 subnormals and the oracle met one in this case (CONTRACT §2)"});
                    continue;
                }
                ExecutorResult got;
                try {
                    got = executors[ei].run(CaseRun{s, weights, kase.inputs, silu, &kase});
                } catch (const std::exception&) {  // the error itself follows from the caller
                    fmt::print(stderr, "ze-probe: case {}, variant {}: the execution failed\n", caseName, variant);
                    throw;
                }
                if (variant == "m1_oracle") m1Out = got.outputs.out;
                std::optional<std::string> why = compareWithOracle(s, want, got);
                if (!why && m1Out && variant != "m1_oracle")
                    if (auto mm = probe::firstMismatch("out", got.outputs.out, *m1Out, std::size_t(s.hidden)))
                        why = "against the on-device m1_oracle: " + mm->describe(m1Out->size());
                if (why) {
                    fail(*why);
                } else {
                    ++counts.passed;
                    ++c.passed;
                }
            }
            if (rs.progress) rs.progress(caseName);
        }
        if (rs.afterPattern) rs.afterPattern(pi + 1);
    }
    return c;
}

nlohmann::json correctnessJson(const Correctness& c) {
    nlohmann::json j = {{"passed", c.passed}, {"failed", c.failed}, {"skipped", c.skipped}};
    j["failures"] = nlohmann::json::array();
    for (const auto& f : c.failures)
        j["failures"].push_back({{"case", f.caseName}, {"variant", f.variant}, {"message", f.message}});
    j["skips"] = nlohmann::json::array();
    for (const auto& s : c.skips)
        j["skips"].push_back({{"case", s.caseName}, {"variant", s.variant}, {"reason", s.reason}});
    j["by_variant"] = nlohmann::json::object();
    for (const auto& [variant, rows] : c.table) {
        auto& v = j["by_variant"][variant];
        for (const auto& r : rows) {
            if (r.invalidReason)
                v[r.pattern] = {{"valid", false}, {"reason", *r.invalidReason}};
            else
                v[r.pattern] = {{"valid", true}, {"passed", r.passed}, {"failed", r.failed}, {"skipped", r.skipped}};
        }
    }
    return j;
}

std::string formatTable(const Correctness& c) {
    std::string out;
    for (const auto& [variant, rows] : c.table) {
        out += fmt::format("{}\n", variant);
        out += fmt::format("  {:<22} {:>6} {:>6} {:>7}\n", "pattern", "passed", "failed", "skipped");
        for (const auto& r : rows) {
            if (r.invalidReason)
                out += fmt::format("  {:<22} not valid for this configuration: {}\n", r.pattern, *r.invalidReason);
            else
                out += fmt::format("  {:<22} {:>3}/{:<2} {:>6} {:>7}\n", r.pattern, r.passed,
                                   r.passed + r.failed + r.skipped, r.failed, r.skipped);
        }
    }
    out += fmt::format("total: {} passed, {} failed, {} skipped\n", c.passed, c.failed, c.skipped);
    return out;
}

}  // namespace zp::app
