#include "zp/probe/json_schema.hpp"

#include <set>

#include <fmt/format.h>

namespace zp::probe {
namespace {

using json = nlohmann::json;

bool hasType(const json& v, const std::string& t) {
    if (t == "null") return v.is_null();
    if (t == "boolean") return v.is_boolean();
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "number") return v.is_number();
    if (t == "integer") return v.is_number_integer() || v.is_number_unsigned();
    return false;
}

struct Checker {
    const json& root;
    std::vector<std::string>& problems;

    void check(const json& schema, const json& v, const std::string& at) {
        static const std::set<std::string> known = {"type",    "properties", "required",    "additionalProperties",
                                                    "items",   "enum",       "const",       "minimum",
                                                    "maximum", "$ref",       "description", "title",
                                                    "$schema", "$id",        "$comment",    "$defs"};
        if (schema.is_boolean()) {
            if (!schema.get<bool>()) problems.push_back(at + ": not allowed here");
            return;
        }
        for (const auto& [k, _] : schema.items())
            if (!known.count(k))
                problems.push_back(fmt::format("{}: the schema uses \"{}\", which the checker does not know", at, k));
        if (schema.contains("$ref")) {
            const std::string ref = schema["$ref"].get<std::string>();
            const std::string prefix = "#/$defs/";
            if (ref.rfind(prefix, 0) != 0 || !root.contains("$defs") ||
                !root["$defs"].contains(ref.substr(prefix.size()))) {
                problems.push_back(at + ": unresolved $ref " + ref);
                return;
            }
            check(root["$defs"][ref.substr(prefix.size())], v, at);
        }
        if (schema.contains("type")) {
            const json& t = schema["type"];
            bool ok = false;
            if (t.is_string()) ok = hasType(v, t.get<std::string>());
            for (const auto& x : t.is_array() ? t : json::array()) ok = ok || hasType(v, x.get<std::string>());
            if (!ok) {
                problems.push_back(fmt::format("{}: {} is not of type {}", at, v.dump().substr(0, 60), t.dump()));
                return;
            }
        }
        if (schema.contains("enum")) {
            bool found = false;
            for (const auto& e : schema["enum"]) found = found || e == v;
            if (!found) problems.push_back(fmt::format("{}: {} is not one of {}", at, v.dump(), schema["enum"].dump()));
        }
        if (schema.contains("const") && schema["const"] != v)
            problems.push_back(fmt::format("{}: {} is not {}", at, v.dump(), schema["const"].dump()));
        if (v.is_number()) {
            if (schema.contains("minimum") && v.get<double>() < schema["minimum"].get<double>())
                problems.push_back(fmt::format("{}: {} < minimum {}", at, v.dump(), schema["minimum"].dump()));
            if (schema.contains("maximum") && v.get<double>() > schema["maximum"].get<double>())
                problems.push_back(fmt::format("{}: {} > maximum {}", at, v.dump(), schema["maximum"].dump()));
        }
        if (v.is_object()) {
            if (schema.contains("required"))
                for (const auto& r : schema["required"])
                    if (!v.contains(r.get<std::string>()))
                        problems.push_back(fmt::format("{}: missing \"{}\"", at, r.get<std::string>()));
            const json props = schema.value("properties", json::object());
            for (const auto& [k, x] : v.items()) {
                const std::string here = at + "/" + k;
                if (props.contains(k))
                    check(props[k], x, here);
                else if (schema.contains("additionalProperties"))
                    check(schema["additionalProperties"], x, here);
            }
        }
        if (v.is_array() && schema.contains("items"))
            for (std::size_t i = 0; i < v.size(); ++i) check(schema["items"], v[i], fmt::format("{}/{}", at, i));
    }
};

}  // namespace

std::vector<std::string> schemaProblems(const nlohmann::json& schema, const nlohmann::json& doc) {
    std::vector<std::string> problems;
    Checker{schema, problems}.check(schema, doc, "");
    return problems;
}

}  // namespace zp::probe
