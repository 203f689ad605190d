#include "zp/probe/config.hpp"

#include "yaml_document.hpp"
#include "zp/probe/file_io.hpp"

#include <unistd.h>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <tuple>

namespace zp::probe {
namespace {

// Where errors point: the file (with line:column from the node) or "--set" (no positions).
struct Ctx {
    std::string name;
    bool marks;
};

std::string where(const Ctx& c, const YAML::Node& n) { return nodeLocation(c.name, n, c.marks); }

[[noreturn]] void fail(const Ctx& c, const YAML::Node& n, const std::string& path, const std::string& what) {
    failAt(c.name, n, path, what, c.marks);
}

// The text of a scalar value; `expected` names what the key takes ("an integer", ...).
const std::string& scalar(const Ctx& c, const YAML::Node& n, const std::string& path, const std::string& expected) {
    if (!n.IsScalar()) fail(c, n, path, "got " + nodeKindName(n) + ", expected " + expected);
    return n.Scalar();
}

void refuseTagged(const Ctx& c, const YAML::Node& n, const std::string& path, const std::string& expected) {
    refuseTaggedScalar(c.name, n, path, expected, c.marks);
}

template <class Int>
Int readInt(const Ctx& c, const YAML::Node& n, const std::string& path) {
    return readYamlInt<Int>(c.name, n, path, c.marks);
}

int readIntAtLeast(const Ctx& c, const YAML::Node& n, const std::string& path, int least) {
    return readYamlIntAtLeast(c.name, n, path, least, c.marks);
}

int readMultipleOf32(const Ctx& c, const YAML::Node& n, const std::string& path) {
    const int v = readInt<int>(c, n, path);
    if (v <= 0 || v % 32) fail(c, n, path, std::to_string(v) + ": must be a positive multiple of 32");
    return v;
}

double readDouble(const Ctx& c, const YAML::Node& n, const std::string& path) {
    const std::string& s = scalar(c, n, path, "a number");
    refuseTagged(c, n, path, "a number");
    std::string lower(s);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
    std::string_view t = lower;
    if (!t.empty() && (t.front() == '+' || t.front() == '-')) t.remove_prefix(1);
    if (!isQuotedScalar(n) && (t == ".inf" || t == ".nan" || t == "inf" || t == "nan" || t == "infinity"))
        fail(c, n, path, s + ": must be finite");
    std::string_view u = s;
    if (!u.empty() && u.front() == '+') u.remove_prefix(1);
    double v = 0;
    const auto [end, ec] = std::from_chars(u.data(), u.data() + u.size(), v);
    const bool starts =
        !u.empty() && (std::isdigit(static_cast<unsigned char>(u.front())) || u.front() == '.' || u.front() == '-');
    if (isQuotedScalar(n) || !starts || end != u.data() + u.size() ||
        (ec != std::errc() && ec != std::errc::result_out_of_range))
        fail(c, n, path, quotedForMessage(s) + ": not a number");
    if (ec == std::errc::result_out_of_range || !std::isfinite(v))
        fail(c, n, path, s + ": out of range (must be finite)");
    return v;
}

float readFloat(const Ctx& c, const YAML::Node& n, const std::string& path) {
    const double d = readDouble(c, n, path);
    if (std::fabs(d) > double(std::numeric_limits<float>::max()))
        fail(c, n, path, n.Scalar() + ": out of range for f32 (must be finite)");
    if (d != 0 && float(d) == 0)
        fail(c, n, path, n.Scalar() + ": underflows f32 to 0 (the smallest f32 above 0 is about 1.4e-45)");
    return float(d);
}

std::string floatText(float f) {
    std::array<char, 64> buf{};
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), f);
    return std::string(buf.data(), r.ptr);
}
std::string doubleText(double d) {
    std::array<char, 64> buf{};
    const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), d);
    return std::string(buf.data(), r.ptr);
}
// swiglu.limit is read as the double its text names and must equal a BF16 value exactly, so it
// is written as the double's shortest text, which names exactly that value; the f32's shortest
// text names a nearby decimal instead (0.10009766 for 0.10009765625, 1.8446744e+20 for 5 * 2^65)
// and would not read back.
std::string limitText(float limit) { return doubleText(double(limit)); }

