// moe-server's request handling without HTTP: body decoding and encoding, the chain pool and
// the metrics. Everything a bad request can reach throws BadRequest (HTTP 400) or
// zeprobe::Error (invalid_argument → 400, anything else → 500).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <iterator>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <zeprobe/zeprobe.hpp>

namespace zp::moeserver {

struct BadRequest : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// How a JSON answer carries `out` (the request's "out_format", docs/server.md).
enum class OutFormat {
    numbers,     // "numbers" (default): [[float...]...], BF16 widened to f32 (null where not finite)
    bf16Base64,  // "bf16_base64": one base64 string of the [rows, H] BF16 values, little-endian, row-major
};

// One decode step's inputs, flattened row-major; rows in [1, Shape::rows].
struct MoeRequest {
    int rows = 0;
    std::vector<std::uint16_t> hidden;  // [rows, H] BF16 bits
    std::vector<std::int64_t> topkIds;  // [rows, K], as sent (int32 or int64: torch.topk's)
    std::vector<float> topkWeights;     // [rows, K]
    bool timings = false;               // JSON: "timings": true → kernel timings in the answer
    OutFormat outFormat = OutFormat::numbers;
};

// JSON body (Content-Type application/json):
//   {"hidden_bf16": [[u16, ...], ...]  |  "hidden": [[number, ...], ...],   exactly one of them
//    "topk_ids": [[int, ...], ...], "topk_weights": [[number, ...], ...],
//    "timings": bool (optional), "out_format": "numbers" | "bf16_base64" (optional)}
// `hidden` numbers are rounded to BF16 once (RNE) from their double value; a number outside
// BF16's finite range, or a hidden_bf16 pattern of ±Inf or NaN, is refused naming its row and
// column (the chain's contract is over finite inputs); likewise a weight outside f32's finite
// range. Ids are checked against [0, E) by the facade. Unknown keys are rejected (typos would
// otherwise be silent).
MoeRequest parseJsonRequest(std::string_view body, const zeprobe::Shape& shape);
// JSON answer: {"rows": m, "hidden": H, "out_format": ..., "out": ...}: `out` as [[float|null...]...]
// (BF16 widened to f32; NaN and ±Inf, which JSON cannot carry, are null) or, for "bf16_base64",
// one base64 string of the m·H BF16 values (2 bytes each, little-endian, row-major: exact),
// plus "timings": [{"kernel", "ns"}] when asked.
std::string jsonResponse(const MoeRequest& request, const zeprobe::Shape& shape, std::span<const std::uint16_t> out,
                         const std::vector<zeprobe::KernelTiming>& timings);

// Binary body (Content-Type application/octet-stream): a safetensors file with exactly
// `hidden` BF16 [m, H], `topk_ids` I32 or I64 [m, K], `topk_weights` F32 [m, K]; non-finite
// hidden values or weights are refused as in JSON.
MoeRequest parseSafetensorsRequest(std::string_view body, const zeprobe::Shape& shape);
// Binary answer: a safetensors file with `out` BF16 [m, H].
std::string safetensorsResponse(const MoeRequest& request, const zeprobe::Shape& shape,
                                std::span<const std::uint16_t> out);

// RFC 4648 base64 (with padding) of `bytes`.
std::string base64(std::string_view bytes);

// {"error": message, "code": code}; bytes of the message that are not UTF-8 (a bad byte quoted
// from a body) become U+FFFD, so the answer is always valid JSON.
std::string jsonError(const std::string& message, const std::string& code);

// A fixed set of Chains over one Layer, one per worker thread: acquire() hands a Chain to one
// request at a time (a Chain is single-threaded).
class ChainPool {
public:
    ChainPool(const zeprobe::Layer& layer, const std::string& variant, int count);

    class Lease {
    public:
        Lease(ChainPool& pool, zeprobe::Chain* chain) : pool_(&pool), chain_(chain) {}
        Lease(Lease&& o) noexcept : pool_(o.pool_), chain_(o.chain_) { o.chain_ = nullptr; }
        Lease(const Lease&) = delete;
        Lease& operator=(const Lease&) = delete;
        Lease& operator=(Lease&&) = delete;
        ~Lease() {
            if (chain_) pool_->release(chain_);
        }
        zeprobe::Chain& operator*() const { return *chain_; }
        zeprobe::Chain* operator->() const { return chain_; }

    private:
        ChainPool* pool_;
        zeprobe::Chain* chain_;
    };

    Lease acquire();  // waits while every Chain is in use
    int size() const noexcept { return int(chains_.size()); }

private:
    void release(zeprobe::Chain* chain);

    std::vector<std::unique_ptr<zeprobe::Chain>> chains_;
    std::mutex mutex_;
    std::condition_variable available_;
    std::vector<zeprobe::Chain*> free_;
};

// Prometheus text for POST /v1/moe: requests by HTTP status, a latency summary (p50/p95/p99 of
// the last `window` successful requests) and histograms of the latency and of the device time.
// The latency is what a client sees: from the accept of its connection (the wait for a free
// connection thread included) or its request's first byte, to the answer written.
class Metrics {
public:
    explicit Metrics(std::size_t window = 1024);
    void record(int status, double seconds);  // one answered request
    void recordDevice(double seconds);        // the chain's forward() of one request
    void recordRejectedConnection();          // a 503 at the connection limit
    // moe_server_build_info's labels (version, git, contract, device, driver, variant): fixed at start.
    void setBuildInfo(std::vector<std::pair<std::string, std::string>> labels);
    // Gauges, read when /metrics is asked: each a count that a Gauge (below) holds up while it lives.
    std::atomic<std::int64_t> requestsInFlight{0};  // POST /v1/moe being handled (body read, device, answer)
    std::atomic<std::int64_t> chainsInUse{0};       // Chains leased to a request
    std::atomic<std::int64_t> connectionsOpen{0};   // connections held by a connection thread
    int chains = 0;                                 // the pool's size (moe_chains)
    std::string prometheus() const;
    std::uint64_t requests() const;

    // Upper bounds (s) of the histogram buckets, +Inf implied.
    static constexpr double kBuckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                          0.1,    0.25,  0.5,    1,     2.5,  5,     10};

private:
    struct Histogram {
        std::uint64_t counts[std::size(kBuckets) + 1] = {};
        double sum = 0;
        std::uint64_t count = 0;
        void add(double seconds);
        void write(std::string& s, const std::string& name, const std::string& help) const;
    };
    mutable std::mutex mutex_;
    std::map<int, std::uint64_t> byStatus_;
    std::vector<double> window_;  // ring buffer of latencies (s) of status-200 requests
    std::size_t next_ = 0, filled_ = 0;
    double okSeconds_ = 0;
    std::uint64_t okCount_ = 0;
    Histogram latency_, device_;
    std::uint64_t rejected_ = 0;
    std::vector<std::pair<std::string, std::string>> buildInfo_;
};

// Holds a gauge one higher while it lives.
class Gauge {
public:
    explicit Gauge(std::atomic<std::int64_t>& g) : g_(g) { ++g_; }
    ~Gauge() { --g_; }
    Gauge(const Gauge&) = delete;
    Gauge& operator=(const Gauge&) = delete;

private:
    std::atomic<std::int64_t>& g_;
};

}  // namespace zp::moeserver
