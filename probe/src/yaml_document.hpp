// One YAML document from text, for configs and sweep files (scheduler-internal).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

namespace zp::sched {

// The single document of `yamlText`; a null node when the text holds none. Throws InputError
// "<name>:<line>:<col>: malformed YAML: …" or "<name>: holds N YAML documents, expected one".
YAML::Node loadSingleDocument(const std::string& yamlText, const std::string& nameForErrors);

// `s` as a JSON string for an error message; bytes that are not UTF-8 (YAML scalars may hold
// them) become U+FFFD instead of making the quoting itself throw.
std::string quotedForMessage(std::string_view s);

}  // namespace zp::sched