using Setter = std::function<void(Config&, const YAML::Node&, const Ctx&, const std::string& path)>;
struct Leaf {
    std::string path;
    Setter set;
};

// Every key, in the order of CONTRACT §1 and of toYaml().
const std::vector<Leaf>& leaves() {
    static const std::vector<Leaf> table = {
        {"contract",
         [](Config& cfg, const YAML::Node& n, const Ctx& c, const std::string& p) {
             const int v = readInt<int>(c, n, p);
             if (v != 1) fail(c, n, p, std::to_string(v) + ": this build implements contract 1 only");
             cfg.contract = v;
         }},
        {"hidden", [](Config& cfg, const YAML::Node& n, const Ctx& c,
                      const std::string& p) { cfg.shape.hidden = readMultipleOf32(c, n, p); }},
        {"intermediate", [](Config& cfg, const YAML::Node& n, const Ctx& c,
                            const std::string& p) { cfg.shape.intermediate = readMultipleOf32(c, n, p); }},
        {"experts", [](Config& cfg, const YAML::Node& n, const Ctx& c,
                       const std::string& p) { cfg.shape.experts = readIntAtLeast(c, n, p, 1); }},
        {"top_k", [](Config& cfg, const YAML::Node& n, const Ctx& c,
                     const std::string& p) { cfg.shape.topK = readIntAtLeast(c, n, p, 1); }},
        {"rows", [](Config& cfg, const YAML::Node& n, const Ctx& c,
                    const std::string& p) { cfg.shape.rows = readIntAtLeast(c, n, p, 1); }},
        {"cards", [](Config& cfg, const YAML::Node& n, const Ctx& c,
                     const std::string& p) { cfg.shape.cards = readIntAtLeast(c, n, p, 1); }},
        {"card", [](Config& cfg, const YAML::Node& n, const Ctx& c,
                    const std::string& p) { cfg.shape.card = readIntAtLeast(c, n, p, 0); }},
        {"layers", [](Config& cfg, const YAML::Node& n, const Ctx& c,
                      const std::string& p) { cfg.layers = readIntAtLeast(c, n, p, 1); }},
        {"seed", [](Config& cfg, const YAML::Node& n, const Ctx& c,
                    const std::string& p) { cfg.seed = readInt<std::uint64_t>(c, n, p); }},
        {"swiglu.limit",
         [](Config& cfg, const YAML::Node& n, const Ctx& c, const std::string& p) {
             // §5.5: g may equal L and SILU is indexed by BF16 bits, so L must be exactly a BF16 value.
             const double d = readDouble(c, n, p);
             const float f = float(d);
             if (d < 0 || double(f) != d || oracle::f32FromBf16(oracle::bf16FromF32(f)) != f)
                 fail(c, n, p,
                      n.Scalar() + ": must be a non-negative value exactly representable in BF16 (e.g. 7, 10, 7.5)");
             cfg.shape.swigluLimit = f;
         }},
        {"swiglu.alpha", [](Config& cfg, const YAML::Node& n, const Ctx& c,
                            const std::string& p) { cfg.shape.swigluAlpha = readFloat(c, n, p); }},
        {"swiglu.up_bias", [](Config& cfg, const YAML::Node& n, const Ctx& c,
                              const std::string& p) { cfg.shape.swigluUpBias = readFloat(c, n, p); }},
        {"gate_up_layout",
         [](Config& cfg, const YAML::Node& n, const Ctx& c, const std::string& p) {
             const std::string& s = scalar(c, n, p, "split or interleaved");
             if (s == "split")
                 cfg.shape.layout = oracle::GateUpLayout::Split;
             else if (s == "interleaved")
                 cfg.shape.layout = oracle::GateUpLayout::Interleaved;
             else
                 fail(c, n, p, quotedForMessage(s) + ": must be split or interleaved");
         }},
        {"weights.prefix",
         [](Config& cfg, const YAML::Node& n, const Ctx& c, const std::string& p) {
             // tensor names are JSON strings (UTF-8), and toYaml/toJson could not write other bytes.
             const std::string v = n.IsNull() ? std::string() : scalar(c, n, p, "a string (tensor name prefix)");
             try {
                 (void)nlohmann::json(v).dump();
             } catch (const nlohmann::json::type_error&) {
                 fail(c, n, p, quotedForMessage(v) + ": not valid UTF-8 (tensor names are UTF-8)");
             }
             cfg.weightsPrefix = v;
         }},
        {"gate.min_saving_ms",
         [](Config& cfg, const YAML::Node& n, const Ctx& c, const std::string& p) {
             const double v = readDouble(c, n, p);
             if (v < 0) fail(c, n, p, n.Scalar() + ": must be a non-negative number of milliseconds");
             cfg.gateMinSavingMs = v;
         }},
        {"gate.reference_step_ms",
         [](Config& cfg, const YAML::Node& n, const Ctx& c, const std::string& p) {
             const double v = readDouble(c, n, p);
             if (!(v > 0)) fail(c, n, p, n.Scalar() + ": must be a positive number of milliseconds per token");
             cfg.gateReferenceStepMs = v;
         }},
    };
    return table;
}

