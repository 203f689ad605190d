// The host oracle's answer for examples/consumer/main.cpp: the same shape, seed and inputs
// (keep them in step with that file), printed in the same "out[0]" / "out fnv1a" lines.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "zp/oracle/chain.hpp"
#include "zp/probe/cases.hpp"

int main() {
    zp::oracle::ChainShape shape;
    shape.hidden = 128;
    shape.intermediate = 64;
    shape.experts = 48;
    const auto weights = zp::probe::makeRandomWeights(shape, 7);

    zp::oracle::ChainInputs in;
    in.hidden.resize(2 * 128);
    for (std::size_t i = 0; i < in.hidden.size(); ++i)
        in.hidden[i] = std::uint16_t(((i % 3 == 0) ? 0xBE00 : 0x3E00) + (i * 37) % 256);
    in.topkIds = {0, 5, 11, 12, 30, 47, 5, 5, 2, 20, 40, 13};
    in.topkWeights = {0.3f, 0.2f, 0.1f, 0.1f, 0.2f, 0.1f, 0.25f, 0.25f, 0.5f, 0.0f, 0.0f, 0.0f};
    const auto out = zp::oracle::runChain(shape, weights, in, zp::oracle::buildSiluTable(shape.swigluAlpha)).out;

    std::uint64_t hash = 1469598103934665603ull;
    for (std::uint16_t v : out)
        for (int b = 0; b < 2; ++b) hash = (hash ^ ((v >> (8 * b)) & 0xFF)) * 1099511628211ull;
    std::printf("out[0] = 0x%04x\nout fnv1a = 0x%016llx\n", out[0], static_cast<unsigned long long>(hash));
    return 0;
}
