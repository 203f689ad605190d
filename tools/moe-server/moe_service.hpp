// moe-server's request handling without HTTP: the chain pool and the metrics (the bodies'
// decoding and encoding: request_body.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <iterator>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <zeprobe/zeprobe.hpp>

#include "request_body.hpp"

namespace zp::moeserver {

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