const Leaf* findLeaf(const std::string& path) {
    for (const Leaf& l : leaves())
        if (l.path == path) return &l;
    return nullptr;
}

// The names directly under `group` ("" = top level), in table order.
std::vector<std::string> children(const std::string& group) {
    std::vector<std::string> out;
    const std::string prefix = group.empty() ? "" : group + ".";
    for (const Leaf& l : leaves()) {
        if (l.path.compare(0, prefix.size(), prefix) != 0) continue;
        const std::string rest = l.path.substr(prefix.size());
        const std::string first = rest.substr(0, rest.find('.'));
        if (std::find(out.begin(), out.end(), first) == out.end()) out.push_back(first);
    }
    return out;
}

bool isGroup(const std::string& path) { return !path.empty() && !findLeaf(path) && !children(path).empty(); }

std::string known(const std::string& group) {
    std::string s;
    for (const auto& k : children(group)) s += (s.empty() ? "" : ", ") + k;
    return "(known: " + s + ")";
}

std::string join(const std::string& group, const std::string& key) { return group.empty() ? key : group + "." + key; }

// `leavesSet`: the keys set so far in one document, by their dotted paths, so that one key given
// twice in two spellings ("swiglu.limit: 7" beside "swiglu: {limit: 8}") is refused like a
// duplicate key rather than decided by the order.
void applyMap(Config& cfg, const YAML::Node& map, const std::string& group, const Ctx& c,
              std::set<std::string>& leavesSet);

// The key at `path`, a leaf or a group, set from `value`; false when no key has that path.
bool applyPath(Config& cfg, const std::string& path, const YAML::Node& value, const Ctx& c,
               std::set<std::string>& leavesSet) {
    if (const Leaf* leaf = findLeaf(path))
        leaf->set(cfg, value, c, path);
    else if (isGroup(path))
        applyMap(cfg, value, path, c, leavesSet);
    else
        return false;
    return true;
}

