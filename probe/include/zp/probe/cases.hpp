// docs/contract.md §6 route patterns and §7 input variants: the 84 changed-input cases,
// generated from a seed with SplitMix64 (random.hpp), the same on every machine.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zp/oracle/chain.hpp"

namespace zp::probe {

enum class RoutePattern {
    SameTypical,
    DisjointTypical,
    CrossRowOverlap,
    WithinRowDuplicate,
    AllDuplicate,
    SixLocal,
    AllRemote,
};
inline constexpr std::array kAllRoutePatterns = {
    RoutePattern::SameTypical,        RoutePattern::DisjointTypical, RoutePattern::CrossRowOverlap,
    RoutePattern::WithinRowDuplicate, RoutePattern::AllDuplicate,    RoutePattern::SixLocal,
    RoutePattern::AllRemote,
};
inline constexpr int kInputVariants = 12;

std::string_view patternName(RoutePattern);
// Throws InputError naming the value and the valid names.
RoutePattern parsePattern(std::string_view name);

// Empty when the pattern can be formed for this shape; otherwise why not (§6: such a
// pattern is "not valid for this configuration" and not a route of the gate).
std::optional<std::string> patternInvalidReason(const oracle::ChainShape&, RoutePattern);

// topk_ids [M, K] of one pattern drawn from `seed`. Precondition: the pattern is valid.
std::vector<std::int32_t> makeRoutes(const oracle::ChainShape&, RoutePattern, std::uint64_t seed);

// The seed of case (pattern, variant) under a run's base seed.
std::uint64_t caseSeed(std::uint64_t baseSeed, RoutePattern, int inputVariant);

struct Case {
    RoutePattern pattern;
    int inputVariant;
    std::uint64_t seed;
    oracle::ChainInputs inputs;
    std::vector<int> touchedLocalExperts;  // ascending local expert ids named by local routes

    std::string name() const;  // e.g. "six_local/v3"
};

// Builds case (pattern, v): routes, hidden, routing weights. When `weights` is given, the
// touched local experts' W1/W2 blocks and scales are regenerated in place for this case
// (§7: "weights of the experts it touches ... change from case to case"); pass nullptr to
// keep the weights as they are (e.g. weights loaded from a file).
Case makeCase(const oracle::ChainShape&, RoutePattern, int inputVariant, std::uint64_t baseSeed,
              oracle::LocalWeights* weights);

// All local experts' weights drawn as input variant 0 (ordinary) from `seed`.
oracle::LocalWeights makeRandomWeights(const oracle::ChainShape&, std::uint64_t seed);

}  // namespace zp::probe
