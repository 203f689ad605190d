// docs/contract.md §5: the host reference chain for one card, for any valid shape.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zp/oracle/numerics.hpp"

namespace zp::oracle {

enum class GateUpLayout { Split, Interleaved };

// The shape keys of CONTRACT §1 that the numerics depend on.
struct ChainShape {
    int hidden = 4096;        // H
    int intermediate = 2048;  // I
    int experts = 192;        // E (all cards)
    int topK = 6;             // K
    int rows = 2;             // M
    int cards = 4;            // C
    int card = 0;
    float swigluLimit = 10.0f;  // L
    float swigluAlpha = 1.0f;   // alpha
    float swigluUpBias = 0.0f;  // beta
    GateUpLayout layout = GateUpLayout::Split;

    int localExperts() const { return experts / cards; }
    int firstLocalExpert() const { return card * localExperts(); }
    int maxRoutes() const { return rows * topK; }
};

// Throws std::invalid_argument naming the key and the value when a shape breaks §1.
void validateShape(const ChainShape& s);

// MXFP4 weights of this card's local experts (E/C of them), stacked as CONTRACT §3:
// w1Blocks [E/C, 2I, H/32, 16], w1Scales [E/C, 2I, H/32],
// w2Blocks [E/C, H, I/32, 16],  w2Scales [E/C, H, I/32].
struct LocalWeights {
    std::vector<std::uint8_t> w1Blocks, w1Scales, w2Blocks, w2Scales;

    static LocalWeights zeros(const ChainShape& s);
    static std::size_t w1BlocksPerExpert(const ChainShape& s) { return std::size_t(2) * s.intermediate * s.hidden / 2; }
    static std::size_t w1ScalesPerExpert(const ChainShape& s) {
        return std::size_t(2) * s.intermediate * s.hidden / 32;
    }
    static std::size_t w2BlocksPerExpert(const ChainShape& s) { return std::size_t(s.hidden) * s.intermediate / 2; }
    static std::size_t w2ScalesPerExpert(const ChainShape& s) { return std::size_t(s.hidden) * s.intermediate / 32; }
};

struct ChainInputs {
    std::vector<bf16_t> hidden;         // [M, H]
    std::vector<std::int32_t> topkIds;  // [M, K] physical expert ids
    std::vector<float> topkWeights;     // [M, K]
};

// §5.2: compact rows (le, m) ordered by le then m, and cr(m, k) for every local route.
struct CompactRoutes {
    struct Row {
        std::int32_t localExpert;
        std::int32_t tokenRow;
        bool operator==(const Row&) const = default;
    };
    std::vector<Row> rows;               // R entries
    std::vector<std::int32_t> routeRow;  // [M, K]: compact row of route (m, k), -1 when not local
};

// Throws std::invalid_argument naming (m, k) and the id for an id outside [0, E) (§5.1).
// topk_ids come as int32 or, as torch.topk returns them, int64: the same routes for the same
// values, and an int64 id beyond int32 range is outside [0, E) like any other bad id.
CompactRoutes compactRoutes(const ChainShape& s, std::span<const std::int32_t> topkIds);
CompactRoutes compactRoutes(const ChainShape& s, std::span<const std::int64_t> topkIds);

// §5.1's device error flag as the host computes it: how many ids lie outside [0, E) and the
// route index m*K + k of the first (-1 when none). What every variant's route_info must say.
struct InvalidIds {
    int count = 0;
    int firstRoute = -1;
    bool operator==(const InvalidIds&) const = default;
};
InvalidIds invalidIds(const ChainShape& s, std::span<const std::int32_t> topkIds);
InvalidIds invalidIds(const ChainShape& s, std::span<const std::int64_t> topkIds);

// int64 ids as the chain's int32 ids (ChainInputs::topkIds): exact, since every valid id is in
// [0, E). Throws std::invalid_argument naming (m, k) (K = s.topK) and the id for one outside
// [0, E), an id beyond int32 range included.
std::vector<std::int32_t> narrowIds(const ChainShape& s, std::span<const std::int64_t> topkIds);

struct ChainOutputs {
    CompactRoutes routes;
    std::vector<bf16_t> gateUp;  // [R, 2I]
    std::vector<bf16_t> act;     // [R, I]
    std::vector<bf16_t> y;       // [R, H]
    std::vector<bf16_t> out;     // [M, H]
    bool metSubnormal = false;   // a subnormal f32 or BF16 value appeared anywhere in the chain (§2)
};

// The whole chain of §5 on the host. `silu` is the table of buildSiluTable(alpha).
ChainOutputs runChain(const ChainShape& s, const LocalWeights& w, const ChainInputs& in, std::span<const bf16_t> silu);

// The fixed-M1 form of the chain (one route row at a time, no compaction, no dedup): an
// independent path to `out` that must agree with runChain bit for bit (§7).
std::vector<bf16_t> runChainM1(const ChainShape& s, const LocalWeights& w, const ChainInputs& in,
                               std::span<const bf16_t> silu);

}  // namespace zp::oracle
