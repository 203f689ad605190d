#include "yaml_document.hpp"

#include <yaml-cpp/eventhandler.h>

#include <nlohmann/json.hpp>

#include <sstream>
#include <vector>

#include "zp/probe/input_error.hpp"

namespace zp::probe {
namespace {

// yaml-cpp 0.7 (Debian 12) YAML::LoadAll loops forever, allocating a null document per turn,
// on a stray ',' (jbeder/yaml-cpp#1040, fixed upstream after 0.8.0): the parser starts a
// document at the same token again and again. Documents are counted with a parser that
// requires each to start past the previous one; then the first is loaded alone.
class DocumentStarts final : public YAML::EventHandler {
public:
    std::vector<YAML::Mark> starts;
    void OnDocumentStart(const YAML::Mark& m) override { starts.push_back(m); }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
};

std::string at(const std::string& name, const YAML::Mark& m) {
    return name + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

}  // namespace

std::string quotedForMessage(std::string_view s) {
    return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

YAML::Node loadSingleDocument(const std::string& yamlText, const std::string& nameForErrors) {
    std::size_t documents = 0;
    try {
        std::istringstream in(yamlText);
        YAML::Parser parser(in);
        DocumentStarts d;
        while (parser.HandleNextDocument(d)) {
            const std::size_t n = d.starts.size();
            if (n >= 2 && d.starts[n - 1].pos <= d.starts[n - 2].pos)
                throw InputError(at(nameForErrors, d.starts[n - 1]) +
                                 ": malformed YAML: unexpected character (a stray ',' or flow indicator?)");
        }
        documents = d.starts.size();
        if (documents == 1) return YAML::Load(yamlText);
    } catch (const YAML::ParserException& e) {
        throw InputError(at(nameForErrors, e.mark) + ": malformed YAML: " + e.msg);
    } catch (const YAML::Exception& e) {
        throw InputError(nameForErrors + ": malformed YAML: " + e.what());
    }
    if (documents > 1)
        throw InputError(nameForErrors + ": holds " + std::to_string(documents) + " YAML documents, expected one");
    return YAML::Node();
}

std::string nodeLocation(const std::string& name, const YAML::Node& node, bool marks) {
    if (!marks || !node.IsDefined()) return name;
    const YAML::Mark m = node.Mark();
    if (m.is_null()) return name;
    return name + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

void failAt(const std::string& name, const YAML::Node& node, const std::string& path, const std::string& what,
            bool marks) {
    throw InputError(nodeLocation(name, node, marks) + ": " + path + ": " + what);
}

std::string nodeKindName(const YAML::Node& node) {
    switch (node.Type()) {
        case YAML::NodeType::Map: return "a map";
        case YAML::NodeType::Sequence: return "a sequence";
        case YAML::NodeType::Null: return "no value";
        case YAML::NodeType::Scalar: return "the scalar " + quotedForMessage(node.Scalar());
        default: return "nothing";
    }
}

}  // namespace zp::probe
