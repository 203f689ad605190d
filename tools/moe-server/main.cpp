// moe-server: an example HTTP server that embeds the zeprobe facade. One MoE layer (this card's
// experts) is loaded at start; POST /v1/moe runs one decode step on it.
//
//   moe-server [--config FILE] [--set key=value]... [--seed N | --weights FILE [--prefix P]]
//              [--device SPEC] [--variant NAME] [--host 127.0.0.1] [--port 8080] [--threads 4]
//
// The routes, their bodies and errors are docs/server.md and docs/openapi.json (served at
// GET /openapi.json; the server refuses to start when its routes and that document differ):
//   POST /v1/moe                one decode step, JSON or safetensors in and out
//   GET /health, GET /healthz   {"status": "ok", device, variant, shape}
//   GET /metrics                Prometheus text (requests, latency, device time, in-flight gauges,
//                               moe_server_build_info)
//   POST /shutdown              only with --enable-shutdown; SIGTERM / SIGINT stop the server too
// Every error answer has a JSON body {"error", "code"}, whatever produced it (httplib's own
// 400/413/414 included); a path no route has is 404, a method a route does not take 405 with
// Allow. Every answer carries X-Request-Id (the client's when it sent a usable one) and every
// request is one access-log line on stderr.
//
// Concurrency: connections are served by --connections threads (http_guard.hpp: a deadline per
// request, idle keep-alive connections closed, at most --queue connections waiting, 503 beyond);
// a request's device work runs on one Chain of a pool of --threads Chains over one shared Device
// and Layer, so slow clients hold connection threads, never Chains.
//
// Exit codes, as ze-probe's: 0 stopped cleanly, 2 bad usage or input (options, config, weights
// file, a port that cannot be bound, an unwritable --port-file), 3 a device or driver error,
// 1 an internal error.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <cmath>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <zeprobe/zeprobe.hpp>

#include "http_guard.hpp"
#include "moe_service.hpp"
#include "openapi_json.hpp"
#include "zp/cli/cli.hpp"
#include "zp/cli/option_values.hpp"

namespace {

using zp::moeserver::BadRequest;

// Bad usage found by moe-server itself (options that contradict each other): exit 2.
struct UsageError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

bool isLoopback(const std::string& host) {
    return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

constexpr int kExitOk = 0, kExitInternal = 1, kExitBadInput = 2;

constexpr const char* kRequestIdHeader = "X-Request-Id";

// "a1b2c3d4-000001": a random prefix per process, then a count.
std::string newRequestId() {
    static const std::uint32_t prefix = std::random_device{}();
    static std::atomic<std::uint64_t> count{0};
    return fmt::format("{:08x}-{:06x}", prefix, ++count);
}

// The client's X-Request-Id when it is 1 to 128 characters of [A-Za-z0-9._:/+=@-] (UUIDs, W3C
// trace ids and the like): it is echoed in a header and written to the log, so anything else
// (control characters, spaces, quotes, a header too long) is replaced by a generated id.
std::string requestIdOf(const httplib::Request& req) {
    const std::string id = req.get_header_value(kRequestIdHeader);
    const bool ok = !id.empty() && id.size() <= 128 && std::all_of(id.begin(), id.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("._:/+=@-", c) != nullptr;
    });
    return ok ? id : newRequestId();
}

// A request's path or method as the log and an error message show it: bytes outside printable
// ASCII, spaces and '%' as %XX (a decoded path may hold a newline).
std::string printable(const std::string& s) {
    std::string o;
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u >= 0x7F || c == '%' || c == '"')
            o += fmt::format("%{:02X}", u);
        else
            o += c;
    }
    return o;
}

// One access-log line per request on stderr, logfmt, written with one call (lines of
// concurrent requests never interleave).
void accessLog(const std::string& id, const std::string& remote, const std::string& method, const std::string& path,
               int status, std::size_t bytes, double seconds) {
    const std::string line = fmt::format(
        "moe-server: access id={} remote={} method={} path={} status={} bytes={} ms={:.3f}\n", printable(id), remote,
        printable(method), path == "-" ? path : printable(path), status, bytes, seconds * 1e3);
    std::fwrite(line.data(), 1, line.size(), stderr);
}

// Whether the request carries a body: a Content-Length or a Transfer-Encoding (RFC 9112 §6.3:
// without either, a request's body is empty).
bool hasBody(const httplib::Request& req) {
    return req.has_header("Content-Length") || req.has_header("Transfer-Encoding");
}

