// Faults in zecl (driver/README.md, "Fault injection"): ZECL_FAULT=kind:N makes the N-th call of
// a kind fail with its proper ze_result. Every scenario runs in its own process (zecl counts per
// process): the real ze-probe binary, and fault_scenario (the zeprobe facade). Checked: the exit
// code, a message naming the result and the call, no crash, no half-written card, a sweep keeps
// the rows it finished and --resume completes it, and the facade recovers after each error.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

extern char** environ;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

struct Child {
    bool exited = false;  // false: killed by a signal (a crash)
    int exitCode = -1;
    int signal = 0;
    std::string out, err;
    std::string describe() const {
        return (exited ? "exit " + std::to_string(exitCode) : "signal " + std::to_string(signal)) + "\n--- stdout\n" +
               out + "\n--- stderr\n" + err;
    }
};

std::string slurp(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// Runs argv[0] with the parent's environment plus `env` (NAME=value, overriding), stdout and
// stderr captured through files in `dir`.
Child run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, const fs::path& dir) {
    std::vector<std::string> envStrings;
    for (char** e = environ; *e; ++e) {
        const std::string kv = *e;
        if (!env.count(kv.substr(0, kv.find('=')))) envStrings.push_back(kv);
    }
    for (const auto& [k, v] : env) envStrings.push_back(k + "=" + v);
    std::vector<char*> cargv, cenv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    for (const auto& e : envStrings) cenv.push_back(const_cast<char*>(e.c_str()));
    cenv.push_back(nullptr);
    const fs::path outPath = dir / "child.stdout", errPath = dir / "child.stderr";
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int o = ::open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int e = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0) ::_exit(127);
        ::dup2(o, 1);
        ::dup2(e, 2);
        ::execve(cargv[0], cargv.data(), cenv.data());
        ::_exit(127);
    }
    Child c;
    int status = 0;
    if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return c;
    c.exited = WIFEXITED(status);
    c.exitCode = c.exited ? WEXITSTATUS(status) : -1;
    c.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    c.out = slurp(outPath);
    c.err = slurp(errPath);
    return c;
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// Signs of a crash or an escaped exception that an exit code alone could hide.
void expectNoCrashSigns(const Child& c) {
    for (const char* bad : {"terminate called", "Segmentation fault", "Aborted", "AddressSanitizer", "LeakSanitizer",
                            "runtime error:", "internal error"})
        EXPECT_FALSE(contains(c.out + c.err, bad)) << bad << "\n" << c.describe();
}

std::map<std::string, std::string> zeclEnv(const std::string& fault) {
    std::map<std::string, std::string> env{{"ZE_ENABLE_ALT_DRIVERS", ZECL_LIB}};
    if (!fault.empty()) env["ZECL_FAULT"] = fault;
    return env;
}

const std::vector<std::string> kReducedArgs = {
    "--device",        "zecl",     "--set",      "hidden=128",      "--set",
    "intermediate=64", "--set",    "experts=48", "--route-pattern", "all_duplicate",
    "--variant",       "baseline", "--no-timing"};

