// One YAML document from text, for configs and sweep files (scheduler-internal).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

namespace zp::probe {

// The single document of `yamlText`; a null node when the text holds none. Throws InputError
// "<name>:<line>:<col>: malformed YAML: …" or "<name>: holds N YAML documents, expected one".
YAML::Node loadSingleDocument(const std::string& yamlText, const std::string& nameForErrors);

// `s` as a JSON string for an error message; bytes that are not UTF-8 (YAML scalars may hold
// them) become U+FFFD instead of making the quoting itself throw.
std::string quotedForMessage(std::string_view s);

// The errors of configs and sweep files, one way: "<name>:<line>:<column>" where the node has
// a position (and `marks`: --set text has none worth naming), else `name`.
std::string nodeLocation(const std::string& name, const YAML::Node& node, bool marks = true);
// Throws InputError "<nodeLocation>: <path>: <what>".
[[noreturn]] void failAt(const std::string& name, const YAML::Node& node, const std::string& path,
                         const std::string& what, bool marks = true);
// "a map", "a sequence", "no value", "the scalar \"x\"": what a node holds, for "got …, expected …".
std::string nodeKindName(const YAML::Node& node);
// A quoted scalar ("2") is a string in YAML, never a number.
// Quoted ("2"), or tagged other than the core schema's !!int / !!float (`hidden: !!str 64`): a
// string in YAML, never a number.
inline bool isQuotedScalar(const YAML::Node& node) {
    const std::string& t = node.Tag();
    return !(t == "?" || t.empty() || t == "tag:yaml.org,2002:int" || t == "tag:yaml.org,2002:float");
}

}  // namespace zp::probe