// What is wrong with a request's Content-Length, before any of its body is read: {400, why} for
// one that is not a decimal number ("12abc", "0x10", "-5") or two that differ, {413, why} for one
// above `maxBody` (httplib would read and drop that many bytes first, holding a thread for the
// whole request timeout); {0, ""} when it is fine or there is none.
std::pair<int, std::string> badContentLength(const httplib::Request& req, std::size_t maxBody) {
    const std::size_t n = req.get_header_value_count("Content-Length");
    if (n == 0) return {0, ""};
    const std::string first = req.get_header_value("Content-Length");
    for (std::size_t i = 0; i < n; ++i) {
        const std::string value = req.get_header_value("Content-Length", i);
        if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos)
            return {400, "Content-Length '" + printable(value) + "' is not a decimal number of bytes"};
        if (value != first)
            return {400, "Content-Length given twice with different values (" + printable(first) + " and " +
                             printable(value) + ")"};
    }
    std::uint64_t length = 0;
    const auto [end, ec] = std::from_chars(first.data(), first.data() + first.size(), length);
    if (ec == std::errc::result_out_of_range || length > maxBody)
        return {413, fmt::format("Content-Length {} is larger than --max-body = {} bytes", first, maxBody)};
    return {0, ""};
}

// A Transfer-Encoding other than exactly "chunked" (any case): httplib reads only that one, and
// would read any other body until the client closes. "" when there is none or it is chunked.
std::string unreadableTransferEncoding(const httplib::Request& req) {
    if (!req.has_header("Transfer-Encoding")) return "";
    const std::string te = req.get_header_value("Transfer-Encoding");
    std::string lower = te;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return lower == "chunked" ? "" : te.empty() ? std::string("(empty)") : te;
}

// moe_server_build_info's labels from versionText ("0.1.0 (git v0.1-3-gabc), contract 1").
std::vector<std::pair<std::string, std::string>> buildInfo(const std::string& versionText, const std::string& device,
                                                           const std::string& driver, const std::string& variant) {
    std::string version = versionText, git = "unknown", contract = "unknown";
    if (const auto open = versionText.find(" (git "); open != std::string::npos) {
        version = versionText.substr(0, open);
        const auto close = versionText.find(')', open);
        git = versionText.substr(open + 6, close == std::string::npos ? std::string::npos : close - open - 6);
    }
    if (const auto c = versionText.rfind("contract "); c != std::string::npos) contract = versionText.substr(c + 9);
    return {{"version", version}, {"git", git},       {"contract", contract},
            {"device", device},   {"driver", driver}, {"variant", variant}};
}

// The server's routes: (method, path), in the order registered.
class Routes {
public:
    void add(std::string method, std::string path) { routes_.emplace_back(std::move(method), std::move(path)); }

    std::vector<std::string> methodsOf(const std::string& path) const {
        std::vector<std::string> m;
        for (const auto& [method, p] : routes_)
            if (p == path) m.push_back(method);
        return m;
    }
    // "GET, HEAD" for a GET route (httplib answers HEAD from it), POST as it is.
    static std::string allowHeader(const std::vector<std::string>& methods) {
        std::string s;
        for (const auto& m : methods) s += (s.empty() ? "" : ", ") + m + (m == "GET" ? ", HEAD" : "");
        return s;
    }
    std::string list() const {
        std::string s;
        for (const auto& [method, p] : routes_) s += (s.empty() ? "" : ", ") + method + " " + p;
        return s;
    }
    // "" when the routes are exactly the OpenAPI document's operations (those marked
    // x-moe-server-option: --enable-shutdown only with it); else what differs.
    std::string differenceFrom(const nlohmann::json& openApi, bool shutdownEnabled) const {
        std::set<std::pair<std::string, std::string>> documented, served(routes_.begin(), routes_.end());
        for (const auto& [path, item] : openApi.at("paths").items())
            for (const auto& [method, op] : item.items()) {
                if (op.value("x-moe-server-option", "") == "--enable-shutdown" && !shutdownEnabled) continue;
                std::string upper = method;
                for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
                documented.emplace(upper, path);
            }
        std::string out;
        for (const auto& r : served)
            if (!documented.count(r)) out += " served, not documented: " + r.first + " " + r.second + ";";
        for (const auto& r : documented)
            if (!served.count(r)) out += " documented, not served: " + r.first + " " + r.second + ";";
        return out;
    }

private:
    std::vector<std::pair<std::string, std::string>> routes_;
};

