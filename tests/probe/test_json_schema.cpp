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
    EXPECT_EQ(one(R"({"v": "pass"})"), ": missing \"a\"");
    EXPECT_EQ(one(R"({"a": -1, "v": "pass"})"), "/a: -1 < minimum 0");
    EXPECT_EQ(one(R"({"a": 1.5, "v": "pass"})"), "/a: 1.5 is not of type \"integer\"");
    EXPECT_EQ(one(R"({"a": 1, "v": "maybe"})"), "/v: \"maybe\" is not one of [\"pass\",\"on_the_bar\",\"fail\"]");
    EXPECT_EQ(one(R"({"a": 1, "v": "fail", "extra": 0})"), "/extra: not allowed here");
    EXPECT_EQ(one(R"({"a": 1, "v": "fail", "xs": [1, "x"]})"), "/xs/1: \"x\" is not of type [\"number\",\"null\"]");
    EXPECT_EQ(one(R"({"a": 1, "v": "fail", "m": {"k": 4}})"), "/m/k: 4 is not 3");
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
