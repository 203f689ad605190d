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

// Every place `doc` breaks `schema`, as "<json pointer>: what", in the order the document is
// walked (an object's missing keys, then its keys in order, each subtree before the next key);
// empty when it conforms. The pointer is RFC 6901's ("/gate/candidates/0/verdict"; "(the top
// level)" for the document itself) and names the key itself where one is missing ("/gate/ci:
// missing (a required key)") or not in the schema ("/gate/cii: unknown key (known here: ...)").
// Values are shown as scalars or by their size, never as the dump of a subtree.
std::vector<std::string> schemaProblems(const nlohmann::json& schema, const nlohmann::json& doc);

}  // namespace zp::probe