struct Options {
    std::string config;
    std::vector<std::string> sets;
    std::optional<std::string> seedText;
    std::optional<std::uint64_t> seed;
    std::string weights;
    std::optional<std::string> prefix;
    std::string device;
    std::string variant = "baseline";
    std::string kernelTuning;
    std::string host = "127.0.0.1";
    std::string portFile;
    // The numbers as given, read strictly by strictNumbers() below (CLI11 would read "010" as 8,
    // "0x10" as 16 and take "nan" through every range check).
    std::string portText = "8080", threadsText = "4", connectionsText = "32", queueText = "64",
                keepAliveMaxText = "100", windowText = "1024", maxBodyText = std::to_string(64u << 20);
    std::string requestTimeoutText = "5", writeTimeoutText = "5", keepAliveTimeoutText = "2";
    int port = 8080;
    int threads = 4;
    std::size_t window = 1024;
    std::size_t maxBody = 64u << 20;
    int connections = 32, queue = 64, keepAliveMax = 100;
    double requestTimeout = 5, writeTimeout = 5, keepAliveTimeout = 2;
    bool enableShutdown = false;
};

// The numeric options of `o`, from their text: decimal integers and finite decimal numbers in
// their ranges, else zp::cli::OptionError naming the option and value.
void strictNumbers(Options& o) {
    using zp::cli::parseCountOption;
    using zp::cli::parseDecimalOption;
    if (o.seedText) o.seed = zp::cli::parseUnsignedOption(*o.seedText, "--seed", 0, UINT64_MAX);
    o.port = parseCountOption(o.portText, "--port", 0, 65535);
    o.threads = parseCountOption(o.threadsText, "--threads", 1, 256);
    o.connections = parseCountOption(o.connectionsText, "--connections", 1, 4096);
    o.queue = parseCountOption(o.queueText, "--queue", 0, 1 << 20);
    o.keepAliveMax = parseCountOption(o.keepAliveMaxText, "--keep-alive-max", 1, 1 << 20);
    o.window = std::size_t(zp::cli::parseUnsignedOption(o.windowText, "--latency-window", 1, 1u << 24));
    o.maxBody = std::size_t(zp::cli::parseUnsignedOption(o.maxBodyText, "--max-body", 1, std::uint64_t(1) << 32));
    o.requestTimeout = parseDecimalOption(o.requestTimeoutText, "--request-timeout", 0.001, 3600);
    o.writeTimeout = parseDecimalOption(o.writeTimeoutText, "--write-timeout", 0.001, 3600);
    o.keepAliveTimeout = parseDecimalOption(o.keepAliveTimeoutText, "--keep-alive-timeout", 0.001, 3600);
}

// README "Exit codes": 2 for what the user gave (options, config, weights file), 3 for the
// device or driver, 1 for anything else (a bug: internal).
int exitCodeOf(zeprobe::ErrorCode code) {
    switch (code) {
        case zeprobe::ErrorCode::invalid_argument:
        case zeprobe::ErrorCode::not_found:
        case zeprobe::ErrorCode::io: return 2;
        case zeprobe::ErrorCode::device:
        case zeprobe::ErrorCode::kernel_build:
        case zeprobe::ErrorCode::unsupported:
        case zeprobe::ErrorCode::out_of_memory: return 3;
        case zeprobe::ErrorCode::internal: return 1;
    }
    return 1;
}

