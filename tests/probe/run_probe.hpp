// Runs the built ze-probe (ZE_PROBE_EXE) as a user would, for the probe tests.
#pragma once

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

struct ProbeRun {
    int exitCode;        // -1 when it did not exit normally
    std::string output;  // stdout and stderr
};

// `args` go through the shell as they are.
inline ProbeRun runProbe(const std::string& args) {
    const std::string cmd = std::string(ZE_PROBE_EXE) + " " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return {-1, "popen failed"};
    std::string out;
    std::array<char, 4096> buf;
    while (std::size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
    const int status = pclose(p);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}