void applyMap(Config& cfg, const YAML::Node& map, const std::string& group, const Ctx& c,
              std::set<std::string>& leavesSet) {
    if (map.IsNull()) return;  // "swiglu:" with nothing under it: no keys to apply
    if (!map.IsMap())
        throw InputError(where(c, map) + ": " + (group.empty() ? "" : group + ": ") + "got " + nodeKindName(map) +
                         ", expected a map of keys " + known(group));
    std::set<std::string> seen;
    for (const auto& kv : map) {
        const YAML::Node& key = kv.first;
        if (!key.IsScalar())
            throw InputError(where(c, key) + ": " + (group.empty() ? "" : group + ": ") + "a key must be a name, got " +
                             nodeKindName(key) + " " + known(group));
        const std::string path = join(group, key.Scalar());
        if (!seen.insert(key.Scalar()).second) fail(c, key, path, "duplicate key");
        if (findLeaf(path) && !leavesSet.insert(path).second)
            fail(c, key, path, "given twice (as a dotted key and under its group): give it once");
        if (!applyPath(cfg, path, kv.second, c, leavesSet)) fail(c, key, path, "unknown key " + known(group));
    }
}

}  // namespace

bool Config::operator==(const Config& o) const {
    const auto& a = shape;
    const auto& b = o.shape;
    return a.hidden == b.hidden && a.intermediate == b.intermediate && a.experts == b.experts && a.topK == b.topK &&
           a.rows == b.rows && a.cards == b.cards && a.card == b.card && a.swigluLimit == b.swigluLimit &&
           a.swigluAlpha == b.swigluAlpha && a.swigluUpBias == b.swigluUpBias && a.layout == b.layout &&
           layers == o.layers && weightsPrefix == o.weightsPrefix && gateMinSavingMs == o.gateMinSavingMs &&
           gateReferenceStepMs == o.gateReferenceStepMs && seed == o.seed && contract == o.contract;
}

void applyConfigNode(Config& cfg, const YAML::Node& root, const std::string& nameForErrors) {
    const Ctx c{nameForErrors, true};
    try {
        std::set<std::string> leavesSet;
        applyMap(cfg, root, "", c, leavesSet);
    } catch (const YAML::Exception& e) {
        throw InputError(nameForErrors + ": " + e.what());
    }
}

void applyConfigKey(Config& cfg, const std::string& dottedKey, const YAML::Node& value,
                    const std::string& nameForErrors) {
    const Ctx c{nameForErrors, true};
    try {
        std::set<std::string> leavesSet;
        if (!applyPath(cfg, dottedKey, value, c, leavesSet)) fail(c, value, dottedKey, "unknown key " + known(""));
    } catch (const YAML::Exception& e) {
        throw InputError(nameForErrors + ": " + e.what());
    }
}

Config parseConfig(const std::string& yamlText, const std::string& nameForErrors) {
    const YAML::Node root = loadSingleDocument(yamlText, nameForErrors);
    Config cfg;
    if (root.IsDefined() && !root.IsNull()) applyConfigNode(cfg, root, nameForErrors);
    try {
        validate(cfg);
    } catch (const InputError& e) {
        throw InputError(nameForErrors + ": " + e.what(), e.kind());
    }
    return cfg;
}

Config loadConfig(const std::filesystem::path& path) {
    return parseConfig(readTextFile(path, "config"), path.string());
}

