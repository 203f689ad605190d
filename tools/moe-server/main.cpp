// moe-server: an example HTTP server that embeds the zeprobe facade. One MoE layer (this card's
// experts) is loaded at start; POST /v1/moe runs one decode step on it.
//
//   moe-server [--config FILE] [--set key=value]... [--seed N | --weights FILE [--prefix P]]
//              [--device SPEC] [--variant NAME] [--host 127.0.0.1] [--port 8080] [--threads 4]
//
//   POST /v1/moe   JSON  {"hidden_bf16": [[u16..]..] | "hidden": [[number..]..],
//                         "topk_ids": [[int..]..], "topk_weights": [[number..]..], "timings": bool}
//                  → {"rows", "hidden", "out_bf16": [[u16..]..], "out": [[float|null..]..], "timings"?}
//                  binary (Content-Type application/octet-stream): a safetensors body with
//                  hidden BF16 [m,H], topk_ids I32 [m,K], topk_weights F32 [m,K] → safetensors `out` BF16 [m,H]
//                  400 + {"error", "code"} for malformed bodies, wrong shapes, expert ids outside [0, E)
//   GET /healthz   {"status": "ok", device, variant, shape}
//   GET /metrics   Prometheus text: requests by status, errors, latency p50/p95/p99 (sliding window)
//   POST /shutdown only with --enable-shutdown; SIGTERM / SIGINT stop the server cleanly too.
//
// Concurrency: requests run on a pool of --threads worker threads, each request on one Chain
// of a pool of as many Chains, all over one shared Device and Layer.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <zeprobe/zeprobe.hpp>

#include "moe_service.hpp"
#include "zp/probe/config.hpp"

namespace {

using zp::moeserver::BadRequest;

zeprobe::Shape toShape(const zp::oracle::ChainShape& c) {
    zeprobe::Shape s;
    s.hidden = c.hidden;
    s.intermediate = c.intermediate;
    s.experts = c.experts;
    s.topK = c.topK;
    s.rows = c.rows;
    s.cards = c.cards;
    s.card = c.card;
    s.swigluLimit = c.swigluLimit;
    s.swigluAlpha = c.swigluAlpha;
    s.swigluUpBias = c.swigluUpBias;
    s.gateUpLayout = c.layout == zp::oracle::GateUpLayout::Interleaved ? zeprobe::GateUpLayout::interleaved
                                                                       : zeprobe::GateUpLayout::split;
    return s;
}

bool isLoopback(const std::string& host) {
    return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// Written to a temporary name and renamed: a reader never sees a partial port number.
void writePortFile(const std::string& path, int port) {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp);
        f << port << "\n";
    }
    std::filesystem::rename(tmp, path);
}

struct Options {
    std::string config;
    std::vector<std::string> sets;
    std::optional<std::uint64_t> seed;
    std::string weights;
    std::optional<std::string> prefix;
    std::string device;
    std::string variant = "baseline";
    std::string kernelTuning;
    std::string host = "127.0.0.1";
    int port = 8080;
    std::string portFile;
    int threads = 4;
    std::size_t window = 1024;
    std::size_t maxBody = 64u << 20;
    bool enableShutdown = false;
};

}  // namespace