// The command line into `o`. Returns the exit code when the process ends here (--help,
// --version, bad options), else -1.
int parseCommandLine(Options& o, int argc, char** argv) {
    CLI::App app{
        "moe-server: an example HTTP server embedding the ze-probe MoE chain (zeprobe facade). Serves POST "
        "/v1/moe (JSON or safetensors), GET /health (/healthz), GET /metrics and GET /openapi.json (docs/server.md); "
        "no authentication, no TLS."};
    zp::cli::configureApp(app, "moe-server", zeprobe::contractVersion(),
                          {"moe-server --config configs/deepseek-v4-flash.yaml --port 8080",
                           "moe-server --set hidden=128 --set intermediate=64 --set experts=48 --port 0 --port-file p",
                           "moe-server --weights layer.safetensors --prefix model.layers.3.mlp.experts. --threads 4"});
    app.add_option("--config", o.config, "model shape YAML (configs/*.yaml)");
    app.add_option("--set", o.sets, "override one config key, e.g. --set hidden=128 (repeatable)");
    app.add_option("--seed", o.seedText, "random weights from this seed (default: the config's seed)");
    app.add_option("--weights", o.weights, "weights safetensors file (CONTRACT §3); default: random weights");
    app.add_option("--prefix", o.prefix, "tensor name prefix in --weights (default: the config's weights.prefix)");
    app.add_option("--device", o.device, "\"\" (first Intel GPU, else first zecl device), intel, zecl or an index");
    app.add_option("--variant", o.variant, "chain variant")->capture_default_str();
    app.add_option("--kernel-tuning", o.kernelTuning, "kernel build knobs (zecl devices), e.g. cols_per_wg=16");
    app.add_option("--host", o.host, "address to bind (a non-loopback address exposes the server: no auth, no TLS)")
        ->capture_default_str();
    app.add_option("--port", o.portText, "TCP port, 0 to 65535; 0 = any free port (see --port-file)")
        ->capture_default_str();
    app.add_option("--port-file", o.portFile, "write the bound port to this file once listening");
    app.add_option("--threads", o.threadsText, "chains (requests on the device at once), 1 to 256")
        ->capture_default_str();
    app.add_option("--connections", o.connectionsText,
                   "connection threads (slow clients hold these, not chains), 1 to 4096")
        ->capture_default_str();
    app.add_option("--queue", o.queueText, "accepted connections waiting for a thread, 0 to 1048576; 503 beyond")
        ->capture_default_str();
    app.add_option("--request-timeout", o.requestTimeoutText,
                   "seconds for a whole request (line, headers, body) to arrive after its first byte, 0.001 to 3600")
        ->capture_default_str();
    app.add_option("--write-timeout", o.writeTimeoutText,
                   "seconds an answer may wait for a client that does not read, 0.001 to 3600")
        ->capture_default_str();
    app.add_option("--keep-alive-timeout", o.keepAliveTimeoutText,
                   "seconds an idle keep-alive connection is kept, 0.001 to 3600")
        ->capture_default_str();
    app.add_option("--keep-alive-max", o.keepAliveMaxText, "requests per connection, 1 to 1048576")
        ->capture_default_str();
    app.add_option("--latency-window", o.windowText, "requests in the latency quantile window, 1 to 16777216")
        ->capture_default_str();
    app.add_option("--max-body", o.maxBodyText,
                   "largest request body in bytes, 1 to 4294967296 (413 above, chunked bodies too)")
        ->capture_default_str();
    app.add_flag("--enable-shutdown", o.enableShutdown, "serve POST /shutdown (for tests)");
    if (const int rc = zp::cli::parse(app, "moe-server", argc, argv); rc >= 0) return rc;
    try {
        // --device "" (the first device) and --prefix "" (names without a prefix) mean something.
        zp::cli::refuseEmptyValues(
            app, {"--config", "--set", "--seed", "--weights", "--variant", "--kernel-tuning", "--host", "--port-file"});
        strictNumbers(o);
        if (o.seed && !o.weights.empty()) throw UsageError("give --seed or --weights, not both");
        if (o.prefix && o.weights.empty())
            throw UsageError("--prefix names tensors in --weights: not without --weights");
        if (!o.portFile.empty()) {
            // The port file is written over: never over a file the server reads.
            for (const auto& [input, option] : {std::pair{&o.weights, "--weights"}, std::pair{&o.config, "--config"}})
                if (!input->empty() && zeprobe::sameFile(o.portFile, *input))
                    throw UsageError("--port-file " + o.portFile + " is the same file as " + option + " " + *input +
                                     ": the port would be written over it");
            zeprobe::checkOutputFile(o.portFile, "--port-file");
            // Unlike ze-probe's --out, a port file's directory is not created: a typo fails here.
            const std::filesystem::path dir = std::filesystem::path(o.portFile).parent_path();
            if (!dir.empty() && !std::filesystem::is_directory(dir))
                throw UsageError("--port-file " + o.portFile + ": directory " + dir.string() + " does not exist");
        }
        if (!o.portFile.empty() && o.port != 0)
            std::cerr << "moe-server: note: --port-file with a fixed --port " << o.port << "\n";
    } catch (const std::invalid_argument& e) {  // UsageError, zp::cli::OptionError
        std::cerr << "moe-server: error: " << e.what() << "\n";
        return kExitBadInput;
    } catch (const zeprobe::Error& e) {
        std::cerr << "moe-server: error: " << e.what() << "\n";
        return kExitBadInput;
    }

    return -1;
}

// The connection limits of the options (http_guard.hpp).
zp::moeserver::HttpLimits httpLimits(const Options& o) {
    auto seconds = [](double s) { return std::chrono::milliseconds(std::max<long long>(1, std::llround(s * 1000))); };
    zp::moeserver::HttpLimits limits;
    limits.connections = o.connections;
    limits.queue = std::size_t(o.queue);
    limits.requestTimeout = seconds(o.requestTimeout);
    limits.writeTimeout = seconds(o.writeTimeout);
    limits.keepAliveTimeout = seconds(o.keepAliveTimeout);
    limits.keepAliveMax = o.keepAliveMax;
    limits.maxRequestBytes = o.maxBody + (std::size_t(1) << 16);  // headers: httplib caps a line at 8 KiB
    return limits;
}