void applySet(Config& cfg, std::string_view keyEqualsValue) {
    const Ctx c{"--set", false};
    const auto eq = keyEqualsValue.find('=');
    if (eq == std::string_view::npos || eq == 0)
        throw InputError("--set " + quotedForMessage(keyEqualsValue) +
                         ": expected key=value, e.g. --set swiglu.limit=7");
    const std::string key(keyEqualsValue.substr(0, eq));
    const std::string valueText(keyEqualsValue.substr(eq + 1));
    // One line of text: YAML would fold a line break into a space and read leading 0xFF 0xFE or
    // 0xFE 0xFF as a UTF-16 byte-order mark, so the key would get another value than the one given.
    const bool control =
        std::any_of(valueText.begin(), valueText.end(), [](char ch) { return (unsigned char)ch < 0x20 || ch == 0x7f; });
    const bool bom =
        valueText.size() >= 2 && ((unsigned char)valueText[0] == 0xff || (unsigned char)valueText[0] == 0xfe ||
                                  valueText.rfind("\xef\xbb\xbf", 0) == 0);
    if (control || bom)
        throw InputError("--set " + key + ": " + quotedForMessage(valueText) + ": " +
                         (control ? "a control character (line break, tab, ...) in the value"
                                  : "the value starts with a byte-order mark") +
                         "; give one line of plain text");
    YAML::Node value;
    try {
        value = YAML::Load(valueText);
    } catch (const YAML::Exception& e) {
        throw InputError("--set " + key + ": " + quotedForMessage(valueText) + ": malformed YAML value: " +
                         (dynamic_cast<const YAML::ParserException*>(&e)
                              ? static_cast<const YAML::ParserException&>(e).msg
                              : std::string(e.what())));
    }
    // Walk the dotted key down the groups so that an unknown part is named with its siblings.
    std::string group;
    std::string_view rest = key;
    while (true) {
        const auto dot = rest.find('.');
        const std::string path = join(group, std::string(rest.substr(0, dot)));
        if (dot == std::string_view::npos) {
            try {
                std::set<std::string> leavesSet;
                if (!applyPath(cfg, path, value, c, leavesSet))
                    throw InputError("--set " + path + ": unknown key " + known(group));
            } catch (const YAML::Exception& e) {
                throw InputError("--set " + path + ": " + e.what());
            }
            return;
        }
        if (!isGroup(path))
            throw InputError("--set " + key + ": unknown key " +
                             (findLeaf(path) ? "(" + path + " takes a value, it has no keys under it)" : known(group)));
        group = path;
        rest = rest.substr(dot + 1);
    }
}

void validateShapeLimits(const oracle::ChainShape& s) {
    try {
        oracle::validateShape(s);
    } catch (const std::invalid_argument& e) {
        throw InputError(e.what());
    }
    // The maxima first: with them the byte counts below cannot overflow.
    for (const auto& [key, value, most] : {std::tuple{"hidden", s.hidden, kMaxHidden},
                                           {"intermediate", s.intermediate, kMaxIntermediate},
                                           {"experts", s.experts, kMaxExperts},
                                           {"top_k", s.topK, kMaxTopK},
                                           {"rows", s.rows, kMaxRows},
                                           {"cards", s.cards, kMaxCards}})
        if (value > most)
            throw InputError(std::string(key) + " = " + std::to_string(value) + ": must be at most " +
                             std::to_string(most) + " (the documented maximum, docs/reliability.md)");
    if (layerBytes(s) > kMaxLayerBytes)
        throw InputError(
            fmt::format("experts = {} with cards = {}, hidden = {}, intermediate = {}: one card's {} "
                        "experts need {} bytes of weights, more than the documented maximum of {} bytes",
                        s.experts, s.cards, s.hidden, s.intermediate, s.localExperts(), layerBytes(s), kMaxLayerBytes));
}

void validate(const Config& cfg) {
    if (cfg.contract != 1)
        throw InputError("contract = " + std::to_string(cfg.contract) + ": this build implements contract 1 only");
    if (cfg.layers < 1) throw InputError("layers = " + std::to_string(cfg.layers) + ": must be at least 1");
    if (cfg.layers > kMaxLayers)
        throw InputError("layers = " + std::to_string(cfg.layers) + ": must be at most " + std::to_string(kMaxLayers) +
                         " (the documented maximum, docs/reliability.md)");
    validateShapeLimits(cfg.shape);
    // ze-probe's host oracle keeps a copy of the weights
    const long pages = ::sysconf(_SC_PHYS_PAGES), pageSize = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && pageSize > 0)
        checkFitsMemory(cfg.shape, std::uint64_t(pages) * std::uint64_t(pageSize) / 2, "half the host's memory");
    if (!std::isfinite(cfg.gateMinSavingMs) || cfg.gateMinSavingMs < 0)
        throw InputError("gate.min_saving_ms = " + doubleText(cfg.gateMinSavingMs) +
                         ": must be a finite, non-negative number of milliseconds");
    if (!std::isfinite(cfg.gateReferenceStepMs) || cfg.gateReferenceStepMs <= 0)
        throw InputError("gate.reference_step_ms = " + doubleText(cfg.gateReferenceStepMs) +
                         ": must be a finite, positive number of milliseconds per token");
}

