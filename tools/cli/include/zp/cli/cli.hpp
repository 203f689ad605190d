// The command-line conventions every ze-probe tool shares:
//   --version   "<tool> 0.1.0 (git <describe>), contract 1"
//   --help      options wrapped at 100 columns, each with its default, and worked examples
//   errors      "<tool>: error: <message>" on stderr, exit 2 (CLI11's own parse errors too)
// It needs CLI11 and the standard library only (moe-server builds it against the installed
// zeprobe package, tools/moe-server/CMakeLists.txt).
#pragma once

#include <CLI/CLI.hpp>

#include <initializer_list>
#include <string>
#include <vector>

namespace zp::cli {

// "0.1.0 (git v0.1-12-gabcdef0), contract 1": `contract` is the contract version of the code the
// tool runs (probe::Config's for ze-probe, zeprobe::contractVersion() for moe-server).
std::string versionText(int contract);

// Sets the help formatter (wrapped descriptions, defaults shown), the --version flag and the
// examples as the help's footer. Call before adding options, so every option shows its default.
void configureApp(CLI::App& app, const std::string& tool, int contract, const std::vector<std::string>& examples);

// Parses; on --help / --version prints them and returns 0, on a parse error prints
// "<tool>: error: ..." and a hint to --help and returns 2; otherwise returns -1 (go on).
int parse(CLI::App& app, const std::string& tool, int argc, char** argv);

// An option of `names` given an empty value (--host "", --port-file "") would read as not given
// at all, or as a value nobody meant: an OptionError (exit 2) naming the option. After parse().
void refuseEmptyValues(const CLI::App& app, std::initializer_list<const char*> names);

}  // namespace zp::cli
