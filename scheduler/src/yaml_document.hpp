// One YAML document from text, for configs and sweep files (scheduler-internal).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace zp::sched {

// The single document of `yamlText`; a null node when the text holds none. Throws InputError
// "<name>:<line>:<col>: malformed YAML: …" or "<name>: holds N YAML documents, expected one".
YAML::Node loadSingleDocument(const std::string& yamlText, const std::string& nameForErrors);

}  // namespace zp::sched