class Faults : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        const fs::path d = fs::temp_directory_path() / ("zp-faults-probe-" + std::to_string(::getpid()));
        fs::create_directories(d);
        const Child c = run({ZE_PROBE_EXE, "--list-devices"}, zeclEnv(""), d);
        // A --list-devices that fails is an error of the tree, never a reason to skip.
        listDevicesFailure_ = c.exited && c.exitCode == 0 ? std::string() : c.describe();
        zeclDevice_ = listDevicesFailure_.empty() && contains(c.out, "zecl");
        fs::remove_all(d);
    }
    void SetUp() override {
        ASSERT_EQ(listDevicesFailure_, "") << "ze-probe --list-devices failed";
        if (!zeclDevice_) GTEST_SKIP() << "no zecl device (OpenCL with SVM) on this machine";
        dir = fs::temp_directory_path() / ("zp-faults-" + std::to_string(::getpid()) + "-" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    void TearDown() override {
        if (!dir.empty()) fs::remove_all(dir);
    }
    Child probe(std::vector<std::string> args, const std::string& fault) const {
        args.insert(args.begin(), ZE_PROBE_EXE);
        return run(args, zeclEnv(fault), dir);
    }
    static bool zeclDevice_;
    static std::string listDevicesFailure_;
    fs::path dir;
};
bool Faults::zeclDevice_ = false;
std::string Faults::listDevicesFailure_;

// --- ze-probe, one case run ----------------------------------------------------------------------

struct ProbeFault {
    const char* fault;
    std::vector<const char*> fragments;  // each must be in stderr
    friend void PrintTo(const ProbeFault& f, std::ostream* os) { *os << "ZECL_FAULT=" << f.fault; }
};

class FaultsProbe : public Faults, public ::testing::WithParamInterface<ProbeFault> {};

TEST_P(FaultsProbe, GivenZeclFault_WhenZeProbeRuns_ThenExitThreeNamingTheCallAndNoCard) {
    std::vector<std::string> args = kReducedArgs;
    args.insert(args.end(), {"--out", (dir / "out").string()});
    const Child c = probe(args, GetParam().fault);
    ASSERT_TRUE(c.exited) << c.describe();
    EXPECT_EQ(c.exitCode, 3) << c.describe();
    EXPECT_TRUE(contains(c.err, "ze-probe: error: Level Zero: ")) << c.describe();
    for (const char* f : GetParam().fragments) EXPECT_TRUE(contains(c.err, f)) << f << "\n" << c.describe();
    expectNoCrashSigns(c);
    // The card is written at the end only: a failed run leaves none that looks complete.
    EXPECT_FALSE(fs::exists(dir / "out" / "card0.json")) << c.describe();
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, FaultsProbe,
    ::testing::Values(
        ProbeFault{"alloc:1", {"ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", "from zeMemAlloc", "asked for "}},
        ProbeFault{"alloc:5", {"ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", "from zeMemAlloc", "asked for "}},
        ProbeFault{"module:1", {"ZE_RESULT_ERROR_MODULE_BUILD_FAILURE", "from zeModuleCreate", "zecl fault injection"}},
        ProbeFault{"module:2", {"ZE_RESULT_ERROR_MODULE_BUILD_FAILURE", "from zeModuleCreate", "zecl fault injection"}},
        // A refused kernel the module does have: the message must not blame the name.
        ProbeFault{"kernel:1",
                   {"ZE_RESULT_ERROR_INVALID_KERNEL_NAME", "from zeKernelCreate", "kernel creation failed for '",
                    "the module has this kernel"}},
        ProbeFault{"kernel:3",
                   {"ZE_RESULT_ERROR_INVALID_KERNEL_NAME", "from zeKernelCreate", "kernel creation failed for '",
                    "the module has this kernel"}},
        ProbeFault{"enqueue:1", {"ZE_RESULT_ERROR_DEVICE_LOST", "from zeCommand"}},
        ProbeFault{"enqueue:5", {"ZE_RESULT_ERROR_DEVICE_LOST", "from zeCommand"}},
        // A fault inside a case's execution: the case and the variant are named before the error.
        ProbeFault{"enqueue:100",
                   {"ZE_RESULT_ERROR_DEVICE_LOST", "from zeCommand", "ze-probe: case all_duplicate/v",
                    ", variant baseline: the execution failed"}},
        // Several faults: the first to fire ends the run.
        ProbeFault{"enqueue:200,alloc:2", {"ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", "from zeMemAlloc"}}),
    [](const auto& info) {
        std::string n = info.param.fault;
        for (char& ch : n)
            if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
        return n;
    });

TEST_F(Faults, GivenNoFault_WhenZeProbeRuns_ThenTheSameRunPasses) {
    std::vector<std::string> args = kReducedArgs;
    args.insert(args.end(), {"--out", (dir / "out").string()});
    const Child c = probe(args, "");
    ASSERT_TRUE(c.exited) << c.describe();
    EXPECT_EQ(c.exitCode, 0) << c.describe();
    EXPECT_TRUE(contains(c.out, "all_duplicate           12/12")) << c.describe();
    EXPECT_TRUE(fs::exists(dir / "out" / "card0.json"));
}

// --- ze-probe --sweep: rows finished before the fault stay, --resume completes --------------------

constexpr int kSweepPoints = 4;

void writeSweep(const fs::path& p) {
    std::ofstream(p) << "sweep:\n"
                        "  name: faults\n"
                        "  set: {hidden: 128, intermediate: 64, experts: 48}\n"
                        "  axes:\n"
                        "    pattern: [all_duplicate]\n"
                        "    variant: [baseline]\n"
                        "    seed: [1, 2, 3, 4]\n"
                        "  repeats: 1\n"
                        "  warmup: 0\n";
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> v;
    std::istringstream s(text);
    for (std::string l; std::getline(s, l);) v.push_back(l);
    return v;
}

// Every JSONL line a complete row, ids in sweep order.
void expectRowsIntact(const std::vector<std::string>& rows) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto j = nlohmann::json::parse(rows[i], nullptr, /*allow_exceptions=*/false);
        ASSERT_FALSE(j.is_discarded()) << "row " << i << " is not JSON: " << rows[i];
        EXPECT_EQ(j.value("index", -1), int(i)) << rows[i];
        EXPECT_EQ(j["point"]["seed"], int(i) + 1) << rows[i];
    }
}

