// ze-probe run again as a child process: what --gate-repeat (a whole run per child) and the
// timing's fresh-process blocks (one block per child) are made of.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace zp::app {

// `args` (argv[1..]) without the options named in `drop`, each given as `--opt value` or
// `--opt=value`, every time it occurs.
std::vector<std::string> withoutOptions(const std::vector<std::string>& args, const std::vector<std::string>& drop);

// Runs this executable (/proc/self/exe) with `args`, its stdout and stderr into `log`, and
// waits. Returns its exit code; 3 (a device or driver failure) when a signal killed it.
// `who` names the caller in errors (fork / waitpid failures).
int runSelf(const std::vector<std::string>& args, const std::filesystem::path& log, const std::string& who);

}  // namespace zp::app