std::uint64_t layerBytes(const oracle::ChainShape& s) {
    using W = oracle::LocalWeights;
    return std::uint64_t(s.localExperts()) *
           (W::w1BlocksPerExpert(s) + W::w1ScalesPerExpert(s) + W::w2BlocksPerExpert(s) + W::w2ScalesPerExpert(s));
}

void checkFitsMemory(const oracle::ChainShape& s, std::uint64_t availableBytes, const std::string& where) {
    const std::uint64_t need = layerBytes(s);
    if (availableBytes != 0 && need > availableBytes)
        throw InputError(
            fmt::format("experts = {} with cards = {}, hidden = {}, intermediate = {}: one card's {} "
                        "experts need {} bytes of weights, more than {} ({} bytes)",
                        s.experts, s.cards, s.hidden, s.intermediate, s.localExperts(), need, where, availableBytes));
}

std::string toYaml(const Config& cfg) {
    const auto& s = cfg.shape;
    std::string y;
    y += "contract: " + std::to_string(cfg.contract) + "\n";
    y += "hidden: " + std::to_string(s.hidden) + "\n";
    y += "intermediate: " + std::to_string(s.intermediate) + "\n";
    y += "experts: " + std::to_string(s.experts) + "\n";
    y += "top_k: " + std::to_string(s.topK) + "\n";
    y += "rows: " + std::to_string(s.rows) + "\n";
    y += "cards: " + std::to_string(s.cards) + "\n";
    y += "card: " + std::to_string(s.card) + "\n";
    y += "layers: " + std::to_string(cfg.layers) + "\n";
    y += "seed: " + std::to_string(cfg.seed) + "\n";
    y += "swiglu:\n";
    y += "  limit: " + limitText(s.swigluLimit) + "\n";
    y += "  alpha: " + floatText(s.swigluAlpha) + "\n";
    y += "  up_bias: " + floatText(s.swigluUpBias) + "\n";
    y += std::string("gate_up_layout: ") + (s.layout == oracle::GateUpLayout::Split ? "split" : "interleaved") + "\n";
    y += "weights:\n";
    y += "  prefix: " + quotedForMessage(cfg.weightsPrefix) +
         "\n";  // a JSON string is a valid YAML double-quoted scalar
    y += "gate:\n";
    y += "  min_saving_ms: " + doubleText(cfg.gateMinSavingMs) + "\n";
    y += "  reference_step_ms: " + doubleText(cfg.gateReferenceStepMs) + "\n";
    return y;
}

nlohmann::json toJson(const Config& cfg) {
    const auto& s = cfg.shape;
    // Through the shortest text of the f32 so that 1.702f prints as 1.702, not 1.7020000219345093;
    // the limit is a BF16 value read exactly (swiglu.limit above), so it is written exactly.
    auto num = [](float f) { return std::strtod(floatText(f).c_str(), nullptr); };
    return nlohmann::json{
        {"contract", cfg.contract},
        {"hidden", s.hidden},
        {"intermediate", s.intermediate},
        {"experts", s.experts},
        {"top_k", s.topK},
        {"rows", s.rows},
        {"cards", s.cards},
        {"card", s.card},
        {"layers", cfg.layers},
        {"seed", cfg.seed},
        {"swiglu", {{"limit", double(s.swigluLimit)}, {"alpha", num(s.swigluAlpha)}, {"up_bias", num(s.swigluUpBias)}}},
        {"gate_up_layout", s.layout == oracle::GateUpLayout::Split ? "split" : "interleaved"},
        {"weights", {{"prefix", cfg.weightsPrefix}}},
        {"gate", {{"min_saving_ms", cfg.gateMinSavingMs}, {"reference_step_ms", cfg.gateReferenceStepMs}}},
    };
}

}  // namespace zp::probe
