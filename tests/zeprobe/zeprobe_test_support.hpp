// What the tests of the zeprobe facade on zecl share (test_zeprobe_api and tests/tools'
// fault_scenario): the host oracle's shape for a facade shape, and one decode step's inputs.
#pragma once

#include <zeprobe/zeprobe.hpp>

#include <cstdint>
#include <vector>

#include "zp/oracle/chain.hpp"

namespace zp::zeprobe_test {

// The oracle's shape for `s` with `rows` token rows (the SwiGLU parameters stay the oracle's
// defaults, which are the facade's).
inline zp::oracle::ChainShape oracleShape(const zeprobe::Shape& s, int rows) {
    return {.hidden = s.hidden,
            .intermediate = s.intermediate,
            .experts = s.experts,
            .topK = s.topK,
            .rows = rows,
            .cards = s.cards,
            .card = s.card};
}

// One forward()'s inputs: bf16 hidden rows, topk ids and weights.
struct Step {
    std::vector<std::uint16_t> hidden;
    std::vector<std::int32_t> ids;
    std::vector<float> weights;
};

}  // namespace zp::zeprobe_test
