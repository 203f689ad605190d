// One zecl fault scenario through the zeprobe facade, in its own process (zecl counts the calls
// of each kind per process, so every scenario needs a fresh one). Run by test_faults.cpp.
//
//   fault_scenario <ZECL_FAULT value> <variant>
//
// Sets ZECL_FAULT before the first Level Zero call, then walks Device → Layer::random → Chain →
// forward() × 3 at the reduced shape. A stage that throws zeprobe::Error is reported
//   error stage=<stage> code=<errorCodeName> ze_result=0x<hex> what=<message>
// and retried once (a zecl fault fires once), so the run also shows that the facade recovers:
// the Device, Layer and Chain made after the error give the host oracle's bits.
// Exit: 0 no error and oracle bits; 3 one or more zeprobe::Errors (`ok errors=N`), each stage
// recovered on its retry, oracle bits; 4 a retry failed too; 5 wrong bits; 6 another exception
// type escaped.
#include <zeprobe/zeprobe.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "zp/oracle/chain.hpp"
#include "zp/oracle/numerics.hpp"
#include "zp/probe/cases.hpp"
#include "zeprobe_test_support.hpp"

namespace {

const zeprobe::Shape kShape{.hidden = 128, .intermediate = 64, .experts = 48};
constexpr std::uint64_t kSeed = 1;

using zp::zeprobe_test::Step;

zp::oracle::ChainShape oracleShape() { return zp::zeprobe_test::oracleShape(kShape, kShape.rows); }

// Half the routes on card 0's experts, so that every forward() has local work.
Step makeStep(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> any(0, kShape.experts - 1), local(0, kShape.experts / kShape.cards - 1);
    std::uniform_real_distribution<float> w(-1.0f, 1.0f);
    Step st;
    for (int i = 0; i < kShape.rows * kShape.hidden; ++i) st.hidden.push_back(zp::oracle::bf16FromF32(normal(rng)));
    for (int i = 0; i < kShape.rows * kShape.topK; ++i) {
        st.ids.push_back((i % 2 == 0) ? local(rng) : any(rng));
        st.weights.push_back(w(rng));
    }
    return st;
}

int errors = 0;

// Runs `f`; on zeprobe::Error reports it and runs `f` once more. Returns false when the retry failed.
template <class F>
bool stage(const char* name, F&& f) {
    for (int attempt = 0; attempt < 2; ++attempt) {
        try {
            f();
            if (attempt == 1) std::printf("recovered stage=%s\n", name);
            return true;
        } catch (const zeprobe::Error& e) {
            ++errors;
            std::printf("error stage=%s code=%s ze_result=0x%08x what=%s\n", name, zeprobe::errorCodeName(e.code()),
                        unsigned(e.zeResult()), e.what());
        }
    }
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: fault_scenario <ZECL_FAULT value> <variant>\n");
        return 2;
    }
    // Before the first zeInit: zecl reads it once, when the loader loads it.
    ::setenv("ZECL_FAULT", argv[1], 1);
    const std::string variant = argv[2];
    try {
        std::optional<zeprobe::Device> device;
        std::optional<zeprobe::Layer> layer;
        std::optional<zeprobe::Chain> chain;
        if (!stage("device", [&] { device.emplace(zeprobe::DeviceOptions{.device = "zecl"}); })) return 4;
        if (!stage("layer", [&] { layer.emplace(zeprobe::Layer::random(*device, kShape, kSeed)); })) return 4;
        if (!stage("chain", [&] { chain.emplace(*layer, variant); })) return 4;

        const auto weights = zp::probe::makeRandomWeights(oracleShape(), kSeed);
        const auto silu = zp::oracle::buildSiluTable(1.0);
        int wrong = 0;
        for (std::uint64_t i = 0; i < 3; ++i) {
            const Step st = makeStep(100 + i);
            std::vector<std::uint16_t> out;
            if (!stage("forward", [&] { out = chain->forward(st.hidden, st.ids, st.weights); })) return 4;
            const auto want = zp::oracle::runChain(oracleShape(), weights,
                                                   zp::oracle::ChainInputs{st.hidden, st.ids, st.weights}, silu)
                                  .out;
            if (out != want) {
                std::printf("forward %d: output differs from the host oracle\n", int(i));
                ++wrong;
            }
        }
        if (wrong) return 5;
        std::printf("ok errors=%d\n", errors);
    } catch (const std::exception& e) {
        std::printf("escaped: %s\n", e.what());
        return 6;
    }
    return errors == 0 ? 0 : 3;
}
