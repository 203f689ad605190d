// What the ze-probe end-to-end tests share: the reduced shape they run at, and running the
// built ze-probe (ZE_PROBE_EXE) as a user would.
#pragma once

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <sys/wait.h>

#include "zp/oracle/chain.hpp"

// The reduced shape, as ze-probe options and as a ChainShape.
inline constexpr const char* kReducedShapeArgs = "--set hidden=128 --set intermediate=64 --set experts=48";
inline zp::oracle::ChainShape reducedShape() {
    zp::oracle::ChainShape s;
    s.hidden = 128;
    s.intermediate = 64;
    s.experts = 48;
    return s;
}

// A gtest parameter name from free text: letters and digits kept, every run of anything else one
// '_' ("--set hiden=128" -> "set_hiden_128"), at most 60 characters.
inline std::string paramName(const std::string& text) {
    std::string n;
    for (char c : text) {
        const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (keep)
            n += c;
        else if (!n.empty() && n.back() != '_')
            n += '_';
    }
    while (!n.empty() && n.back() == '_') n.pop_back();
    return n.substr(0, 60);
}

struct ProbeRun {
    int exitCode;        // -1 when it did not exit normally
    std::string output;  // stdout and stderr
};

// `args` go through the shell as they are. ze-probe runs in a working directory of its own, made
// for the call and removed after it: tests run in parallel (ctest -j), so two runs must never
// share its default --out (probe-out) or a relative path of `args` (a rejected run removes the
// --out directory it made, under the other run's feet). Absolute paths in `args` are unaffected.
inline ProbeRun runProbe(const std::string& args) {
    std::string cwd = (std::filesystem::temp_directory_path() / "zp-probe-run-XXXXXX").string();
    if (!mkdtemp(cwd.data())) return {-1, "mkdtemp failed for " + cwd};
    const std::string cmd = "cd '" + cwd + "' && exec " + std::string(ZE_PROBE_EXE) + " " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return {-1, "popen failed"};
    std::string out;
    std::array<char, 4096> buf;
    while (std::size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
    const int status = pclose(p);
    std::error_code ignored;
    std::filesystem::remove_all(cwd, ignored);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// A card<N>.json the run wrote, read and checked against docs/card.schema.json (ZP_CARD_SCHEMA):
// every card a test makes is validated, and a card that breaks the schema fails that test.
#if defined(ZP_CARD_SCHEMA)
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "zp/probe/json_schema.hpp"

inline nlohmann::json readCard(const std::string& path) {
    std::ifstream f(path);
    if (!f) {
        ADD_FAILURE() << "no card at " << path;
        return nullptr;
    }
    const nlohmann::json card = nlohmann::json::parse(f);
    std::ifstream s(ZP_CARD_SCHEMA);
    const nlohmann::json schema = nlohmann::json::parse(s);
    for (const auto& p : zp::probe::schemaProblems(schema, card)) ADD_FAILURE() << path << ": " << p;
    return card;
}
#endif
