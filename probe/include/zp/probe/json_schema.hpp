// A checker for the JSON Schema subset the card's schema (docs/card.schema.json) uses:
// type (a name or a list), properties, required, additionalProperties (false or a schema),
// items, enum, const, minimum, maximum, $ref to "#/$defs/<name>", description/title/$schema/
// $id/$comment (ignored). A keyword outside that set is itself a problem, so the schema
// cannot say more than is checked.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace zp::probe {

// Every place `doc` breaks `schema`, as "<json pointer>: what"; empty when it conforms.
std::vector<std::string> schemaProblems(const nlohmann::json& schema, const nlohmann::json& doc);

}  // namespace zp::probe