class FaultsSweep : public Faults {
protected:
    void SetUp() override {
        Faults::SetUp();
        if (IsSkipped() || HasFatalFailure()) return;
        writeSweep(dir / "s.yaml");
    }
    Child sweep(const std::string& fault, bool resume) const {
        std::vector<std::string> a{"--device",          "zecl", "--sweep", (dir / "s.yaml").string(), "--out",
                                   (dir / "o").string()};
        if (resume) a.push_back("--resume");
        return probe(a, fault);
    }
    std::string jsonl() const { return slurp(dir / "o" / "faults.jsonl"); }
    std::string csv() const { return slurp(dir / "o" / "faults.csv"); }

    void expectResumeCompletes(const std::string& keptJsonl) {
        const Child r = sweep("", true);
        ASSERT_TRUE(r.exited) << r.describe();
        ASSERT_EQ(r.exitCode, 0) << r.describe();
        const std::string after = jsonl();
        EXPECT_EQ(after.substr(0, keptJsonl.size()), keptJsonl) << "--resume rewrote the rows it kept";
        const auto rows = lines(after);
        EXPECT_EQ(rows.size(), std::size_t(kSweepPoints)) << after;
        expectRowsIntact(rows);
        EXPECT_EQ(lines(csv()).size(), std::size_t(kSweepPoints) + 1) << csv();  // header + rows
    }
};

TEST_F(FaultsSweep, GivenEnqueueFaultAfterSomePoints_WhenSweeping_ThenFinishedRowsKeptAndResumeCompletes) {
    // Where the N-th enqueue falls depends on the chain's launches: walk N up until a fault
    // lands inside the sweep with rows already written; every run on the way must fail cleanly.
    std::string kept;
    int faultsSeen = 0;
    for (int n = 40; n <= 400 && kept.empty(); n += 40) {
        fs::remove_all(dir / "o");
        const std::string fault = "enqueue:" + std::to_string(n);
        const Child c = sweep(fault, false);
        ASSERT_TRUE(c.exited) << fault << "\n" << c.describe();
        if (c.exitCode == 0) break;  // past the sweep's last enqueue
        ++faultsSeen;
        EXPECT_EQ(c.exitCode, 3) << fault << "\n" << c.describe();
        EXPECT_TRUE(contains(c.err, "ZE_RESULT_ERROR_DEVICE_LOST")) << c.describe();
        expectNoCrashSigns(c);
        const auto rows = lines(jsonl());
        ASSERT_LT(rows.size(), std::size_t(kSweepPoints)) << fault;
        expectRowsIntact(rows);
        EXPECT_EQ(lines(csv()).size(), rows.empty() ? std::size_t(0) : rows.size() + 1) << fault << "\n" << csv();
        if (!rows.empty()) kept = jsonl();
    }
    EXPECT_GE(faultsSeen, 1);
    ASSERT_FALSE(kept.empty()) << "no enqueue fault between 40 and 400 fell after the first finished point";
    expectResumeCompletes(kept);
}

