// result_schemas: every card and step.json ze-probe keeps as test data (real runs on PoCL and the
// H200, schema 2 and 3) is accepted; every one-key change of a real card that its schema does
// not allow (a key deleted, a key added, a value of another type) is refused naming the file and
// the JSON pointer of that very key; whatever is accepted, the report draws without an error.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report_cards.hpp"
#include "result_schemas.hpp"
#include "zp/probe/input_error.hpp"
#include "zp/probe/json_schema.hpp"

using nlohmann::json;
using namespace zp;

namespace {

const std::string kData = ZP_TOOLS_TEST_DATA;

json readJson(const std::string& path) {
    std::ifstream f(path);
    EXPECT_TRUE(f) << path;
    return json::parse(f);
}

// The message checkCardRead refuses `card` with; "" when it accepts it.
std::string refusal(const json& card, const std::string& file = "c.json") {
    try {
        app::checkCardRead(card, file);
        return "";
    } catch (const probe::InputError& e) {
        return e.what();
    }
}

std::string stepRefusal(const json& step) {
    try {
        app::checkStepRead(step, "step.json");
        return "";
    } catch (const probe::InputError& e) {
        return e.what();
    }
}

// An accepted card must draw: the report reads what the schema promises.
void expectDrawn(const json& card, const std::string& what) {
    try {
        const app::LoadedCard c{"card", card};
        EXPECT_FALSE(app::cardsReportHtml({c}).empty()) << what;
        EXPECT_FALSE(app::cardsReportSvg({c}).empty()) << what;
    } catch (const std::exception& e) {
        ADD_FAILURE() << what << ": accepted but not drawn: " << e.what();
    }
}

// Every key a schema names under "properties", anywhere in it.
void propertyNames(const json& schema, std::set<std::string>& names) {
    if (!schema.is_structured()) return;
    if (schema.is_object() && schema.contains("properties"))
        for (const auto& [k, _] : schema["properties"].items()) names.insert(k);
    for (const auto& v : schema) propertyNames(v, names);
}

// Every object member and array element of `card`, depth first, one of each kind: the first
// element of an array, and of the keys of a map (a pattern, a variant, a candidate: a key the
// schema does not name) the first; the others are checked by the same part of the schema.
void walk(const json& card, const std::function<void(const json::json_pointer&)>& visit) {
    std::set<std::string> named;
    propertyNames(app::cardSchema(card["schema"].get<int>()), named);
    std::set<std::string> seen;  // each pointer with the map keys as "*"
    std::function<void(const json&, const json::json_pointer&, const std::string&)> go =
        [&](const json& j, const json::json_pointer& at, const std::string& shape) {
            if (j.is_object()) {
                for (const auto& [k, v] : j.items()) {
                    const std::string here = shape + "/" + (named.count(k) ? k : "*");
                    if (!seen.insert(here).second) continue;
                    visit(at / k);
                    go(v, at / k, here);
                }
            } else if (j.is_array() && !j.empty()) {
                visit(at / 0);
                go(j[0], at / 0, shape + "/0");
            }
        };
    go(card, json::json_pointer(), "");
}

// `card` with one entry of each map (a key its schema does not name: a pattern, a variant) and
// at most two elements of each array: what walk() visits, at a tenth of the size, so that each
// of the mutations below copies and checks a small card.
json oneOfEach(const json& j, const std::set<std::string>& named) {
    if (j.is_array()) {
        json out = json::array();
        for (std::size_t i = 0; i < j.size() && i < 2; ++i) out.push_back(oneOfEach(j[i], named));
        return out;
    }
    if (!j.is_object()) return j;
    json out = json::object();
    bool mapEntryKept = false;
    for (const auto& [k, v] : j.items()) {
        if (!named.count(k)) {
            if (mapEntryKept) continue;
            mapEntryKept = true;
        }
        out[k] = oneOfEach(v, named);
    }
    return out;
}

// A kept card cut by oneOfEach; it still follows its schema.
json realCard(const std::string& file) {
    const json card = readJson(kData + "/" + file);
    std::set<std::string> named;
    propertyNames(app::cardSchema(card["schema"].get<int>()), named);
    json cut = oneOfEach(card, named);
    EXPECT_EQ(refusal(cut), "") << file;
    return cut;
}

const char* const kRealCards[] = {"card0_h200_stream_gate.json", "step4/card0.json", "step4/card3.json",
                                  "card0_h200_no_timing.json"};

}  // namespace

