#include "moe_service.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace zp::moeserver {

ChainPool::ChainPool(const zeprobe::Layer& layer, const std::string& variant, int count) {
    for (int n = 0; n < count; ++n) {
        chains_.push_back(std::make_unique<zeprobe::Chain>(layer, variant));
        free_.push_back(chains_.back().get());
    }
}

ChainPool::Lease ChainPool::acquire() {
    std::unique_lock lock(mutex_);
    available_.wait(lock, [&] { return !free_.empty(); });
    zeprobe::Chain* c = free_.back();
    free_.pop_back();
    return Lease(*this, c);
}

void ChainPool::release(zeprobe::Chain* chain) {
    {
        std::lock_guard lock(mutex_);
        free_.push_back(chain);
    }
    available_.notify_one();
}

// ---------------------------------------------------------------------------------------------

Metrics::Metrics(std::size_t window) : window_(std::max<std::size_t>(window, 1)) {}

void Metrics::record(int status, double seconds) {
    std::lock_guard lock(mutex_);
    ++byStatus_[status];
    latency_.add(seconds);
    if (status == 200) {
        window_[next_] = seconds;
        next_ = (next_ + 1) % window_.size();
        filled_ = std::min(filled_ + 1, window_.size());
        okSeconds_ += seconds;
        ++okCount_;
    }
}

void Metrics::recordDevice(double seconds) {
    std::lock_guard lock(mutex_);
    device_.add(seconds);
}

void Metrics::setBuildInfo(std::vector<std::pair<std::string, std::string>> labels) {
    std::lock_guard lock(mutex_);
    buildInfo_ = std::move(labels);
}

void Metrics::recordRejectedConnection() {
    std::lock_guard lock(mutex_);
    ++rejected_;
}

void Metrics::Histogram::add(double seconds) {
    std::size_t b = 0;
    while (b < std::size(kBuckets) && seconds > kBuckets[b]) ++b;
    ++counts[b];
    sum += seconds;
    ++count;
}

void Metrics::Histogram::write(std::string& s, const std::string& name, const std::string& help) const {
    s += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
    std::uint64_t cumulative = 0;
    for (std::size_t b = 0; b < std::size(kBuckets); ++b) {
        cumulative += counts[b];
        s += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, kBuckets[b], cumulative);
    }
    cumulative += counts[std::size(kBuckets)];
    s += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {:.9g}\n{}_count {}\n", name, cumulative, name, sum, name,
                     count);
}

std::uint64_t Metrics::requests() const {
    std::lock_guard lock(mutex_);
    std::uint64_t n = 0;
    for (const auto& [status, count] : byStatus_) n += count;
    return n;
}

std::string Metrics::prometheus() const {
    std::lock_guard lock(mutex_);
    std::string s;
    s += "# HELP moe_requests_total POST /v1/moe requests by HTTP status.\n# TYPE moe_requests_total counter\n";
    std::uint64_t errors = 0;
    for (const auto& [status, count] : byStatus_) {
        s += fmt::format("moe_requests_total{{code=\"{}\"}} {}\n", status, count);
        if (status >= 400) errors += count;
    }
    s += "# HELP moe_request_errors_total POST /v1/moe requests answered with a 4xx or 5xx status.\n"
         "# TYPE moe_request_errors_total counter\n";
    s += fmt::format("moe_request_errors_total {}\n", errors);
    s += fmt::format(
        "# HELP moe_request_duration_seconds Latency of successful POST /v1/moe requests, queueing "
        "included; quantiles over the last {} of them.\n# TYPE moe_request_duration_seconds summary\n",
        window_.size());
    std::vector<double> w(window_.begin(), window_.begin() + std::ptrdiff_t(filled_));
    std::sort(w.begin(), w.end());
    for (double q : {0.5, 0.95, 0.99}) {
        // Nearest rank; NaN before the first successful request (the Prometheus convention).
        const double v =
            w.empty() ? std::numeric_limits<double>::quiet_NaN() : w[std::size_t(std::ceil(q * double(w.size()))) - 1];
        s += fmt::format("moe_request_duration_seconds{{quantile=\"{}\"}} {}\n", q,
                         std::isnan(v) ? std::string("NaN") : fmt::format("{:.9g}", v));
    }
    s += fmt::format("moe_request_duration_seconds_sum {:.9g}\nmoe_request_duration_seconds_count {}\n", okSeconds_,
                     okCount_);
    latency_.write(s, "moe_request_latency_seconds",
                   "Latency of every answered POST /v1/moe request as its client sees it: from the accept of its "
                   "connection (the wait for a connection thread included) or its first byte to the answer written.");
    device_.write(s, "moe_device_seconds", "Time of the chain's forward() per POST /v1/moe request (device work).");
    s += fmt::format(
        "# HELP moe_connections_rejected_total Connections answered 503 at the connection limit (every connection "
        "thread busy, the queue full).\n# TYPE moe_connections_rejected_total counter\n"
        "moe_connections_rejected_total {}\n",
        rejected_);
    // Label values escaped as the text format asks (backslash, quote, newline).
    const auto label = [](const std::string& v) {
        std::string o;
        for (char c : v) o += c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n" : std::string(1, c);
        return o;
    };
    std::string labels;
    for (const auto& [k, v] : buildInfo_) labels += (labels.empty() ? "" : ",") + k + "=\"" + label(v) + "\"";
    s += "# HELP moe_server_build_info The server's version, contract, device and variant (always 1).\n"
         "# TYPE moe_server_build_info gauge\n";
    s += "moe_server_build_info{" + labels + "} 1\n";
    s += fmt::format(
        "# HELP moe_requests_in_flight POST /v1/moe requests being handled now (body read, queued for a chain, on the "
        "device, answer written).\n# TYPE moe_requests_in_flight gauge\nmoe_requests_in_flight {}\n"
        "# HELP moe_chains_in_use Chains running a request now (at most moe_chains).\n"
        "# TYPE moe_chains_in_use gauge\nmoe_chains_in_use {}\n"
        "# HELP moe_chains Chains in the pool (--threads).\n# TYPE moe_chains gauge\nmoe_chains {}\n"
        "# HELP moe_connections_open Connections held by a connection thread now (this /metrics request's "
        "included).\n# TYPE moe_connections_open gauge\nmoe_connections_open {}\n",
        requestsInFlight.load(), chainsInUse.load(), chains, connectionsOpen.load());
    return s;
}

}  // namespace zp::moeserver
