#include "child_process.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace zp::app {

std::vector<std::string> withoutOptions(const std::vector<std::string>& args, const std::vector<std::string>& drop) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < args.size(); ++i) {
        bool dropped = false;
        for (const auto& d : drop) {
            if (args[i] == d) {
                ++i;  // and its value
                dropped = true;
                break;
            }
            if (args[i].rfind(d + "=", 0) == 0) {
                dropped = true;
                break;
            }
        }
        if (!dropped) out.push_back(args[i]);
    }
    return out;
}

int runSelf(const std::vector<std::string>& args, const std::filesystem::path& log, const std::string& who) {
    // Everything the child needs is made before fork: after it only async-signal-safe calls.
    std::vector<std::string> copy = args;
    std::string self = "ze-probe";
    std::vector<char*> argv;
    argv.push_back(self.data());
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string logPath = log.string();
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(who + ": fork failed");
    if (pid == 0) {
        const int fd = ::open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            ::dup2(fd, STDOUT_FILENO);
            ::dup2(fd, STDERR_FILENO);
            ::close(fd);
        }
        ::execv("/proc/self/exe", argv.data());
        std::_Exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) throw std::runtime_error(who + ": waitpid failed");
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 3;
}

}  // namespace zp::app
