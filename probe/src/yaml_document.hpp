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
// Throws InputError (failAt) when `node` is a scalar tagged as a string (`!!str 64`, a local
// tag): "\"64\" is tagged !!str, a string: expected <expected>". A quoted one passes: its
// reader says "not an integer" / "not a number".
void refuseTaggedScalar(const std::string& name, const YAML::Node& node, const std::string& path,
                        const std::string& expected, bool marks = true);
// The integer a scalar holds ("+N" reads as N), for configs and sweep files alike. Throws
// InputError (failAt) for a non-scalar ("got a map, expected an integer"), a quoted or tagged
// scalar, text that is no integer, and a value outside Int's range. Int: int or std::uint64_t.
template <class Int>
Int readYamlInt(const std::string& name, const YAML::Node& node, const std::string& path, bool marks = true);
// readYamlInt<int>, refusing a value below `least`: "<value>: must be at least <least>".
int readYamlIntAtLeast(const std::string& name, const YAML::Node& node, const std::string& path, int least,
                       bool marks = true);
// A quoted scalar ("2") is a string in YAML, never a number.
// Quoted ("2"), or tagged other than the core schema's !!int / !!float (`hidden: !!str 64`): a
// string in YAML, never a number.
inline bool isQuotedScalar(const YAML::Node& node) {
    const std::string& t = node.Tag();
    return !(t == "?" || t.empty() || t == "tag:yaml.org,2002:int" || t == "tag:yaml.org,2002:float");
}

}  // namespace zp::probe