int main(int argc, char** argv) {
    Options o;
    CLI::App app{"moe-server: an example HTTP server embedding the ze-probe MoE chain (zeprobe facade)"};
    app.add_option("--config", o.config, "model shape YAML (configs/*.yaml)")->check(CLI::ExistingFile);
    app.add_option("--set", o.sets, "override one config key, e.g. --set hidden=128 (repeatable)");
    app.add_option("--seed", o.seed, "random weights from this seed (default: the config's seed)");
    app.add_option("--weights", o.weights, "weights safetensors file (CONTRACT §3); default: random weights");
    app.add_option("--prefix", o.prefix, "tensor name prefix in --weights (default: the config's weights.prefix)");
    app.add_option("--device", o.device, "\"\" (first Intel GPU, else first zecl device), intel, zecl or an index");
    app.add_option("--variant", o.variant, "chain variant")->capture_default_str();
    app.add_option("--kernel-tuning", o.kernelTuning, "kernel build knobs (zecl devices), e.g. cols_per_wg=16");
    app.add_option("--host", o.host, "address to bind (a non-loopback address exposes the server: no auth, no TLS)")
        ->capture_default_str();
    app.add_option("--port", o.port, "TCP port; 0 = any free port (see --port-file)")
        ->capture_default_str()
        ->check(CLI::Range(0, 65535));
    app.add_option("--port-file", o.portFile, "write the bound port to this file once listening");
    app.add_option("--threads", o.threads, "worker threads = chains")->capture_default_str()->check(CLI::Range(1, 256));
    app.add_option("--latency-window", o.window, "requests in the latency quantile window")
        ->capture_default_str()
        ->check(CLI::Range(1, 1 << 24));
    app.add_option("--max-body", o.maxBody, "largest request body in bytes (413 above)")->capture_default_str();
    app.add_flag("--enable-shutdown", o.enableShutdown, "serve POST /shutdown (for tests)");
    app.get_formatter()->column_width(34);
    CLI11_PARSE(app, argc, argv);
    if (o.seed && !o.weights.empty()) {
        std::cerr << "moe-server: give --seed or --weights, not both\n";
        return 2;
    }

    // SIGINT/SIGTERM are taken by one thread (sigwait) that stops the server: block them before
    // any thread exists (the OpenCL and Level Zero runtimes start their own) so none of those
    // threads receives them.
    sigset_t stopSignals;
    sigemptyset(&stopSignals);
    sigaddset(&stopSignals, SIGINT);
    sigaddset(&stopSignals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);
    signal(SIGPIPE, SIG_IGN);

    zp::sched::Config cfg;
    try {
        if (!o.config.empty()) cfg = zp::sched::loadConfig(o.config);
        for (const auto& s : o.sets) zp::sched::applySet(cfg, s);
        zp::sched::validate(cfg);
    } catch (const zp::sched::InputError& e) {
        std::cerr << "moe-server: " << e.what() << "\n";
        return 2;
    }
    const zeprobe::Shape shape = toShape(cfg.shape);
    if (!isLoopback(o.host))
        std::cerr << "moe-server: warning: --host " << o.host
                  << " is not a loopback address; the server has no authentication and no TLS\n";

    std::unique_ptr<zeprobe::Device> device;
    std::unique_ptr<zeprobe::Layer> layer;
    std::unique_ptr<zp::moeserver::ChainPool> chains;
    try {
        device = std::make_unique<zeprobe::Device>(zeprobe::DeviceOptions{
            .device = o.device, .configureLoader = true, .zeclPath = {}, .kernelTuning = o.kernelTuning});
        layer = std::make_unique<zeprobe::Layer>(
            o.weights.empty()
                ? zeprobe::Layer::random(*device, shape, o.seed.value_or(cfg.seed))
                : zeprobe::Layer::fromSafetensors(*device, shape, o.weights, o.prefix.value_or(cfg.weightsPrefix)));
        chains = std::make_unique<zp::moeserver::ChainPool>(*layer, o.variant, o.threads);
    } catch (const zeprobe::Error& e) {
        std::cerr << "moe-server: " << e.what() << " [" << zeprobe::errorCodeName(e.code()) << "]\n";
        return e.code() == zeprobe::ErrorCode::invalid_argument || e.code() == zeprobe::ErrorCode::not_found ? 2 : 1;
    }
    const std::string variant = chains->size() > 0 ? std::string((*chains->acquire()).variant()) : o.variant;

    zp::moeserver::Metrics metrics(o.window);
    httplib::Server server;
    const int threads = o.threads;
    server.new_task_queue = [threads] { return new httplib::ThreadPool(std::size_t(threads)); };
    server.set_payload_max_length(o.maxBody);

    const nlohmann::json health = {
        {"status", "ok"},
        {"device",
         {{"name", device->info().name}, {"driver", device->info().driver}, {"kernels", device->info().kernels}}},
        {"variant", variant},
        {"chains", chains->size()},
        {"shape",
         {{"hidden", shape.hidden},
          {"intermediate", shape.intermediate},
          {"experts", shape.experts},
          {"top_k", shape.topK},
          {"rows", shape.rows},
          {"cards", shape.cards},
          {"card", shape.card}}}};

    server.Post("/v1/moe", [&](const httplib::Request& req, httplib::Response& res) {
        const auto start = std::chrono::steady_clock::now();
        const std::string type = req.get_header_value("Content-Type");
        const bool binary = type.rfind("application/octet-stream", 0) == 0;
        auto fail = [&](int status, const std::string& message, const std::string& code) {
            res.status = status;
            res.set_content(zp::moeserver::jsonError(message, code), "application/json");
        };
        try {
            if (!binary && type.rfind("application/json", 0) != 0) {
                fail(415,
                     "Content-Type must be application/json or application/octet-stream (safetensors), got '" + type +
                         "'",
                     "unsupported_media_type");
            } else {
                const zp::moeserver::MoeRequest r = binary ? zp::moeserver::parseSafetensorsRequest(req.body, shape)
                                                           : zp::moeserver::parseJsonRequest(req.body, shape);
                std::vector<std::uint16_t> out(std::size_t(r.rows) * shape.hidden);
                std::vector<zeprobe::KernelTiming> timings;
                {
                    auto chain = chains->acquire();
                    chain->forward(r.hidden, r.topkIds, r.topkWeights, out);
                    if (r.timings) timings = chain->kernelTimings();
                }
                if (binary)
                    res.set_content(zp::moeserver::safetensorsResponse(r, shape, out), "application/octet-stream");
                else
                    res.set_content(zp::moeserver::jsonResponse(r, shape, out, timings), "application/json");
                res.status = 200;
            }
        } catch (const BadRequest& e) {
            fail(400, e.what(), "invalid_argument");
        } catch (const zeprobe::Error& e) {
            fail(e.code() == zeprobe::ErrorCode::invalid_argument ? 400 : 500, e.what(),
                 zeprobe::errorCodeName(e.code()));
        } catch (const std::exception& e) {
            fail(500, e.what(), "internal");
        }
        metrics.record(res.status, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    });
    server.Get("/healthz", [&](const httplib::Request&, httplib::Response& res) {
        res.set_content(health.dump(), "application/json");
    });
    server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
        res.set_content(metrics.prometheus(), "text/plain; version=0.0.4");
    });
    if (o.enableShutdown)
        server.Post("/shutdown", [&](const httplib::Request&, httplib::Response& res) {
            res.set_content("{\"status\":\"stopping\"}", "application/json");
            kill(getpid(), SIGTERM);  // taken by the signal thread below, after this answer is sent
        });

    int port = o.port;
    if (port == 0) {
        port = server.bind_to_any_port(o.host);
        if (port < 0) port = 0;
    } else if (!server.bind_to_port(o.host, port)) {
        port = 0;
    }
    if (port == 0) {
        std::cerr << "moe-server: cannot bind " << o.host << ":" << o.port << "\n";
        return 1;
    }

    std::atomic<bool> listening{true};
    std::thread signalThread([&] {
        int sig = 0;
        sigwait(&stopSignals, &sig);
        // stop() is a no-op until listen_after_bind() has started: repeat until it has returned.
        while (listening.load()) {
            server.stop();
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    });
    if (!o.portFile.empty()) writePortFile(o.portFile, port);
    std::cout << fmt::format(
                     "moe-server: listening on http://{}:{} (device {} [{}], variant {}, {} chains; "
                     "hidden={} intermediate={} experts={} top_k={} rows={} cards={} card={})",
                     o.host, port, device->info().name, device->info().driver, variant, chains->size(), shape.hidden,
                     shape.intermediate, shape.experts, shape.topK, shape.rows, shape.cards, shape.card)
              << std::endl;

    const bool ok = server.listen_after_bind();
    listening = false;
    kill(getpid(), SIGTERM);  // wakes the signal thread when listening ended on its own
    signalThread.join();
    std::cout << fmt::format("moe-server: stopped after {} requests", metrics.requests()) << std::endl;
    return ok ? 0 : 1;
}