// What an error answer made by httplib itself (a request it could not parse) says: the class of
// problem, as far as the half-parsed request shows it.
std::string httplibErrorMessage(const httplib::Request& req, int status) {
    static const std::set<std::string> methods = {"GET",     "HEAD",    "POST",  "PUT",  "DELETE",
                                                  "CONNECT", "OPTIONS", "TRACE", "PATCH"};
    if (status == 414) return "request line longer than 8192 bytes (URI too long)";
    if (status == 413) return "request body larger than --max-body";
    if (status != 400) return fmt::format("HTTP status {}", status);
    if (!req.method.empty() && !methods.count(req.method))
        return "unknown method '" + printable(req.method) + "' in the request line (expected 'METHOD /path HTTP/1.1')";
    if (!req.version.empty() && req.version != "HTTP/1.1" && req.version != "HTTP/1.0")
        return "HTTP version '" + printable(req.version) + "' is not supported (HTTP/1.0 and HTTP/1.1 only)";
    return "request line or headers malformed or too large (expected 'METHOD /path HTTP/1.1', header lines of at "
           "most 8192 bytes)";
}

// The handlers of what is not a route: a refused connection's 503 counted and logged, the request
// id and an access-log line for every answer, a JSON body for every error (httplib's own
// 400/413/414 too), the /v1/moe counts. `metrics` must outlive the server.
void setCommonHandlers(zp::moeserver::GuardedServer& server, zp::moeserver::Metrics& metrics, const Options& o) {
    server.openConnections = &metrics.connectionsOpen;
    server.onRejected = [counts = &metrics] {
        counts->recordRejectedConnection();
        const std::string id = newRequestId();
        accessLog(id, "-", "-", "-", 503, 0, 0);
        return id;
    };
    server.set_payload_max_length(o.maxBody);  // a Content-Length above it: 413 before reading
    // Every error answer carries a JSON body, also those httplib makes itself (400, 404, 413, 414).
    server.set_keep_alive_timeout(std::max<time_t>(1, time_t(std::ceil(o.keepAliveTimeout))));  // the header it sends
    server.set_keep_alive_max_count(std::size_t(o.keepAliveMax));
    server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
        // Answers made before routing (httplib's own 400/413/414) get their request id here.
        if (!res.has_header(kRequestIdHeader)) res.set_header(kRequestIdHeader, requestIdOf(req));
        if (!res.body.empty()) return;
        // httplib's own error (a request it could not parse): the stream's state is unknown.
        zp::moeserver::GuardedServer::closeAfterResponse();
        const std::string code = res.status == 413   ? "payload_too_large"
                                 : res.status == 404 ? "not_found"
                                 : res.status == 503 ? "unavailable"
                                 : res.status < 500  ? "invalid_argument"
                                                     : "internal";
        res.set_content(zp::moeserver::jsonError(httplibErrorMessage(req, res.status), code), "application/json");
    });
    server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
            std::rethrow_exception(ep);
        } catch (const std::exception& e) {
            what = e.what();
        } catch (...) {}
        res.status = 500;
        res.set_content(zp::moeserver::jsonError(what, "internal"), "application/json");
    });
    // Called once the answer is written, for every answer httplib writes (its own 400/413 too):
    // the access log line, and the counts of /v1/moe.
    server.set_logger([counts = &metrics](const httplib::Request& req, const httplib::Response& res) {
        const double s = std::chrono::duration<double>(zp::moeserver::GuardedServer::Clock::now() -
                                                       zp::moeserver::GuardedServer::requestStart())
                             .count();
        const std::string id = res.get_header_value(kRequestIdHeader);
        accessLog(id.empty() ? "-" : id,
                  req.remote_addr.empty() ? "-" : req.remote_addr + ":" + std::to_string(req.remote_port),
                  req.method.empty() ? "-" : req.method, req.path.empty() ? "-" : req.path, res.status, res.body.size(),
                  s);
        if (req.path == "/v1/moe" && req.method == "POST") counts->record(res.status, s);
    });
}

// What POST /v1/moe runs on.
struct MoeRoute {
    zp::moeserver::Metrics& metrics;
    zp::moeserver::ChainPool& chains;
    zeprobe::Shape shape;
    std::size_t maxBody;
};

