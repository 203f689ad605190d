#include "zp/cli/cli.hpp"

#include <iostream>
#include <sstream>

#include "zp/cli/git_describe.hpp"
#include "zp/cli/option_values.hpp"

namespace zp::cli {
namespace {

constexpr std::size_t kHelpWidth = 100;  // the whole line
constexpr std::size_t kNameColumn = 30;  // option names and their defaults

// Greedy word wrap of `text` into lines of at most `width` columns (a longer word stays whole).
std::vector<std::string> wrap(const std::string& text, std::size_t width) {
    std::vector<std::string> lines;
    std::istringstream words(text);
    std::string word, line;
    while (words >> word) {
        if (!line.empty() && line.size() + 1 + word.size() > width) {
            lines.push_back(line);
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
    }
    if (!line.empty()) lines.push_back(line);
    return lines;
}

// CLI11 2.1 prints each description on one line, however long: wrap it under its column.
class WrappingFormatter : public CLI::Formatter {
public:
    WrappingFormatter() { column_width(kNameColumn); }

    std::string make_option(const CLI::Option* opt, bool positional) const override {
        // The name with its type, default and Excludes: list can be long too: wrap it first.
        const std::vector<std::string> names =
            wrap(make_option_name(opt, positional) + make_option_opts(opt), kHelpWidth - 4);
        const std::vector<std::string> lines = wrap(make_option_desc(opt), kHelpWidth - kNameColumn);
        std::string out;
        for (std::size_t i = 0; i + 1 < names.size(); ++i) out += (i == 0 ? "  " : "    ") + names[i] + "\n";
        const std::string last = names.empty() ? std::string() : names.back();
        out += (names.size() > 1 ? "    " : "  ") + last;
        const std::size_t used = (names.size() > 1 ? 4 : 2) + last.size();
        std::size_t first = 0;
        if (used + 2 <= kNameColumn && !lines.empty()) {
            out += std::string(kNameColumn - used, ' ') + lines[0];
            first = 1;
        }
        out += '\n';
        for (std::size_t i = first; i < lines.size(); ++i) out += std::string(kNameColumn, ' ') + lines[i] + '\n';
        return out;
    }

    // A subcommand of the list: its name, and its description wrapped under the column.
    std::string make_subcommand(const CLI::App* sub) const override {
        const std::string name = "  " + sub->get_display_name(true);
        std::string out = name;
        std::size_t first = 0;
        const std::vector<std::string> lines = wrap(sub->get_description(), kHelpWidth - kNameColumn);
        if (name.size() + 2 <= kNameColumn && !lines.empty()) {
            out += std::string(kNameColumn - name.size(), ' ') + lines[0];
            first = 1;
        }
        out += '\n';
        for (std::size_t i = first; i < lines.size(); ++i) out += std::string(kNameColumn, ' ') + lines[i] + '\n';
        return out;
    }

    std::string make_description(const CLI::App* app) const override {
        std::string out;
        for (const auto& l : wrap(app->get_description(), kHelpWidth)) out += l + '\n';
        return out + '\n';
    }
};

}  // namespace

std::string versionText(int contract) {
    return std::string(ZP_PROJECT_VERSION) + " (git " + ZP_GIT_DESCRIBE + "), contract " + std::to_string(contract);
}

void configureApp(CLI::App& app, const std::string& tool, int contract, const std::vector<std::string>& examples) {
    app.formatter(std::make_shared<WrappingFormatter>());
    app.option_defaults()->always_capture_default();
    app.set_version_flag("--version", tool + " " + versionText(contract),
                         "print the version and the contract version, and exit");
    std::string footer = "Examples:\n";
    for (const auto& e : examples) footer += "  " + e + '\n';
    app.footer(footer);
}

int parse(CLI::App& app, const std::string& tool, int argc, char** argv) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
            app.exit(e);  // --help or --version, on stdout
            return 0;
        }
        // CLI11 says "--out: At Most 1 required but received 2" of an option given twice
        std::string message = e.what();
        const std::string twice = ": At Most 1 required but received ";
        if (const auto at = message.find(twice); at != std::string::npos)
            message = message.substr(0, at) + " is given " + message.substr(at + twice.size()) + " times: give it once";
        std::cerr << tool << ": error: " << message << "\n"
                  << tool << ": run '" << tool << " --help' for the options\n";
        return 2;
    }
    return -1;
}

void refuseEmptyValues(const CLI::App& app, std::initializer_list<const char*> names) {
    for (const char* name : names)
        for (const auto& value : app.get_option(name)->results())
            if (value.empty())
                throw OptionError(std::string(name) + " '': an empty value; give one or leave the option out");
}

}  // namespace zp::cli