TEST_F(FaultsSweep, GivenModuleFaultAtTheStart_WhenSweeping_ThenNoRowsAndResumeCompletes) {
    const Child c = sweep("module:1", false);
    ASSERT_TRUE(c.exited) << c.describe();
    EXPECT_EQ(c.exitCode, 3) << c.describe();
    EXPECT_TRUE(contains(c.err, "zecl fault injection")) << c.describe();
    expectNoCrashSigns(c);
    EXPECT_TRUE(lines(jsonl()).empty()) << jsonl();
    expectResumeCompletes("");
}

// A sweep run, its `set` edited, then resumed: the point ids do not hold the set, so the
// resume once appended rows at hidden 256 to those at hidden 128 and exited 0. Now exit 2 naming
// the change, with the plan file and the rows as they were.
TEST_F(FaultsSweep, GivenTheSweepsSetEdited_WhenResumed_ThenExit2NamingTheChangeAndNothingWritten) {
    const Child first = sweep("", false);  // the whole sweep, written at hidden 128
    ASSERT_EQ(first.exitCode, 0) << first.describe();
    const std::string rows = jsonl(), plan = slurp(dir / "o" / "faults.plan.json");
    std::string yaml = slurp(dir / "s.yaml");
    yaml.replace(yaml.find("hidden: 128"), 11, "hidden: 256");
    std::ofstream(dir / "s.yaml") << yaml;
    const Child r = sweep("", true);
    ASSERT_TRUE(r.exited) << r.describe();
    EXPECT_EQ(r.exitCode, 2) << r.describe();
    EXPECT_TRUE(contains(r.err, "settings.config.hidden: 128 in the plan file, 256 in this run")) << r.describe();
    EXPECT_EQ(jsonl(), rows);
    EXPECT_EQ(slurp(dir / "o" / "faults.plan.json"), plan);
}

// --- the zeprobe facade (fault_scenario) --------------------------------------------------------

struct FacadeFault {
    const char* fault;
    const char* variant;
    const char* code;       // errorCodeName of the first error
    const char* stage;      // where it must fire; "" = any
    int errors;             // zeprobe::Errors in all
    const char* what = "";  // in the error's message; "" = anything
    friend void PrintTo(const FacadeFault& f, std::ostream* os) {
        *os << "ZECL_FAULT=" << f.fault << " on " << f.variant;
    }
};