TEST(ResultSchemas, GivenEveryKeptCardAndStep_ThenAccepted) {
    for (const char* f : {"card0_h200_stream_gate.json", "card0_h200_no_timing.json", "card0_pocl_fixture.json",
                          "card1_future_verdicts.json", "step4/card0.json", "step4/card1.json", "step4/card2.json",
                          "step4/card3.json"}) {
        const json card = readJson(kData + "/" + f);
        EXPECT_EQ(refusal(card), "") << f;
        expectDrawn(card, f);
    }
    EXPECT_EQ(stepRefusal(readJson(kData + "/step4/step.json")), "");
}

TEST(ResultSchemas, GivenEachSchema_ThenItUsesOnlyWhatTheCheckerKnows) {
    for (const json* schema : {&app::cardSchema(2), &app::cardSchema(3), &app::stepSchema()}) {
        for (const auto& p : probe::schemaProblems(*schema, json::object()))
            EXPECT_EQ(p.find("does not know"), std::string::npos) << p;
        for (const auto& [name, def] : (*schema)["$defs"].items())
            for (const auto& p : probe::schemaProblems(def, json(nullptr)))
                EXPECT_EQ(p.find("does not know"), std::string::npos) << name << ": " << p;
    }
    EXPECT_EQ(app::cardSchema(2)["properties"]["schema"]["const"], 2);
    EXPECT_EQ(app::cardSchema(3)["properties"]["schema"]["const"], 3);
    EXPECT_THROW(app::cardSchema(4), std::logic_error);
}

// Each key of a real card deleted in turn: a required one is refused naming its pointer; an
// optional one (or an entry of a map keyed by pattern or variant) is accepted and drawn.
TEST(ResultSchemas, GivenARealCardWithOneKeyDeleted_ThenARequiredOneIsNamedAndAnOptionalOneDrawn) {
    for (const char* f : kRealCards) {
        const json card = realCard(f);
        const std::string version = card["schema"] == 3 ? "3 as ze-probe writes it (docs/card.schema.json)"
                                                        : "2 as ze-probe writes it (docs/card-2.schema.json)";
        int refused = 0, accepted = 0;
        walk(card, [&](const json::json_pointer& at) {
            if (at.back() == "schema" && at.parent_pointer().empty()) return;  // the version: its own message
            if (!card.at(at.parent_pointer()).is_object()) return;
            json c = card;
            c.at(at.parent_pointer()).erase(at.back());
            const std::string why = refusal(c);
            if (why.empty()) {
                ++accepted;
                expectDrawn(c, std::string(f) + " without " + at.to_string());
                return;
            }
            ++refused;
            EXPECT_EQ(why, "c.json: not a card of schema " + version + ": " + at.to_string() +
                               ": missing (a required key)" +
                               (why.find(" (and ") == std::string::npos ? "" : why.substr(why.find(" (and "))))
                << f;
        });
        EXPECT_GT(refused, 20) << f;
        EXPECT_GT(accepted, 0) << f;
    }
}

// An unknown key added to every object of a real card: refused, naming the key's own pointer.
TEST(ResultSchemas, GivenARealCardWithAnUnknownKeyAnywhere_ThenRefusedNamingIt) {
    for (const char* f : kRealCards) {
        const json card = realCard(f);
        int refused = 0;
        auto addAt = [&](const json::json_pointer& at) {
            if (!card.at(at).is_object()) return;
            json c = card;
            c.at(at)["zz_unknown"] = 1;
            const std::string why = refusal(c);
            const std::string pointer = (at / "zz_unknown").to_string();
            EXPECT_NE(why.find("): " + pointer + ": "), std::string::npos) << f << " " << pointer << ": " << why;
            ++refused;
        };
        addAt(json::json_pointer());
        walk(card, addAt);
        EXPECT_GE(refused, 10) << f;
    }
}

