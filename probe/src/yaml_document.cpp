#include "yaml_document.hpp"

#include <yaml-cpp/eventhandler.h>

#include <nlohmann/json.hpp>

#include <cctype>
#include <charconv>
#include <cstdint>
#include <limits>
#include <sstream>
#include <type_traits>
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

// The tag as written, for messages: "!!str" rather than "tag:yaml.org,2002:str".
std::string tagText(const YAML::Node& n) {
    const std::string& t = n.Tag();
    if (t == "!") return "quoted";
    const std::string core = "tag:yaml.org,2002:";
    return "tagged " + (t.compare(0, core.size(), core) == 0 ? "!!" + t.substr(core.size()) : t);
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

void refuseTaggedScalar(const std::string& name, const YAML::Node& n, const std::string& path,
                        const std::string& expected, bool marks) {
    if (isQuotedScalar(n) && n.Tag() != "!")  // a quoted one: "not an integer" from the reader
        failAt(name, n, path, quotedForMessage(n.Scalar()) + " is " + tagText(n) + ", a string: expected " + expected,
               marks);
}

template <class Int>
Int readYamlInt(const std::string& name, const YAML::Node& n, const std::string& path, bool marks) {
    const auto fail = [&](const std::string& what) { failAt(name, n, path, what, marks); };
    if (!n.IsScalar()) fail("got " + nodeKindName(n) + ", expected an integer");
    const std::string& s = n.Scalar();
    refuseTaggedScalar(name, n, path, "an integer", marks);
    std::string_view t = s;
    if (!t.empty() && t.front() == '+') t.remove_prefix(1);
    Int v{};
    // from_chars reads no sign into an unsigned type: parse "-N" as signed to tell "out of range" from garbage.
    if (std::is_unsigned_v<Int> && !t.empty() && t.front() == '-' && !isQuotedScalar(n)) {
        long long negative = 0;
        const auto [e, err] = std::from_chars(t.data(), t.data() + t.size(), negative);
        if (e == t.data() + t.size() && err != std::errc::invalid_argument)
            fail(s + ": out of range [0, " + std::to_string(std::numeric_limits<Int>::max()) + "]");
    }
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    const bool digits =
        !t.empty() && (std::isdigit(static_cast<unsigned char>(t.front())) ||
                       (t.size() > 1 && t.front() == '-' && std::isdigit(static_cast<unsigned char>(t[1]))));
    if (isQuotedScalar(n) || !digits || end != t.data() + t.size() ||
        (ec != std::errc() && ec != std::errc::result_out_of_range))
        fail(quotedForMessage(s) + ": not an integer");
    if (ec == std::errc::result_out_of_range)
        fail(s + ": out of range [" + std::to_string(std::numeric_limits<Int>::min()) + ", " +
             std::to_string(std::numeric_limits<Int>::max()) + "]");
    return v;
}

template int readYamlInt<int>(const std::string&, const YAML::Node&, const std::string&, bool);
template std::uint64_t readYamlInt<std::uint64_t>(const std::string&, const YAML::Node&, const std::string&, bool);

int readYamlIntAtLeast(const std::string& name, const YAML::Node& n, const std::string& path, int least, bool marks) {
    const int v = readYamlInt<int>(name, n, path, marks);
    if (v < least) failAt(name, n, path, std::to_string(v) + ": must be at least " + std::to_string(least), marks);
    return v;
}

}  // namespace zp::probe