std::string facadeName(const FacadeFault& f) {
    std::string n = std::string(f.fault) + "_" + f.variant;
    for (char& ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return n;
}

const std::vector<FacadeFault> kFacadeFaults = {
    {"alloc:1", "baseline", "out_of_memory", "layer", 1},
    {"alloc:8", "baseline", "out_of_memory", "chain", 1},
    {"module:1", "baseline", "kernel_build", "chain", 1},
    {"module:2", "paired_direct", "kernel_build", "chain", 1},
    {"kernel:1", "baseline", "kernel_build", "chain", 1, "kernel creation failed for '"},
    {"kernel:3", "paired_direct", "kernel_build", "chain", 1, "kernel creation failed for '"},
    {"enqueue:1", "baseline", "device", "layer", 1},
    // An enqueue inside forward(): the first one (forward+0) and one in the second step
    // (forward+7); FaultsFacade::resolve finds where forward()'s enqueues start.
    {"enqueue:forward+0", "baseline", "device", "forward", 1},
    {"enqueue:forward+7", "paired_direct", "device", "forward", 1},
    {"alloc:2,module:1", "baseline", "out_of_memory", "layer", 2},
};

// The stage a fault scenario's first error names ("" when none fired).
std::string firstErrorStage(const Child& c) {
    const std::string key = "error stage=";
    const auto at = c.out.find(key);
    if (at == std::string::npos) return "";
    const auto from = at + key.size();
    return c.out.substr(from, c.out.find(' ', from) - from);
}

class FaultsFacade : public Faults, public ::testing::WithParamInterface<FacadeFault> {
protected:
    // "enqueue:forward+K": the K-th enqueue after the last one before forward(). How many
    // enqueues the layer and the chain take depends on the variant's launches and uploads, so it
    // is found here: the stages a fault lands in only move forward with N (layer, chain,
    // forward, then none), so a bisection finds the first N that is past the chain, and that N
    // must land in forward(). Anything else as it is.
    std::string resolve(const FacadeFault& f) const {
        const std::string marker = "enqueue:forward+";
        const std::string fault = f.fault;
        if (fault.rfind(marker, 0) != 0) return fault;
        const int k = std::stoi(fault.substr(marker.size()));
        auto stageAt = [&](int n) {
            const Child c = run({FAULT_SCENARIO_EXE, "enqueue:" + std::to_string(n), f.variant}, zeclEnv(""), dir);
            return firstErrorStage(c);
        };
        auto pastChain = [&](const std::string& stage) { return stage == "forward" || stage.empty(); };
        int lo = 1, hi = 1000;  // stageAt(hi) must be past the chain
        if (!pastChain(stageAt(hi))) {
            ADD_FAILURE() << f.variant << ": the 1000th enqueue still falls before forward()";
            return fault;
        }
        while (lo < hi) {
            const int mid = lo + (hi - lo) / 2;
            if (pastChain(stageAt(mid)))
                hi = mid;
            else
                lo = mid + 1;
        }
        if (stageAt(lo) != "forward") {
            ADD_FAILURE() << f.variant << ": no enqueue fault fired inside forward() (the first past the chain, " << lo
                          << ", fired in none)";
            return fault;
        }
        return "enqueue:" + std::to_string(lo + k);
    }
    Child scenario(const FacadeFault& f, bool leakCheck) const {
        auto env = zeclEnv("");
        if (leakCheck) {
            const char* asan = std::getenv("ASAN_OPTIONS");
            env["ASAN_OPTIONS"] = std::string(asan ? asan : "") + ":detect_leaks=1:exitcode=23";
        }
        return run({FAULT_SCENARIO_EXE, resolve(f), f.variant}, env, dir);
    }
    void check(const Child& c, const FacadeFault& f) const {
        ASSERT_TRUE(c.exited) << c.describe();
        EXPECT_EQ(c.exitCode, 3) << c.describe();  // error(s), each stage recovered, oracle bits
        const std::string first = "error stage=";
        const auto at = c.out.find(first);
        ASSERT_NE(at, std::string::npos) << c.describe();
        const std::string line = c.out.substr(at, c.out.find('\n', at) - at);
        EXPECT_TRUE(contains(line, std::string(" code=") + f.code + " ")) << line;
        if (*f.stage) {
            EXPECT_TRUE(contains(line, std::string("stage=") + f.stage + " ")) << line;
        }
        EXPECT_TRUE(contains(c.out, f.what)) << f.what << "\n" << c.describe();  // the message spans lines
        EXPECT_TRUE(contains(c.out, "ok errors=" + std::to_string(f.errors))) << c.describe();
        EXPECT_FALSE(contains(line, "ze_result=0x00000000")) << line;  // the raw result is kept
        expectNoCrashSigns(c);
    }
};

TEST_P(FaultsFacade, GivenZeclFault_WhenUsingTheFacade_ThenCodedErrorAndRecovery) {
    check(scenario(GetParam(), false), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Kinds, FaultsFacade, ::testing::ValuesIn(kFacadeFaults),
                         [](const auto& info) { return facadeName(info.param); });

TEST_F(Faults, GivenNoFault_WhenUsingTheFacade_ThenNoErrorAndOracleBits) {
    const Child c = run({FAULT_SCENARIO_EXE, "", "baseline"}, zeclEnv(""), dir);
    ASSERT_TRUE(c.exited) << c.describe();
    EXPECT_EQ(c.exitCode, 0) << c.describe();
    EXPECT_TRUE(contains(c.out, "ok errors=0")) << c.describe();
}

class FaultsFacadeLeaks : public FaultsFacade {};

TEST_P(FaultsFacadeLeaks, GivenZeclFault_WhenRunUnderLeakSanitizer_ThenEverythingHeldIsFreed) {
    if (!kAddressSanitizer) GTEST_SKIP() << "built without ZP_SANITIZE: no leak check";
    const Child c = scenario(GetParam(), true);
    check(c, GetParam());  // exit 23 instead of 3 = a leak report
}

INSTANTIATE_TEST_SUITE_P(Kinds, FaultsFacadeLeaks, ::testing::ValuesIn(kFacadeFaults),
                         [](const auto& info) { return facadeName(info.param); });

}  // namespace
