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

// One key as a segment of a JSON pointer (RFC 6901: '~' as ~0, '/' as ~1), fit for a message:
// control characters as \xNN, a key past 64 bytes cut at a character boundary.
std::string segment(const std::string& key) {
    std::string s;
    for (std::size_t i = 0; i < key.size(); ++i) {
        if (s.size() >= 64 && (static_cast<unsigned char>(key[i]) & 0xC0) != 0x80) return s + "...";
        const auto c = static_cast<unsigned char>(key[i]);
        if (c == '~')
            s += "~0";
        else if (c == '/')
            s += "~1";
        else if (c < 0x20 || c == 0x7F)
            s += fmt::format("\\x{:02x}", c);
        else
            s += char(c);
    }
    return s;
}

// A value as a message shows it: a scalar as its JSON text (a string cut after 60 bytes, at a
// character boundary), an array or an object by its size: never the dump of a whole subtree.
std::string shown(const json& v) {
    if (v.is_array()) return fmt::format("an array of {}", v.size());
    if (v.is_object()) return fmt::format("an object of {} key{}", v.size(), v.size() == 1 ? "" : "s");
    if (!v.is_string()) return v.dump();
    const std::string& t = v.get_ref<const std::string&>();
    std::size_t cut = t.size() <= 60 ? t.size() : 60;
    while (cut < t.size() && (static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80) --cut;
    // replace: a document built in memory (a writer's own check) may hold bytes that are not UTF-8
    return json(t.substr(0, cut)).dump(-1, ' ', false, json::error_handler_t::replace) + (cut < t.size() ? "..." : "");
}

// The pointer in a message: the document itself has the empty pointer.
std::string where(const std::string& at) { return at.empty() ? "(the top level)" : at; }

struct Checker {
    const json& root;
    std::vector<std::string>& problems;

    void check(const json& schema, const json& v, const std::string& at) {
        static const std::set<std::string> known = {"type",    "properties", "required",    "additionalProperties",
                                                    "items",   "enum",       "const",       "minimum",
                                                    "maximum", "$ref",       "description", "title",
                                                    "$schema", "$id",        "$comment",    "$defs"};
        if (schema.is_boolean()) {
            if (!schema.get<bool>()) problems.push_back(where(at) + ": not allowed here");
            return;
        }
        for (const auto& [k, _] : schema.items())
            if (!known.count(k))
                problems.push_back(
                    fmt::format("{}: the schema uses \"{}\", which the checker does not know", where(at), k));
        if (schema.contains("$ref")) {
            const std::string ref = schema["$ref"].get<std::string>();
            const std::string prefix = "#/$defs/";
            if (ref.rfind(prefix, 0) != 0 || !root.contains("$defs") ||
                !root["$defs"].contains(ref.substr(prefix.size()))) {
                problems.push_back(where(at) + ": unresolved $ref " + ref);
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
                problems.push_back(fmt::format("{}: {} is not of type {}", where(at), shown(v), t.dump()));
                return;
            }
        }
        if (schema.contains("enum")) {
            bool found = false;
            for (const auto& e : schema["enum"]) found = found || e == v;
            if (!found)
                problems.push_back(fmt::format("{}: {} is not one of {}", where(at), shown(v), schema["enum"].dump()));
        }
        if (schema.contains("const") && schema["const"] != v)
            problems.push_back(fmt::format("{}: {} is not {}", where(at), shown(v), schema["const"].dump()));
        if (v.is_number()) {
            if (schema.contains("minimum") && v.get<double>() < schema["minimum"].get<double>())
                problems.push_back(fmt::format("{}: {} < minimum {}", where(at), v.dump(), schema["minimum"].dump()));
            if (schema.contains("maximum") && v.get<double>() > schema["maximum"].get<double>())
                problems.push_back(fmt::format("{}: {} > maximum {}", where(at), v.dump(), schema["maximum"].dump()));
        }
        if (v.is_object()) {
            if (schema.contains("required"))
                for (const auto& r : schema["required"])
                    if (!v.contains(r.get<std::string>()))
                        problems.push_back(at + "/" + segment(r.get<std::string>()) + ": missing (a required key)");
            static const json none = json::object();
            const json& props = schema.contains("properties") ? schema["properties"] : none;
            for (const auto& [k, x] : v.items()) {
                const std::string here = at + "/" + segment(k);
                if (props.contains(k))
                    check(props[k], x, here);
                else if (schema.contains("additionalProperties") && schema["additionalProperties"] == false)
                    problems.push_back(here + ": unknown key" + knownKeys(props));
                else if (schema.contains("additionalProperties"))
                    check(schema["additionalProperties"], x, here);
            }
        }
        if (v.is_array() && schema.contains("items"))
            for (std::size_t i = 0; i < v.size(); ++i) check(schema["items"], v[i], fmt::format("{}/{}", at, i));
    }

    // " (known here: a, b, c)", or "" where the schema names no key.
    static std::string knownKeys(const json& props) {
        std::string s;
        for (const auto& [k, _] : props.items()) s += (s.empty() ? " (known here: " : ", ") + k;
        return s.empty() ? s : s + ")";
    }
};

}  // namespace

std::vector<std::string> schemaProblems(const nlohmann::json& schema, const nlohmann::json& doc) {
    std::vector<std::string> problems;
    Checker{schema, problems}.check(schema, doc, "");
    return problems;
}

}  // namespace zp::probe
