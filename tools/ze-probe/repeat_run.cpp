#include "repeat_run.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report_cards.hpp"
#include "zp/probe/gate_repeat.hpp"
#include "zp/probe/input_error.hpp"

namespace zp::app {
namespace fs = std::filesystem;
namespace {

// The command line without the options the repeat sets per run.
std::vector<std::string> childArgs(const std::vector<std::string>& args) {
    static const std::vector<std::string> drop = {"--gate-repeat", "--out", "--report", "--trace"};
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

int runChild(const std::vector<std::string>& args, const fs::path& log) {
    std::vector<char*> argv;
    std::string self = "ze-probe";
    argv.push_back(self.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("--gate-repeat: fork failed");
    if (pid == 0) {
        const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
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
        if (errno != EINTR) throw std::runtime_error("--gate-repeat: waitpid failed");
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 3;  // killed by a signal: a device or driver failure, not a verdict
}

}  // namespace

int runGateRepeat(const std::vector<std::string>& args, int runs, const std::string& outDir,
                  const std::string& reportFile) {
    if (runs < 2) throw probe::InputError(fmt::format("--gate-repeat {}: compare at least 2 runs", runs));
    const std::vector<std::string> base = childArgs(args);
    std::vector<nlohmann::json> cards;
    int worst = 0;
    static const std::regex cardName(R"(card(\d+)\.json)");
    for (int r = 1; r <= runs; ++r) {
        const fs::path dir = fs::path(outDir) / fmt::format("repeat-{}", r);
        fs::create_directories(dir);
        for (const auto& e : fs::directory_iterator(dir))
            if (std::regex_match(e.path().filename().string(), cardName)) fs::remove(e.path());  // no stale card
        std::vector<std::string> a = base;
        a.insert(a.end(), {"--out", dir.string()});
        const auto t0 = std::chrono::steady_clock::now();
        const int rc = runChild(a, dir / "ze-probe.log");
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        fmt::print("gate repeat: run {} of {} exited {} after {:.1f} s ({})\n", r, runs, rc, s,
                   (dir / "ze-probe.log").string());
        std::fflush(stdout);
        if (rc == 2) {
            fmt::print(stderr, "ze-probe: error: --gate-repeat: run {} rejected its input; see {}\n", r,
                       (dir / "ze-probe.log").string());
            return 2;
        }
        worst = std::max(worst, rc);
        // Every card of the run: one card keeps the candidate names, several prefix "cardN ".
        std::vector<fs::path> files;
        for (const auto& e : fs::directory_iterator(dir))
            if (std::regex_match(e.path().filename().string(), cardName)) files.push_back(e.path());
        std::sort(files.begin(), files.end());
        nlohmann::json merged = {{"gate", {{"candidates", nlohmann::json::array()}}}};
        for (const auto& f : files) {
            std::ifstream in(f);
            const nlohmann::json card = nlohmann::json::parse(in);
            if (!card.contains("gate") || card["gate"].is_null()) continue;
            for (auto g : card["gate"]["candidates"]) {
                if (files.size() > 1)
                    g["candidate"] = fmt::format("card{} {}", card.value("card", 0), g["candidate"].get<std::string>());
                merged["gate"]["candidates"].push_back(g);
            }
        }
        cards.push_back(std::move(merged));
    }
    const probe::RepeatSummary summary = probe::summarizeRepeats(cards);
    const std::string table = probe::formatRepeatTable(summary);
    fmt::print("{}", table);
    const fs::path json = fs::path(outDir) / "gate_repeat.json";
    {
        std::ofstream f(json);
        f << probe::repeatJson(summary).dump(2) << '\n';
        if (!f) throw probe::InputError("cannot write " + json.string() + ": check --out");
    }
    fmt::print("wrote {}\n", json.string());
    if (!reportFile.empty()) {
        std::vector<LoadedCard> loaded;
        for (std::size_t i = 0; i < cards.size(); ++i) loaded.push_back({fmt::format("run {}", i + 1), cards[i]});
        writeCardsReport(reportFile, loaded, {}, table);
        fmt::print("wrote {}\n", reportFile);
    }
    return worst;
}

}  // namespace zp::app
