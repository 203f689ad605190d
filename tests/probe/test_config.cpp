#include "zp/probe/config.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace zp::probe {
namespace {

// The InputError message of parsing `yaml` as config.yaml, or "" when it parsed.
std::string parseError(const std::string& yaml) {
    try {
        parseConfig(yaml, "config.yaml");
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

std::string setError(std::string_view kv) {
    Config cfg;
    try {
        applySet(cfg, kv);
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

#define EXPECT_CONTAINS(text, fragment)                              \
    do {                                                             \
        const std::string text_ = (text);                            \
        EXPECT_NE(text_.find(fragment), std::string::npos) << text_; \
    } while (0)

Config nonDefault() {
    Config c;
    c.shape.hidden = 2880;
    c.shape.intermediate = 2880;
    c.shape.experts = 32;
    c.shape.topK = 4;
    c.shape.rows = 1;
    c.shape.cards = 2;
    c.shape.card = 1;
    c.shape.swigluLimit = 7.0f;
    c.shape.swigluAlpha = 1.702f;
    c.shape.swigluUpBias = 1.0f;
    c.shape.layout = oracle::GateUpLayout::Interleaved;
    c.layers = 24;
    c.weightsPrefix = "model.layers.0.mlp.experts.\"odd\": #x";
    c.gateMinSavingMs = 0.125;
    c.gateReferenceStepMs = 12.5;
    c.seed = 18446744073709551615ull;
    return c;
}

// ---- good input ----

TEST(Config, GivenAnEmptyFile_WhenParsed_ThenEveryKeyHasItsContractDefault) {
    const Config c = parseConfig("", "empty.yaml");
    EXPECT_EQ(c, Config{});
    EXPECT_EQ(c.shape.hidden, 4096);
    EXPECT_EQ(c.shape.experts, 192);
    EXPECT_EQ(c.layers, 43);
    EXPECT_EQ(c.seed, 20261129u);
    EXPECT_EQ(c.gateMinSavingMs, 0.50);
    EXPECT_EQ(c.gateReferenceStepMs, 15.79);  // the seed's 63.35 tok/s on four B70s
}

TEST(Config, GivenTheShippedDeepSeekConfig_WhenLoaded_ThenItEqualsTheDefaults) {
    // ZP_CONFIG_DIR is the source tree's configs/ (set by CMake): a missing file is a failure.
    const auto path = std::filesystem::path(ZP_CONFIG_DIR) / "deepseek-v4-flash.yaml";
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    EXPECT_EQ(loadConfig(path), Config{});
}

TEST(Config, GivenSomeKeys_WhenParsed_ThenTheyOverrideAndTheRestKeepDefaults) {
    const Config c =
        parseConfig("hidden: 2880\nswiglu:\n  limit: 7\n  alpha: 1.702\ngate_up_layout: interleaved\n", "c.yaml");
    EXPECT_EQ(c.shape.hidden, 2880);
    EXPECT_EQ(c.shape.swigluLimit, 7.0f);
    EXPECT_EQ(c.shape.swigluAlpha, 1.702f);
    EXPECT_EQ(c.shape.swigluUpBias, 0.0f);
    EXPECT_EQ(c.shape.layout, oracle::GateUpLayout::Interleaved);
    EXPECT_EQ(c.shape.intermediate, 2048);
}

TEST(Config, GivenANonDefaultConfig_WhenWrittenAsYamlAndParsed_ThenItIsIdentical) {
    const Config c = nonDefault();
    EXPECT_EQ(parseConfig(toYaml(c), "roundtrip"), c);
    EXPECT_EQ(parseConfig(toYaml(Config{}), "roundtrip"), Config{});
}

// swiglu.limit must be exactly a BF16 value; the ones whose shortest f32 text is another decimal
// (a long fraction, a large power of two) must still read back from toYaml, and toJson must give
// the value itself.
TEST(Config, GivenABf16LimitWithALongDecimal_WhenWrittenAsYamlAndJsonAndParsed_ThenItIsExactlyTheSame) {
    for (const double limit : {0.10009765625, 184467440737095516160.0 /* 5 * 2^65 */, 3.0517578125e-05}) {
        Config c;
        c.shape.swigluLimit = float(limit);
        ASSERT_EQ(double(c.shape.swigluLimit), limit);
        const std::string yaml = toYaml(c);
        Config back;
        ASSERT_NO_THROW(back = parseConfig(yaml, "roundtrip")) << yaml;
        EXPECT_EQ(back, c) << yaml;
        EXPECT_EQ(toJson(c).at("swiglu").at("limit").get<double>(), limit);
    }
}

TEST(Config, GivenAConfig_WhenConvertedToJson_ThenKeysAndValuesMatchTheYamlNames) {
    const nlohmann::json j = toJson(nonDefault());
    EXPECT_EQ(j.at("contract"), 1);
    EXPECT_EQ(j.at("hidden"), 2880);
    EXPECT_EQ(j.at("top_k"), 4);
    EXPECT_EQ(j.at("seed").get<std::uint64_t>(), 18446744073709551615ull);
    EXPECT_EQ(j.at("swiglu").at("alpha").dump(), "1.702");
    EXPECT_EQ(j.at("swiglu").at("limit").get<double>(), 7.0);
    EXPECT_EQ(j.at("gate_up_layout"), "interleaved");
    EXPECT_EQ(j.at("weights").at("prefix"), "model.layers.0.mlp.experts.\"odd\": #x");
    EXPECT_EQ(j.at("gate").at("min_saving_ms"), 0.125);
    EXPECT_EQ(j.at("gate").at("reference_step_ms"), 12.5);
}

TEST(Config, GivenDottedSets_WhenApplied_ThenTheNamedKeysChange) {
    Config c;
    applySet(c, "swiglu.limit=7");
    applySet(c, "hidden=2880");
    applySet(c, "weights.prefix=model.");
    applySet(c, "gate={min_saving_ms: 0.25}");
    applySet(c, "seed=1");
    applySet(c, "gate.reference_step_ms=20");
    EXPECT_EQ(c.gateReferenceStepMs, 20.0);
    EXPECT_EQ(c.gateMinSavingMs, 0.25);  // a dotted set leaves the other keys of its map alone
    EXPECT_EQ(c.shape.swigluLimit, 7.0f);
    EXPECT_EQ(c.shape.hidden, 2880);
    EXPECT_EQ(c.weightsPrefix, "model.");
    EXPECT_EQ(c.gateMinSavingMs, 0.25);
    EXPECT_EQ(c.seed, 1u);
}

// ---- bad input: one test (or one row) per kind ----

TEST(ConfigBad, GivenAnUnknownTopLevelKey_WhenParsed_ThenRejectedWithPositionAndKnownKeys) {
    EXPECT_EQ(parseError("hidden: 4096\nhiden: 4096\n")
                  .rfind("config.yaml:2:1: hiden: unknown key (known: contract, hidden,", 0),
              0u)
        << parseError("hidden: 4096\nhiden: 4096\n");
}

TEST(ConfigBad, GivenEachKindOfBadValueOrDocument_WhenParsed_ThenRejectedNamingTheKeyAndValue) {
    struct Row {
        const char* what;
        const char* yaml;
        const char* fragment;  // the InputError must contain it
    };
    const Row rows[] = {
        {"an unknown nested key", "swiglu:\n  limt: 7\n",
         "config.yaml:2:3: swiglu.limt: unknown key (known: limit, alpha, up_bias)"},
        {"a map where a scalar belongs", "hidden: {a: 1}\n", "hidden: got a map, expected an integer"},
        {"a scalar where a map belongs", "swiglu: 7\n",
         "swiglu: got the scalar \"7\", expected a map of keys (known: limit, alpha, up_bias)"},
        {"a top-level sequence", "- 1\n- 2\n",
         "config.yaml:1:1: got a sequence, expected a map of keys (known: contract,"},
        {"a word where an integer belongs", "rows: two\n", "rows: \"two\": not an integer"},
        {"a word where an integer belongs", "rows: 2.0\n", "rows: \"2.0\": not an integer"},
        {"a quoted number", "rows: \"2\"\n", "rows: \"2\": not an integer"},
        {"an integer out of range", "experts: 99999999999\n",
         "experts: 99999999999: out of range [-2147483648, 2147483647]"},
        {"an integer out of range", "seed: -1\n", "seed: -1: out of range [0, 18446744073709551615]"},
        {"no value", "top_k:\n", "top_k: got no value, expected an integer"},
        {"a bad layout name", "gate_up_layout: fused\n", "gate_up_layout: \"fused\": must be split or interleaved"},
        {"contract 2", "contract: 2\n", "config.yaml:1:11: contract: 2: this build implements contract 1 only"},
        {"hidden 100", "hidden: 100\n", "hidden: 100: must be a positive multiple of 32"},
        {"negative layers", "layers: -3\n", "layers: -3: must be at least 1"},
        {"experts not a multiple of cards", "experts: 190\n",
         "config.yaml: experts = 190: must be a positive multiple of cards (4)"},
        {"card not below cards", "cards: 2\nexperts: 64\ncard: 2\n", "card = 2: must be in [0, cards) = [0, 2)"},
        {"a non-finite float", "swiglu:\n  alpha: .inf\n", "swiglu.alpha: .inf: must be finite"},
        {"a non-finite float", "gate:\n  min_saving_ms: .nan\n", "gate.min_saving_ms: .nan: must be finite"},
        {"a non-finite float", "swiglu:\n  up_bias: 1e999\n", "swiglu.up_bias: 1e999: out of range (must be finite)"},
        {"a non-finite float", "swiglu:\n  up_bias: 1e300\n", "swiglu.up_bias: 1e300: out of range for f32"},
        {"a limit not exact in BF16", "swiglu:\n  limit: 7.01\n",
         "swiglu.limit: 7.01: must be a non-negative value exactly representable in BF16"},
        {"a negative gate bar", "gate:\n  min_saving_ms: -0.5\n",
         "gate.min_saving_ms: -0.5: must be a non-negative number"},
        {"a zero reference step", "gate:\n  reference_step_ms: 0\n",
         "gate.reference_step_ms: 0: must be a positive number of milliseconds per token"},
        {"a negative reference step", "gate:\n  reference_step_ms: -15.79\n",
         "gate.reference_step_ms: -15.79: must be a positive number of milliseconds per token"},
        {"a non-finite reference step", "gate:\n  reference_step_ms: .inf\n",
         "gate.reference_step_ms: .inf: must be finite"},
        {"a reference step that is not a number", "gate:\n  reference_step_ms: fast\n",
         "gate.reference_step_ms: \"fast\": not a number"},
        {"a duplicate key", "rows: 2\nrows: 1\n", "config.yaml:2:1: rows: duplicate key"},
        {"one key in two spellings", "swiglu:\n  limit: 8\nswiglu.limit: 7\n",
         "config.yaml:3:1: swiglu.limit: given twice (as a dotted key and under its group)"},
        {"one key in two spellings, the other order", "swiglu.limit: 7\nswiglu: {limit: 8}\n",
         "swiglu.limit: given twice"},
        {"an alpha that underflows f32", "swiglu:\n  alpha: 1e-46\n", "swiglu.alpha: 1e-46: underflows f32 to 0"},
        {"malformed YAML", "hidden: 4096\nswiglu: [1, 2\n", "config.yaml:3:1: malformed YAML: "},
        {"malformed YAML", "hidden: 4096\n  rows: 2\n", "config.yaml:2:7: malformed YAML: "},
        {"two YAML documents", "hidden: 4096\n---\nhidden: 2048\n",
         "config.yaml: holds 2 YAML documents, expected one"},
    };
    for (const Row& r : rows) {
        SCOPED_TRACE(r.what);
        EXPECT_CONTAINS(parseError(r.yaml), r.fragment);
    }
}

TEST(ConfigBad, GivenAMissingFile_WhenLoaded_ThenRejectedNamingThePath) {
    try {
        loadConfig("/nonexistent/zp/config.yaml");
        FAIL() << "no error";
    } catch (const InputError& e) {
        EXPECT_CONTAINS(std::string(e.what()), "/nonexistent/zp/config.yaml: cannot read config");
    }
}

TEST(ConfigBad, GivenSetOfAnUnknownKey_WhenApplied_ThenRejectedListingTheKnownKeys) {
    EXPECT_EQ(setError("swiglu.limt=7"), "--set swiglu.limt: unknown key (known: limit, alpha, up_bias)");
    EXPECT_EQ(setError("foo.bar=1").rfind("--set foo.bar: unknown key (known: contract, hidden,", 0), 0u)
        << setError("foo.bar=1");
    EXPECT_EQ(setError("hidden.x=1"), "--set hidden.x: unknown key (hidden takes a value, it has no keys under it)");
}

TEST(ConfigBad, GivenSetValueThatIsNotOneLineOfText_WhenApplied_ThenRejectedBeforeYamlRereadsIt) {
    // YAML would fold the line break into a space, and read 0xFF 0xFE as a UTF-16 byte-order mark
    EXPECT_CONTAINS(setError("weights.prefix=a\nb"), "--set weights.prefix: \"a\\nb\": a control character");
    EXPECT_CONTAINS(setError("weights.prefix=a\tb"), "a control character");
    EXPECT_CONTAINS(setError("weights.prefix=\xff\xfe"), "the value starts with a byte-order mark");
    EXPECT_CONTAINS(setError("weights.prefix=\xef\xbb\xbfm."), "the value starts with a byte-order mark");
    EXPECT_EQ(setError("weights.prefix=model."), "");
    EXPECT_CONTAINS(setError("swiglu.alpha=1e-46"), "swiglu.alpha: 1e-46: underflows f32 to 0");
    EXPECT_EQ(setError("swiglu.alpha=1e-45"), "");  // the smallest f32 subnormal: kept
}

TEST(ConfigBad, GivenSetWithoutEquals_WhenApplied_ThenRejectedShowingTheForm) {
    EXPECT_EQ(setError("swiglu.limit"), "--set \"swiglu.limit\": expected key=value, e.g. --set swiglu.limit=7");
    EXPECT_EQ(setError("=7"), "--set \"=7\": expected key=value, e.g. --set swiglu.limit=7");
}

TEST(ConfigBad, GivenSetOfABadValue_WhenApplied_ThenRejectedLikeTheFile) {
    EXPECT_EQ(setError("rows=two"), "--set: rows: \"two\": not an integer");
    EXPECT_EQ(setError("hidden=100"), "--set: hidden: 100: must be a positive multiple of 32");
    EXPECT_CONTAINS(setError("hidden=[1,"), "--set hidden: \"[1,\": malformed YAML value");
}

TEST(ConfigBad, GivenACrossKeyViolationAfterSets_WhenValidated_ThenRejected) {
    Config c;
    applySet(c, "cards=5");
    try {
        validate(c);
        FAIL() << "no error";
    } catch (const InputError& e) {
        EXPECT_STREQ(e.what(), "experts = 192: must be a positive multiple of cards (5)");
    }
}

}  // namespace
}  // namespace zp::probe