// Every value of a real card (the first element of each array) replaced by one of another type:
// refused, naming its pointer.
TEST(ResultSchemas, GivenARealCardWithAValueOfAnotherType_ThenRefusedNamingIt) {
    for (const char* f : kRealCards) {
        const json card = realCard(f);
        int refused = 0;
        walk(card, [&](const json::json_pointer& at) {
            if (at.to_string() == "/schema") return;
            const json& v = card.at(at);
            json c = card;
            c.at(at) = v.is_string() ? json(7) : v.is_structured() ? json(true) : json("x");
            const std::string why = refusal(c);
            EXPECT_NE(why.find("): " + at.to_string() + ": "), std::string::npos)
                << f << " " << at.to_string() << ": " << why;
            ++refused;
        });
        EXPECT_GE(refused, 50) << f;
    }
}

TEST(ResultSchemas, GivenASchemaThisZeProbeDoesNotRead_ThenRefusedNamingTheVersionAsWritten) {
    json card = readJson(kData + "/card0_h200_stream_gate.json");
    for (const json& schema : {json(1), json(4), json(4294967299), json(-4294967293), json(18446744073709551615u)}) {
        card["schema"] = schema;
        EXPECT_EQ(refusal(card), "c.json: card schema " + schema.dump() +
                                     ": this ze-probe reads card schemas 2 to 3; report it with the ze-probe that "
                                     "wrote it");
    }
    for (const json& schema : {json(3.0), json("3"), json(nullptr)}) {
        card["schema"] = schema;
        EXPECT_EQ(refusal(card), "c.json: not a ze-probe card (no integer \"schema\")");
    }
    EXPECT_EQ(refusal(json::array()), "c.json: not a ze-probe card (no integer \"schema\")");
    // A schema-3 key in a schema-2 card is not one of its keys.
    json two = readJson(kData + "/card0_h200_no_timing.json");
    two["device"]["timer_resolution_ns"] = 1.0;
    EXPECT_EQ(refusal(two),
              "c.json: not a card of schema 2 as ze-probe writes it (docs/card-2.schema.json): "
              "/device/timer_resolution_ns: unknown key (known here: compute_units, driver, "
              "driver_version, fp32_denorm, kernel_tuning, memory_bytes, modules, name, type)");
}

TEST(ResultSchemas, GivenACardWithSeveralProblems_ThenTheFirstIsNamedAndTheRestCounted) {
    json card = readJson(kData + "/card0_h200_stream_gate.json");
    card.erase("contract");
    card["config"]["hidden"] = "4096";
    card["zz"] = 0;
    EXPECT_EQ(refusal(card, "run/card0.json"),
              "run/card0.json: not a card of schema 3 as ze-probe writes it (docs/card.schema.json): /contract: "
              "missing (a required key) (and 2 more)");
}

TEST(ResultSchemas, GivenAStepJsonWithAKeyDeletedOrAdded_ThenRefusedNamingIt) {
    const json step = readJson(kData + "/step4/step.json");
    json c = step;
    c.erase("placement");
    EXPECT_EQ(stepRefusal(c),
              "step.json: not a step.json as ze-probe writes it (docs/step.schema.json): /placement: "
              "missing (a required key)");
    c = step;
    c["gate"]["zz"] = 1;
    EXPECT_NE(stepRefusal(c).find("(docs/step.schema.json): /gate/zz: unknown key"), std::string::npos)
        << stepRefusal(c);
    c = step;
    c["step_time"] = 1;
    EXPECT_NE(stepRefusal(c).find("(docs/step.schema.json): /step_time: 1 is not of type \"string\""),
              std::string::npos)
        << stepRefusal(c);
}