// POST /v1/moe: reads the body (capped whatever the transfer encoding), runs one decode step on
// a chain of the pool and answers in the request's format.
void serveMoe(const MoeRoute& route, const httplib::Request& req, httplib::Response& res,
              const httplib::ContentReader& reader) {
    zp::moeserver::Metrics& metrics = route.metrics;
    const zeprobe::Shape& shape = route.shape;
    const std::size_t maxBody = route.maxBody;
    const zp::moeserver::Gauge inFlight(metrics.requestsInFlight);
    const std::string type = req.get_header_value("Content-Type");
    const bool binary = type.rfind("application/octet-stream", 0) == 0;
    auto fail = [&](int status, const std::string& message, const std::string& code) {
        res.status = status;
        res.set_content(zp::moeserver::jsonError(message, code), "application/json");
    };
    // The body is read here, capped whatever the transfer encoding (httplib caps a
    // Content-Length only: a chunked body would be read whole). A request with neither
    // Content-Length nor chunked encoding has no body (RFC 9112 §6.3): httplib would read
    // until the client closes.
    if (const std::string te = unreadableTransferEncoding(req); !te.empty()) {
        zp::moeserver::GuardedServer::closeAfterResponse();  // the body is never read
        fail(400,
             "Transfer-Encoding '" + te +
                 "' is not supported: send the body with a Content-Length or Transfer-Encoding: chunked",
             "invalid_argument");
        return;
    }
    std::string body;
    // The announced length at once (at most --max-body, checked before routing): no copies
    // while a large body grows.
    if (req.has_header("Content-Length") && !req.has_header("Transfer-Encoding"))
        body.reserve(std::min<std::uint64_t>(req.get_header_value<std::uint64_t>("Content-Length"), maxBody));
    bool tooLarge = false;
    const bool read = !hasBody(req) || reader([&](const char* data, std::size_t n) {
        if (body.size() + n > maxBody) {
            tooLarge = true;
            return false;
        }
        body.append(data, n);
        return true;
    });
    if (!read) {
        zp::moeserver::GuardedServer::closeAfterResponse();  // the rest of the body is never read
        if (tooLarge || res.status == 413)
            fail(413, fmt::format("request body larger than --max-body = {} bytes", maxBody), "payload_too_large");
        else
            fail(400, "the request body could not be read (malformed chunked encoding or the client stopped)",
                 "invalid_argument");
        return;
    }
    try {
        if (body.empty()) {
            fail(400,
                 "the request body is empty: POST /v1/moe needs a JSON object with 'hidden_bf16' or 'hidden', "
                 "'topk_ids' and 'topk_weights' (Content-Type: application/json), or a safetensors file with "
                 "hidden, topk_ids and topk_weights (Content-Type: application/octet-stream); docs/server.md",
                 "invalid_argument");
        } else if (!binary && type.rfind("application/json", 0) != 0) {
            fail(415,
                 "Content-Type must be application/json or application/octet-stream (safetensors), got '" + type + "'",
                 "unsupported_media_type");
        } else {
            const zp::moeserver::MoeRequest r = binary ? zp::moeserver::parseSafetensorsRequest(body, shape)
                                                       : zp::moeserver::parseJsonRequest(body, shape);
            std::vector<std::uint16_t> out(std::size_t(r.rows) * shape.hidden);
            std::vector<zeprobe::KernelTiming> timings;
            {
                auto chain = route.chains.acquire();
                const zp::moeserver::Gauge busy(metrics.chainsInUse);
                const auto deviceStart = std::chrono::steady_clock::now();
                chain->forward(r.hidden, r.topkIds, r.topkWeights, out);
                metrics.recordDevice(
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - deviceStart).count());
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
        fail(e.code() == zeprobe::ErrorCode::invalid_argument ? 400 : 500, e.what(), zeprobe::errorCodeName(e.code()));
    } catch (const std::exception& e) {
        fail(500, e.what(), "internal");
    }
}

// GET /health (/healthz), GET /metrics, GET /openapi.json and, with --enable-shutdown, POST
// /shutdown; each registered with its routes.add. The data must outlive the server.
void addInfoRoutes(zp::moeserver::GuardedServer& server, Routes& routes, const nlohmann::json& health,
                   zp::moeserver::Metrics& metrics, const std::string& openApiText, bool enableShutdown) {
    for (const char* path : {"/health", "/healthz"}) {
        routes.add("GET", path);
        server.Get(path, [json = &health](const httplib::Request&, httplib::Response& res) {
            res.set_content(json->dump(), "application/json");
        });
    }
    routes.add("GET", "/metrics");
    server.Get("/metrics", [counts = &metrics](const httplib::Request&, httplib::Response& res) {
        res.set_content(counts->prometheus(), "text/plain; version=0.0.4; charset=utf-8");
    });
    routes.add("GET", "/openapi.json");
    server.Get("/openapi.json", [text = &openApiText](const httplib::Request&, httplib::Response& res) {
        res.set_content(*text, "application/json");
    });
    if (enableShutdown) {
        routes.add("POST", "/shutdown");
        // A content-reader handler: httplib would read a body (until the client closes, without
        // Content-Length) before calling a plain one. The body is never read: the connection ends.
        server.Post("/shutdown", [](const httplib::Request&, httplib::Response& res, const httplib::ContentReader&) {
            zp::moeserver::GuardedServer::closeAfterResponse();
            res.set_content("{\"status\":\"stopping\"}", "application/json");
            kill(getpid(), SIGTERM);  // taken by the signal thread below, after this answer is sent
        });
    }
}

// Every request first: its id, then 404 for a path no route has and 405 (with Allow) for a
// method a path does not take, before httplib would read a body for them. `routes` must outlive
// the server.
void refuseUnroutedRequests(zp::moeserver::GuardedServer& server, const Routes& routes, std::size_t maxBody) {
    server.set_pre_routing_handler([&table = routes, maxBody](const httplib::Request& req, httplib::Response& res) {
        res.set_header(kRequestIdHeader, requestIdOf(req));
        const std::vector<std::string> methods = table.methodsOf(req.path);
        const bool allowed =
            std::find(methods.begin(), methods.end(), req.method) != methods.end() ||
            (req.method == "HEAD" && std::find(methods.begin(), methods.end(), "GET") != methods.end());
        // A GET with a body: httplib never reads it, so it must not be taken for the next request.
        if (allowed && req.method != "POST" && hasBody(req)) zp::moeserver::GuardedServer::closeAfterResponse();
        if (allowed) {
            const auto [status, why] = badContentLength(req, maxBody);
            if (status == 0) return httplib::Server::HandlerResponse::Unhandled;
            zp::moeserver::GuardedServer::closeAfterResponse();  // the body is never read
            res.status = status;
            res.set_content(zp::moeserver::jsonError(why, status == 413 ? "payload_too_large" : "invalid_argument"),
                            "application/json");
            return httplib::Server::HandlerResponse::Handled;
        }
        if (hasBody(req)) zp::moeserver::GuardedServer::closeAfterResponse();  // its body is never read
        if (methods.empty()) {
            res.status = 404;
            res.set_content(
                zp::moeserver::jsonError(
                    "no route " + printable(req.path) + " (routes: " + table.list() + "; docs/server.md)", "not_found"),
                "application/json");
        } else {
            const std::string allow = Routes::allowHeader(methods);
            res.status = 405;
            res.set_header("Allow", allow);
            res.set_content(zp::moeserver::jsonError(printable(req.method) + " " + printable(req.path) +
                                                         ": method not allowed (Allow: " + allow + ")",
                                                     "method_not_allowed"),
                            "application/json");
        }
        return httplib::Server::HandlerResponse::Handled;
    });
}

// Binds --host:--port, writes --port-file, prints `banner(port)` and serves until POST
// /shutdown, SIGTERM or SIGINT; returns the exit code.
int listenUntilStopped(zp::moeserver::GuardedServer& server, const Options& o, sigset_t stopSignals,
                       const std::function<std::string(int)>& banner, const zp::moeserver::Metrics& metrics) {
    int port = o.port;
    if (port == 0) {
        port = server.bind_to_any_port(o.host);
        if (port < 0) port = 0;
    } else if (!server.bind_to_port(o.host, port)) {
        port = 0;
    }
    if (port != 0) server.widenBacklog(o.connections + o.queue + 64);
    if (port == 0) {
        const bool v6 = o.host.find(':') != std::string::npos;
        std::cerr << "moe-server: error: cannot bind " << (v6 ? "[" + o.host + "]" : o.host) << ":" << o.port << ": "
                  << zp::moeserver::GuardedServer::bindFailure(o.host, o.port) << "\n";
        return kExitBadInput;
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
    if (!o.portFile.empty()) {
        try {
            // Renamed into place: a reader never sees a partial port number.
            zeprobe::writeFileAtomically(o.portFile, std::to_string(port) + "\n", "--port-file");
        } catch (const zeprobe::Error& e) {
            std::cerr << "moe-server: " << e.what() << "\n";
            server.stop();
            listening = false;
            kill(getpid(), SIGTERM);
            signalThread.join();
            return kExitBadInput;
        }
    }
    std::cout << banner(port) << std::endl;

    const bool ok = server.listen_after_bind();
    listening = false;
    kill(getpid(), SIGTERM);  // wakes the signal thread when listening ended on its own
    signalThread.join();
    std::cout << fmt::format("moe-server: stopped after {} requests", metrics.requests()) << std::endl;
    return ok ? kExitOk : kExitInternal;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    if (const int rc = parseCommandLine(o, argc, argv); rc >= 0) return rc;

    // SIGINT/SIGTERM are taken by one thread (sigwait) that stops the server: block them before
    // any thread exists (the OpenCL and Level Zero runtimes start their own) so none of those
    // threads receives them.
    sigset_t stopSignals;
    sigemptyset(&stopSignals);
    sigaddset(&stopSignals, SIGINT);
    sigaddset(&stopSignals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);
    signal(SIGPIPE, SIG_IGN);

    zeprobe::Config cfg;
    try {
        cfg = zeprobe::loadConfig(o.config, o.sets);
    } catch (const zeprobe::Error& e) {
        std::cerr << "moe-server: error: " << e.what() << "\n";
        return exitCodeOf(e.code());
    }
    const zeprobe::Shape shape = cfg.shape;
    if (!isLoopback(o.host))
        std::cerr << "moe-server: warning: --host " << o.host
                  << " is not a loopback address; the server has no authentication and no TLS\n";

    std::unique_ptr<zeprobe::Device> device;
    std::unique_ptr<zeprobe::Layer> layer;
    std::unique_ptr<zp::moeserver::ChainPool> chains;
    try {
        device = std::make_unique<zeprobe::Device>(zeprobe::DeviceOptions{
            .device = o.device, .configureLoader = true, .zeclPath = {}, .kernelTuning = o.kernelTuning});
        // A shape the device cannot hold is refused by the Layer before any allocation
        // (invalid_argument: exit 2, the user's to fix).
        layer = std::make_unique<zeprobe::Layer>(
            o.weights.empty()
                ? zeprobe::Layer::random(*device, shape, o.seed.value_or(cfg.seed))
                : zeprobe::Layer::fromSafetensors(*device, shape, o.weights, o.prefix.value_or(cfg.weightsPrefix)));
        chains = std::make_unique<zp::moeserver::ChainPool>(*layer, o.variant, o.threads);
    } catch (const zeprobe::Error& e) {
        std::cerr << "moe-server: error: " << e.what() << " [" << zeprobe::errorCodeName(e.code()) << "]\n";
        return exitCodeOf(e.code());
    }
    const std::string variant = chains->size() > 0 ? std::string((*chains->acquire()).variant()) : o.variant;

    zp::moeserver::Metrics metrics(o.window);
    metrics.chains = chains->size();
    metrics.setBuildInfo(buildInfo(zp::cli::versionText(zeprobe::contractVersion()), device->info().name,
                                   device->info().driver, variant));
    zp::moeserver::GuardedServer server(httpLimits(o));
    setCommonHandlers(server, metrics, o);

    // The routes: each handler is registered with its routes.add (the table answers 404 / 405 and is
    // checked against the OpenAPI document the server serves, docs/openapi.json).
    Routes routes;
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

    const MoeRoute moe{metrics, *chains, shape, o.maxBody};
    routes.add("POST", "/v1/moe");
    server.Post("/v1/moe", [&moe](const httplib::Request& req, httplib::Response& res,
                                  const httplib::ContentReader& reader) { serveMoe(moe, req, res, reader); });
    const std::string openApiText(reinterpret_cast<const char*>(zp::moeserver::kOpenApiJson),
                                  zp::moeserver::kOpenApiJsonSize);
    addInfoRoutes(server, routes, health, metrics, openApiText, o.enableShutdown);
    std::string mismatch;
    try {
        mismatch = routes.differenceFrom(nlohmann::json::parse(openApiText), o.enableShutdown);
    } catch (const nlohmann::json::exception& e) {
        mismatch = std::string(" not an OpenAPI document: ") + e.what();
    }
    if (!mismatch.empty()) {
        std::cerr << "moe-server: error: internal error: the routes and docs/openapi.json differ: " << mismatch << "\n";
        return kExitInternal;
    }
    refuseUnroutedRequests(server, routes, o.maxBody);

    const auto banner = [&](int port) {
        return fmt::format(
            "moe-server: listening on http://{}:{} (device {} [{}], variant {}, {} chains; "
            "hidden={} intermediate={} experts={} top_k={} rows={} cards={} card={})",
            o.host, port, device->info().name, device->info().driver, variant, chains->size(), shape.hidden,
            shape.intermediate, shape.experts, shape.topK, shape.rows, shape.cards, shape.card);
    };
    return listenUntilStopped(server, o, stopSignals, banner, metrics);
}
