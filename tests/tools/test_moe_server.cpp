// tools/moe-server end to end: started on a free loopback port (device zecl; ctest points
// ZE_ENABLE_ALT_DRIVERS at the built libze_zecl.so), loaded with concurrent valid and invalid
// requests, every valid answer compared bit for bit with the host oracle on the same random
// layer (same shape and seed), every invalid one a 400 naming the problem; then /metrics,
// /healthz, and a clean stop on SIGTERM.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "zp/oracle/chain.hpp"
#include "zp/oracle/numerics.hpp"
#include "zp/probe/cases.hpp"
#include "zp/probe/safetensors.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kSeed = 4242;
constexpr int kThreads = 4;
constexpr int kRequestsPerThread = 25;

zp::oracle::ChainShape serverShape() {  // the --set keys below; K=6, M=2, C=4, card 0 by default
    zp::oracle::ChainShape s;
    s.hidden = 128;
    s.intermediate = 64;
    s.experts = 48;
    return s;
}

std::string readFile(const fs::path& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

class ServerProcess {
public:
    ServerProcess() {
        dir_ = fs::temp_directory_path() / ("zp-moe-server-" + std::to_string(getpid()));
        fs::create_directories(dir_);
        log_ = dir_ / "server.log";
        const fs::path portFile = dir_ / "port";
        const std::vector<std::string> args = {MOE_SERVER_EXE,
                                               "--device",
                                               "zecl",
                                               "--set",
                                               "hidden=128",
                                               "--set",
                                               "intermediate=64",
                                               "--set",
                                               "experts=48",
                                               "--seed",
                                               std::to_string(kSeed),
                                               "--host",
                                               "127.0.0.1",
                                               "--port",
                                               "0",
                                               "--port-file",
                                               portFile.string(),
                                               "--threads",
                                               std::to_string(kThreads)};
        std::vector<char*> argv;
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&actions, 1, 2);
        const int rc = posix_spawn(&pid_, MOE_SERVER_EXE, &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (rc != 0) throw std::runtime_error("posix_spawn " + std::string(MOE_SERVER_EXE) + " failed");

        // PoCL builds the kernel modules at start: allow it a while.
        const auto deadline = Clock::now() + std::chrono::seconds(180);
        while (Clock::now() < deadline) {
            if (fs::exists(portFile)) {
                port_ = std::stoi(readFile(portFile));
                return;
            }
            int status = 0;
            if (waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                throw std::runtime_error("moe-server exited before listening:\n" + log());
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        throw std::runtime_error("moe-server did not listen within 180 s:\n" + log());
    }
    ~ServerProcess() {
        if (pid_ > 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }

    int port() const { return port_; }
    std::string log() const { return readFile(log_); }

    // SIGTERM, then the exit status (-1: still running after the timeout, then killed).
    int terminate(std::chrono::seconds timeout) {
        kill(pid_, SIGTERM);
        const auto deadline = Clock::now() + timeout;
        while (Clock::now() < deadline) {
            int status = 0;
            if (waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return -1;
    }

private:
    fs::path dir_, log_;
    pid_t pid_ = -1;
    int port_ = 0;
};

struct Inputs {
    int rows = 0;
    zp::oracle::ChainInputs in;
    std::vector<double> hiddenDoubles;  // for the `hidden` (numbers) form
};

Inputs randomInputs(std::mt19937_64& rng, int rows, const zp::oracle::ChainShape& s, bool asDoubles) {
    Inputs r;
    r.rows = rows;
    std::normal_distribution<double> normal(0.0, 1.0);
    std::uniform_int_distribution<int> anyExpert(0, s.experts - 1), localExpert(0, s.localExperts() - 1);
    std::uniform_real_distribution<float> weight(-1.0f, 1.0f);
    for (int i = 0; i < rows * s.hidden; ++i) {
        const double x = normal(rng);
        r.hiddenDoubles.push_back(x);
        r.in.hidden.push_back(asDoubles ? zp::oracle::bf16FromF64(x) : zp::oracle::bf16FromF32(float(x)));
    }
    for (int i = 0; i < rows * s.topK; ++i) {
        // About half the routes local, with within-row duplicates now and then.
        r.in.topkIds.push_back((rng() & 1) ? localExpert(rng) : anyExpert(rng));
        r.in.topkWeights.push_back(weight(rng));
    }
    return r;
}

std::vector<std::uint16_t> oracleOut(const zp::oracle::ChainShape& base, const zp::oracle::LocalWeights& w,
                                     const std::vector<zp::oracle::bf16_t>& silu, const Inputs& r) {
    zp::oracle::ChainShape s = base;
    s.rows = r.rows;
    return zp::oracle::runChain(s, w, r.in, silu).out;
}

json rowsJson(const auto& flat, int rows, int cols) {
    json a = json::array();
    for (int m = 0; m < rows; ++m) {
        json row = json::array();
        for (int c = 0; c < cols; ++c) row.push_back(flat[std::size_t(m) * cols + c]);
        a.push_back(std::move(row));
    }
    return a;
}

std::string safetensorsBody(const Inputs& r, const zp::oracle::ChainShape& s) {
    using namespace zp::sched;
    TensorMap t;
    t["hidden"] = makeTensor(DType::BF16, {r.rows, s.hidden}, r.in.hidden);
    t["topk_ids"] = makeTensor(DType::I32, {r.rows, s.topK}, r.in.topkIds);
    t["topk_weights"] = makeTensor(DType::F32, {r.rows, s.topK}, r.in.topkWeights);
    const auto bytes = serializeSafetensors(t);
    return std::string(bytes.begin(), bytes.end());
}

struct BadCase {
    std::string contentType;
    std::string body;
    std::string fragment;  // expected in the 400's "error"
};

std::vector<BadCase> badCases(const zp::oracle::ChainShape& s) {
    std::mt19937_64 rng(7);
    const Inputs ok = randomInputs(rng, 2, s, false);
    auto body = [&](auto edit) {
        json j = {{"hidden_bf16", rowsJson(ok.in.hidden, 2, s.hidden)},
                  {"topk_ids", rowsJson(ok.in.topkIds, 2, s.topK)},
                  {"topk_weights", rowsJson(ok.in.topkWeights, 2, s.topK)}};
        edit(j);
        return j.dump();
    };
    Inputs badId = ok;
    badId.in.topkIds[1] = 99;
    std::vector<BadCase> v = {
        {"application/json", body([](json& j) { j["topk_ids"][1][2] = 48; }),
         "topk_ids[1][2] = 48 is not an expert id in [0, 48)"},
        {"application/json", body([](json& j) { j["topk_ids"][0][0] = -1; }),
         "topk_ids[0][0] = -1 is not an expert id in [0, 48)"},
        {"application/json", body([](json& j) { j["topk_ids"][0][5] = 5000000000LL; }),
         "topk_ids[0][5] = 5000000000 is not an expert id"},
        {"application/json", body([](json& j) { j["hidden_bf16"][0].erase(0); }),
         "hidden_bf16[0] has 127 values, expected hidden = 128"},
        {"application/json", body([](json& j) { j["hidden_bf16"][1][3] = 70000; }),
         "hidden_bf16[1][3] = 70000 is not a BF16 bit pattern"},
        {"application/json", body([](json& j) { j.erase("topk_weights"); }), "missing 'topk_weights'"},
        {"application/json", body([&](json& j) { j["topk_ids"].push_back(j["topk_ids"][0]); }),
         "'topk_ids' has 3 rows, expected 1 to at most rows = 2"},
        {"application/json", body([](json& j) { j["hidden"] = j["hidden_bf16"]; }), "exactly one of 'hidden_bf16'"},
        {"application/json", body([](json& j) { j["topk_weight"] = 1; }), "unknown key 'topk_weight'"},
        {"application/json", R"({"topk_ids": [[1, 2)", "malformed JSON"},
        {"application/json", "[1, 2, 3]", "must be a JSON object"},
        {"application/octet-stream", "garbage!", "request body (safetensors)"},
        {"application/octet-stream", safetensorsBody(badId, s), "topk_ids[0][1] = 99 is not an expert id in [0, 48)"},
    };
    return v;
}

}  // namespace

TEST(MoeServer, GivenServerOnZecl_WhenConcurrentValidAndInvalidRequests_ThenOracleBitsOr400AndCleanStop) {
    const auto started = Clock::now();
    const zp::oracle::ChainShape shape = serverShape();
    const zp::oracle::LocalWeights weights = zp::sched::makeRandomWeights(shape, kSeed);
    const std::vector<zp::oracle::bf16_t> silu = zp::oracle::buildSiluTable(shape.swigluAlpha);
    const std::vector<BadCase> bad = badCases(shape);

    ServerProcess server;
    const auto listening = Clock::now();

    std::mutex failMutex;
    std::vector<std::string> failures;
    auto fail = [&](const std::string& what) {
        std::lock_guard lock(failMutex);
        failures.push_back(what);
    };
    std::atomic<int> valid{0}, invalid{0};

    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            httplib::Client cli("127.0.0.1", server.port());
            cli.set_read_timeout(std::chrono::seconds(60));
            std::mt19937_64 rng(1000 + t);
            for (int i = 0; i < kRequestsPerThread; ++i) {
                const std::string where = "thread " + std::to_string(t) + " request " + std::to_string(i);
                const int kind = (i + t) % 5;
                if (kind == 4) {  // invalid
                    const BadCase& b = bad[std::size_t(t * kRequestsPerThread + i) % bad.size()];
                    auto res = cli.Post("/v1/moe", b.body, b.contentType);
                    ++invalid;
                    if (!res) {
                        fail(where + ": no answer to a bad request (" + b.fragment + ")");
                        continue;
                    }
                    if (res->status != 400) {
                        fail(where + ": status " + std::to_string(res->status) + " for bad request (" + b.fragment +
                             "): " + res->body);
                        continue;
                    }
                    json j = json::parse(res->body, nullptr, false);
                    if (!j.is_object() || !j.contains("error") ||
                        j["error"].get<std::string>().find(b.fragment) == std::string::npos)
                        fail(where + ": 400 without '" + b.fragment + "': " + res->body);
                    continue;
                }
                const int rows = (kind == 3) ? 1 : 2;
                const Inputs r = randomInputs(rng, rows, shape, kind == 1);
                const std::vector<std::uint16_t> expected = oracleOut(shape, weights, silu, r);
                std::vector<std::uint16_t> got;
                ++valid;
                if (kind == 2) {  // safetensors in and out
                    auto res = cli.Post("/v1/moe", safetensorsBody(r, shape), "application/octet-stream");
                    if (!res || res->status != 200) {
                        fail(where + ": binary request failed: " + (res ? res->body : "no answer"));
                        continue;
                    }
                    try {
                        const auto t = zp::sched::parseSafetensors(
                            std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(res->body.data()),
                                                          res->body.size()),
                            "answer");
                        const std::int64_t mh[] = {rows, shape.hidden};
                        got = zp::sched::tensorValues<std::uint16_t>(zp::sched::findTensor(t, "out", "answer"),
                                                                     zp::sched::DType::BF16, mh, "out");
                    } catch (const std::exception& e) {
                        fail(where + ": bad safetensors answer: " + e.what());
                        continue;
                    }
                } else {
                    json req = {{"topk_ids", rowsJson(r.in.topkIds, rows, shape.topK)},
                                {"topk_weights", rowsJson(r.in.topkWeights, rows, shape.topK)}};
                    if (kind == 1)
                        req["hidden"] = rowsJson(r.hiddenDoubles, rows, shape.hidden);
                    else
                        req["hidden_bf16"] = rowsJson(r.in.hidden, rows, shape.hidden);
                    if (kind == 3) req["timings"] = true;
                    auto res = cli.Post("/v1/moe", req.dump(), "application/json");
                    if (!res || res->status != 200) {
                        fail(where + ": JSON request failed: " + (res ? res->body : "no answer"));
                        continue;
                    }
                    const json j = json::parse(res->body, nullptr, false);
                    if (!j.is_object() || j.value("rows", 0) != rows || !j.contains("out_bf16") || !j.contains("out")) {
                        fail(where + ": malformed answer: " + res->body.substr(0, 200));
                        continue;
                    }
                    for (const auto& row : j["out_bf16"])
                        for (const auto& x : row) got.push_back(x.get<std::uint16_t>());
                    // `out` floats are the same values widened (null where not finite).
                    for (int m = 0; m < rows && got.size() == expected.size(); ++m)
                        for (int h = 0; h < shape.hidden; ++h) {
                            const json& f = j["out"][m][h];
                            const float want = zp::oracle::f32FromBf16(got[std::size_t(m) * shape.hidden + h]);
                            if (std::isfinite(want) ? (!f.is_number() || f.get<float>() != want) : !f.is_null()) {
                                fail(where + ": out[" + std::to_string(m) + "][" + std::to_string(h) +
                                     "] = " + f.dump() + " is not out_bf16 widened");
                                m = rows;
                                break;
                            }
                        }
                    if (kind == 3 && (!j.contains("timings") || j["timings"].size() != 6 ||
                                      j["timings"][0].value("kernel", "") != "route_compact"))
                        fail(where +
                             ": timings missing or not the 6 baseline launches: " + j.value("timings", json()).dump());
                }
                if (got != expected) {
                    std::size_t first = 0;
                    while (first < got.size() && first < expected.size() && got[first] == expected[first]) ++first;
                    fail(where + ": out differs from the host oracle (" + std::to_string(got.size()) + " vs " +
                         std::to_string(expected.size()) + " values, first difference at " + std::to_string(first) +
                         ")");
                }
            }
        });
    for (auto& th : threads) th.join();
    const auto loaded = Clock::now();

    for (const auto& f : failures) ADD_FAILURE() << f;
    EXPECT_EQ(valid + invalid, kThreads * kRequestsPerThread);
    EXPECT_GT(invalid.load(), 0);

    httplib::Client cli("127.0.0.1", server.port());
    // An unknown media type is refused, not guessed.
    auto wrongType = cli.Post("/v1/moe", "hidden=1", "application/x-www-form-urlencoded");
    ASSERT_TRUE(wrongType);
    EXPECT_EQ(wrongType->status, 415);

    auto health = cli.Get("/healthz");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    const json h = json::parse(health->body, nullptr, false);
    EXPECT_EQ(h.value("status", ""), "ok");
    EXPECT_EQ(h["shape"].value("experts", 0), 48);
    EXPECT_EQ(h["device"].value("driver", ""), "zecl");

    auto metrics = cli.Get("/metrics");
    ASSERT_TRUE(metrics);
    EXPECT_EQ(metrics->status, 200);
    const std::string& m = metrics->body;
    EXPECT_NE(m.find("moe_requests_total{code=\"200\"} " + std::to_string(valid.load()) + "\n"), std::string::npos)
        << m;
    EXPECT_NE(m.find("moe_requests_total{code=\"400\"} " + std::to_string(invalid.load()) + "\n"), std::string::npos)
        << m;
    EXPECT_NE(m.find("moe_requests_total{code=\"415\"} 1\n"), std::string::npos) << m;
    EXPECT_NE(m.find("moe_request_errors_total " + std::to_string(invalid.load() + 1) + "\n"), std::string::npos) << m;
    for (const char* q : {"0.5", "0.95", "0.99"}) {
        const std::regex line(std::string("moe_request_duration_seconds\\{quantile=\"") + q + "\"\\} ([0-9.eE+-]+)\n");
        std::smatch match;
        ASSERT_TRUE(std::regex_search(m, match, line)) << "no p" << q << " in\n" << m;
        EXPECT_GT(std::stod(match[1]), 0.0);
    }

    // /shutdown is off unless --enable-shutdown; SIGTERM stops the server cleanly.
    auto shutdown = cli.Post("/shutdown", "", "application/json");
    ASSERT_TRUE(shutdown);
    EXPECT_EQ(shutdown->status, 404);
    EXPECT_EQ(server.terminate(std::chrono::seconds(30)), 0) << server.log();
    EXPECT_NE(server.log().find("stopped after"), std::string::npos) << server.log();

    const auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
    std::printf("start %.1f s, %d requests on %d threads %.1f s, total %.1f s\n", secs(started, listening),
                kThreads * kRequestsPerThread, kThreads, secs(listening, loaded), secs(started, Clock::now()));
}
