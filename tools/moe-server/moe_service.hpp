// moe-server's request handling without HTTP: body decoding and encoding, the chain pool and
// the metrics. Everything a bad request can reach throws BadRequest (HTTP 400) or
// zeprobe::Error (invalid_argument → 400, anything else → 500).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <zeprobe/zeprobe.hpp>

namespace zp::moeserver {

struct BadRequest : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// One decode step's inputs, flattened row-major; rows in [1, Shape::rows].
struct MoeRequest {
    int rows = 0;
    std::vector<std::uint16_t> hidden;  // [rows, H] BF16 bits
    std::vector<std::int32_t> topkIds;  // [rows, K]
    std::vector<float> topkWeights;     // [rows, K]
    bool timings = false;               // JSON: "timings": true → kernel timings in the answer
};

// JSON body (Content-Type application/json):
//   {"hidden_bf16": [[u16, ...], ...]  |  "hidden": [[number, ...], ...],   exactly one of them
//    "topk_ids": [[int, ...], ...], "topk_weights": [[number, ...], ...], "timings": bool (optional)}
// `hidden` numbers are rounded to BF16 once (RNE) from their double value; ids are checked
// against [0, E) by the facade. Unknown keys are rejected (typos would otherwise be silent).
MoeRequest parseJsonRequest(std::string_view body, const zeprobe::Shape& shape);
// JSON answer: {"rows": m, "hidden": H, "out_bf16": [[u16...]...], "out": [[float|null...]...]}
// (`out` floats are BF16 widened to f32; NaN and ±Inf, which JSON cannot carry, are null:
// out_bf16 is exact) plus "timings": [{"kernel", "ns"}] when asked.
std::string jsonResponse(const MoeRequest& request, const zeprobe::Shape& shape, std::span<const std::uint16_t> out,
                         const std::vector<zeprobe::KernelTiming>& timings);

// Binary body (Content-Type application/octet-stream): a safetensors file with exactly
// `hidden` BF16 [m, H], `topk_ids` I32 [m, K], `topk_weights` F32 [m, K].
MoeRequest parseSafetensorsRequest(std::string_view body, const zeprobe::Shape& shape);
// Binary answer: a safetensors file with `out` BF16 [m, H].
std::string safetensorsResponse(const MoeRequest& request, const zeprobe::Shape& shape,
                                std::span<const std::uint16_t> out);

// {"error": message, "code": code}
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

// Request counters by HTTP status and latency quantiles (p50/p95/p99) of the last `window`
// successful /v1/moe requests, as Prometheus text.
class Metrics {
public:
    explicit Metrics(std::size_t window = 1024);
    void record(int status, double seconds);
    std::string prometheus() const;
    std::uint64_t requests() const;

private:
    mutable std::mutex mutex_;
    std::map<int, std::uint64_t> byStatus_;
    std::vector<double> window_;  // ring buffer of latencies (s) of status-200 requests
    std::size_t next_ = 0, filled_ = 0;
    double okSeconds_ = 0;
    std::uint64_t okCount_ = 0;
};

}  // namespace zp::moeserver
