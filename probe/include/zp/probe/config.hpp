// The run configuration: CONTRACT §1 shape keys plus layers, weights, gate and seed, from
// YAML (configs/*.yaml) and `--set key=value` overrides.
//
// Every bad input is an InputError naming the file (or "--set"), the key path and the value,
// e.g. "config.yaml:4:3: swiglu.limt: unknown key (known: limit, alpha, up_bias)".
// Per-key rules (types, ranges, "hidden: 100: must be a positive multiple of 32") are checked
// as each key is read; rules between keys (experts % cards, card < cards) by validate().
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "zp/oracle/chain.hpp"
#include "zp/probe/input_error.hpp"

namespace YAML {
class Node;
}

namespace zp::probe {

struct Config {
    oracle::ChainShape shape;       // hidden, intermediate, experts, top_k, rows, cards, card, swiglu.*, gate_up_layout
    int layers = 43;                // layers (CONTRACT §8 projection)
    std::string weightsPrefix;      // weights.prefix (CONTRACT §3 tensor names)
    double gateMinSavingMs = 0.50;  // gate.min_saving_ms (CONTRACT §8)
    // gate.reference_step_ms: the decode step a saving is put against as decode speed (the seed's
    // record: 63.35 tok/s on four Arc Pro B70s, 15.79 ms per token)
    double gateReferenceStepMs = 15.79;
    std::uint64_t seed = 20261129;  // seed (cases and random weights)
    int contract = 1;               // contract (must be 1)

    bool operator==(const Config& o) const;
};

// File → Config: defaults for absent keys, then validate(). An empty file gives the defaults.
Config loadConfig(const std::filesystem::path&);
Config parseConfig(const std::string& yamlText, const std::string& nameForErrors);

// Applies the keys of one YAML mapping (a whole config document) on top of `cfg`.
// Does not call validate(): cross-key rules may only hold once every source is applied.
void applyConfigNode(Config& cfg, const YAML::Node& root, const std::string& nameForErrors);
// One key of a config document, named by its dotted path ("hidden", "swiglu.limit", or a group
// such as "swiglu" with a map value), as if `value` stood under that path in a document: the same
// checks and messages as applyConfigNode, without building the enclosing document (a node made
// apart from `value`'s document would copy that whole document's memory each time).
void applyConfigKey(Config& cfg, const std::string& dottedKey, const YAML::Node& value,
                    const std::string& nameForErrors);

// One `--set key=value`: dotted key (swiglu.limit=7), value read with YAML scalar rules
// (a flow mapping works for a group: swiglu={limit: 7, alpha: 1.702}).
// Does not call validate(): call it after the last --set.
void applySet(Config& cfg, std::string_view keyEqualsValue);

// CONTRACT §1 through oracle::validateShape, plus contract == 1, layers >= 1 and a finite,
// non-negative gate.min_saving_ms. Throws InputError "<key> = <value>: <what is expected>".
void validate(const Config&);

// The shape alone as validate() checks it: CONTRACT §1 (oracle::validateShape), the maxima below
// and one card's weights within kMaxLayerBytes (validate() also wants them within half the host's
// memory, for the host oracle's copy). For callers that take a shape without a Config (the
// zeprobe facade's Layer factories, which check the device's memory instead).
void validateShapeLimits(const oracle::ChainShape&);

// Documented upper bounds (docs/reliability.md), checked by validate() with the key and value
// named, so that no shape reaches an allocation that cannot succeed (std::bad_alloc) or a size
// that overflows. Real models are far below them (gpt-oss-120b: hidden 2880, 128 experts).
inline constexpr int kMaxHidden = 65536, kMaxIntermediate = 65536, kMaxExperts = 65536, kMaxTopK = 1024,
                     kMaxRows = 1 << 20, kMaxCards = 65536, kMaxLayers = 100000;
// One card's weights (MXFP4 blocks and scales of its local experts) at most this many bytes, and
// at most half of the host's physical memory (the host oracle keeps a copy).
inline constexpr std::uint64_t kMaxLayerBytes = std::uint64_t(256) << 30;
std::uint64_t layerBytes(const oracle::ChainShape&);
// Throws InputError naming the shape when one card's weights do not fit `availableBytes` of
// `where` ("device Intel(R) Data Center GPU Max 1550 memory"); availableBytes 0 = unknown, no check.
void checkFitsMemory(const oracle::ChainShape&, std::uint64_t availableBytes, const std::string& where);

std::string toYaml(const Config&);     // parseConfig(toYaml(c)) == c
nlohmann::json toJson(const Config&);  // same keys and nesting as the YAML, for card JSON output

}  // namespace zp::probe
