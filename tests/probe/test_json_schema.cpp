// json_schema: the checker the card's schema is enforced with must itself be able to fail.
#include <gtest/gtest.h>

#include <fstream>

#include "zp/probe/json_schema.hpp"

using nlohmann::json;
using zp::probe::schemaProblems;

namespace {

const json kSchema = json::parse(R"({
  "type": "object", "required": ["a", "v"], "additionalProperties": false,
  "properties": {
    "a": {"type": "integer", "minimum": 0},
    "v": {"$ref": "#/$defs/verdict"},
    "xs": {"type": "array", "items": {"type": ["number", "null"]}},
    "m": {"type": "object", "additionalProperties": {"const": 3}}
  },
  "$defs": {"verdict": {"enum": ["pass", "on_the_bar", "fail"]}}
})");

}  // namespace

TEST(JsonSchema, GivenAConformingDocument_ThenNoProblem) {
    EXPECT_TRUE(
        schemaProblems(kSchema, json::parse(R"({"a": 1, "v": "pass", "xs": [1.5, null], "m": {"k": 3}})")).empty());
}

TEST(JsonSchema, GivenEachKindOfBreak_ThenItIsNamedWithItsPointer) {
    auto one = [](const char* doc) {
        const auto p = schemaProblems(kSchema, json::parse(doc));
        return p.size() == 1 ? p[0] : "got " + std::to_string(p.size()) + " problems";
    };
    EXPECT_EQ(one(R"({"v": "pass"})"), "/a: missing (a required key)");
    EXPECT_EQ(one(R"({"a": -1, "v": "pass"})"), "/a: -1 < minimum 0");
    EXPECT_EQ(one(R"({"a": 1.5, "v": "pass"})"), "/a: 1.5 is not of type \"integer\"");
    EXPECT_EQ(one(R"({"a": 1, "v": "maybe"})"), "/v: \"maybe\" is not one of [\"pass\",\"on_the_bar\",\"fail\"]");
    EXPECT_EQ(one(R"({"a": 1, "v": "fail", "extra": 0})"), "/extra: unknown key (known here: a, m, v, xs)");
    EXPECT_EQ(one(R"({"a": 1, "v": "fail", "xs": [1, "x"]})"), "/xs/1: \"x\" is not of type [\"number\",\"null\"]");
    EXPECT_EQ(one(R"({"a": 1, "v": "fail", "m": {"k": 4}})"), "/m/k: 4 is not 3");
    EXPECT_EQ(one(R"([1, 2])"), "(the top level): an array of 2 is not of type \"object\"");
    EXPECT_EQ(one(R"({"a": {"b": [1]}, "v": "fail"})"), "/a: an object of 1 key is not of type \"integer\"");
}

// A pointer names its key exactly (RFC 6901 escapes) and a message stays short whatever the
// document holds: a long string is cut at a character, a key's control characters are escaped.
TEST(JsonSchema, GivenOddKeysAndLongValues_ThenThePointerIsExactAndTheMessageShort) {
    auto one = [](const json& doc) {
        const auto p = schemaProblems(kSchema, doc);
        return p.size() == 1 ? p[0] : "got " + std::to_string(p.size()) + " problems";
    };
    EXPECT_EQ(one({{"a", 1}, {"v", "fail"}, {"m", {{"a/b~c", 4}}}}), "/m/a~1b~0c: 4 is not 3");
    EXPECT_EQ(one({{"a", 1}, {"v", "fail"}, {"x\n\x1b[2J", 0}}),
              "/x\\x0a\\x1b[2J: unknown key (known here: a, m, v, xs)");
    const std::string longText = std::string(59, 'x') + "\xc3\xa9" + std::string(1000, 'y');  // é across byte 60
    EXPECT_EQ(one({{"a", 1}, {"v", longText}}),
              "/v: \"" + std::string(59, 'x') + "\"... is not one of [\"pass\",\"on_the_bar\",\"fail\"]");
    const std::string longKey(1000, 'k');
    EXPECT_EQ(one({{"a", 1}, {"v", "fail"}, {longKey, 0}}),
              "/" + std::string(64, 'k') + "...: unknown key (known here: a, m, v, xs)");
}

// Every problem is listed, in the order the document is walked: a key's whole subtree before
// the next key, the missing keys of an object before its keys.
TEST(JsonSchema, GivenSeveralProblems_ThenEachInTheOrderTheDocumentIsWalked) {
    EXPECT_EQ(schemaProblems(kSchema, json::parse(R"({"xs": ["x"], "m": {"k": 4}, "b": 1})")),
              (std::vector<std::string>{"/a: missing (a required key)", "/v: missing (a required key)",
                                        "/b: unknown key (known here: a, m, v, xs)", "/m/k: 4 is not 3",
                                        "/xs/0: \"x\" is not of type [\"number\",\"null\"]"}));
}

TEST(JsonSchema, GivenAKeywordTheCheckerDoesNotKnow_ThenTheSchemaItselfIsAProblem) {
    const json s = json::parse(R"({"type": "string", "pattern": "^a"})");
    ASSERT_EQ(schemaProblems(s, "abc").size(), 1u);
    EXPECT_NE(schemaProblems(s, "abc")[0].find("\"pattern\""), std::string::npos);
}

TEST(JsonSchema, GivenTheCardSchema_ThenItUsesOnlyWhatTheCheckerKnows) {
    std::ifstream f(ZP_CARD_SCHEMA);
    ASSERT_TRUE(f) << ZP_CARD_SCHEMA;
    const json schema = json::parse(f);
    // Any document exercises the keyword check of the root; a minimal card walks the $defs too.
    for (const auto& p : schemaProblems(schema, json::object()))
        EXPECT_EQ(p.find("does not know"), std::string::npos) << p;
    for (const auto& [name, def] : schema["$defs"].items())
        for (const auto& p : schemaProblems(def, json(nullptr)))
            EXPECT_EQ(p.find("does not know"), std::string::npos) << name << ": " << p;
}
