#include "moe_service.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace zp::moeserver {

using nlohmann::json;

namespace {

// The rows of a [m][n] JSON array, each row checked with `element`.
template <class T, class Element>
std::vector<T> rowsOf(const json& root, const char* key, int columns, const char* columnsName, int maxRows, int& rows,
                      Element element) {
    const auto it = root.find(key);
    if (it == root.end()) throw BadRequest(fmt::format("missing '{}'", key));
    const json& v = *it;
    if (!v.is_array())
        throw BadRequest(
            fmt::format("'{}' must be an array of rows (arrays of {} = {} values)", key, columnsName, columns));
    if (v.empty() || int(v.size()) > maxRows)
        throw BadRequest(fmt::format("'{}' has {} rows, expected 1 to at most rows = {} (the server's shape)", key,
                                     v.size(), maxRows));
    if (rows != 0 && int(v.size()) != rows)
        throw BadRequest(fmt::format("'{}' has {} rows, but topk_ids has {}", key, v.size(), rows));
    rows = int(v.size());
    std::vector<T> out;
    out.reserve(std::size_t(rows) * columns);
    for (int m = 0; m < rows; ++m) {
        const json& row = v[std::size_t(m)];
        if (!row.is_array() || int(row.size()) != columns)
            throw BadRequest(fmt::format("{}[{}] has {} values, expected {} = {}", key, m,
                                         row.is_array() ? std::to_string(row.size()) : std::string("no array of"),
                                         columnsName, columns));
        for (int c = 0; c < columns; ++c) out.push_back(element(row[std::size_t(c)], m, c));
    }
    return out;
}

double numberAt(const json& x, const char* key, int m, int c) {
    if (!x.is_number()) throw BadRequest(fmt::format("{}[{}][{}] must be a number, got {}", key, m, c, x.dump()));
    return x.get<double>();
}

}  // namespace

MoeRequest parseJsonRequest(std::string_view body, const zeprobe::Shape& shape) {
    json root;
    try {
        root = json::parse(body.begin(), body.end());
    } catch (const json::parse_error& e) {
        throw BadRequest(fmt::format("malformed JSON: {}", e.what()));
    }
    if (!root.is_object()) throw BadRequest("the request body must be a JSON object");
    static const char* const known[] = {"hidden_bf16", "hidden", "topk_ids", "topk_weights", "timings"};
    for (const auto& item : root.items())
        if (const std::string& key = item.key(); std::find_if(std::begin(known), std::end(known), [&](const char* k) {
                                                     return key == k;
                                                 }) == std::end(known))
            throw BadRequest(
                fmt::format("unknown key '{}' (known: hidden_bf16, hidden, topk_ids, topk_weights, timings)", key));

    MoeRequest r;
    // Ids are int64 as torch.topk gives them: the facade's int64 forward() checks them before
    // any device work (one outside [0, E), beyond int32 range or not, is a 400 naming it).
    r.topkIds = rowsOf<std::int64_t>(
        root, "topk_ids", shape.topK, "top_k", shape.rows, r.rows, [&](const json& x, int m, int k) {
            if (!x.is_number_integer())
                throw BadRequest(fmt::format("topk_ids[{}][{}] must be an integer, got {}", m, k, x.dump()));
            const std::int64_t id = x.is_number_unsigned()
                                        ? std::int64_t(std::min<std::uint64_t>(x.get<std::uint64_t>(), INT64_MAX))
                                        : x.get<std::int64_t>();
            return id;
        });
    r.topkWeights = rowsOf<float>(root, "topk_weights", shape.topK, "top_k", shape.rows, r.rows,
                                  [](const json& x, int m, int k) { return float(numberAt(x, "topk_weights", m, k)); });
    const bool bits = root.contains("hidden_bf16"), floats = root.contains("hidden");
    if (bits == floats)
        throw BadRequest(
            "give exactly one of 'hidden_bf16' (BF16 bit patterns) and 'hidden' (numbers, rounded to BF16)");
    if (bits) {
        r.hidden = rowsOf<std::uint16_t>(
            root, "hidden_bf16", shape.hidden, "hidden", shape.rows, r.rows, [](const json& x, int m, int h) {
                if (!x.is_number_unsigned() || x.get<std::uint64_t>() > 0xFFFF)
                    throw BadRequest(
                        fmt::format("hidden_bf16[{}][{}] = {} is not a BF16 bit pattern (an integer in [0, 65535])", m,
                                    h, x.dump()));
                return std::uint16_t(x.get<std::uint64_t>());
            });
    } else {
        r.hidden = rowsOf<std::uint16_t>(
            root, "hidden", shape.hidden, "hidden", shape.rows, r.rows,
            [](const json& x, int m, int h) { return zeprobe::bf16FromDouble(numberAt(x, "hidden", m, h)); });
    }
    if (const auto t = root.find("timings"); t != root.end()) {
        if (!t->is_boolean()) throw BadRequest("'timings' must be true or false");
        r.timings = t->get<bool>();
    }
    return r;
}

std::string jsonResponse(const MoeRequest& request, const zeprobe::Shape& shape, std::span<const std::uint16_t> out,
                         const std::vector<zeprobe::KernelTiming>& timings) {
    const std::size_t H = std::size_t(shape.hidden);
    json bits = json::array(), values = json::array();
    for (int m = 0; m < request.rows; ++m) {
        json b = json::array(), v = json::array();
        for (std::size_t h = 0; h < H; ++h) {
            const std::uint16_t x = out[std::size_t(m) * H + h];
            b.push_back(x);
            const float f = zeprobe::floatFromBf16(x);
            if (std::isfinite(f))
                v.push_back(f);
            else
                v.push_back(nullptr);
        }
        bits.push_back(std::move(b));
        values.push_back(std::move(v));
    }
    json answer = {
        {"rows", request.rows}, {"hidden", shape.hidden}, {"out_bf16", std::move(bits)}, {"out", std::move(values)}};
    if (request.timings) {
        json t = json::array();
        for (const auto& k : timings) t.push_back({{"kernel", k.kernel}, {"ns", k.ns}});
        answer["timings"] = std::move(t);
    }
    return answer.dump();
}

MoeRequest parseSafetensorsRequest(std::string_view body, const zeprobe::Shape& shape) {
    try {
        zeprobe::Inputs in = zeprobe::inputsFromSafetensors(
            std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(body.data()), body.size()), shape,
            "request body (safetensors)");
        MoeRequest r;
        r.rows = in.rows;
        r.hidden = std::move(in.hidden);
        r.topkIds = std::move(in.topkIds);
        r.topkWeights = std::move(in.topkWeights);
        return r;
    } catch (const zeprobe::Error& e) {
        if (e.code() != zeprobe::ErrorCode::invalid_argument) throw;
        throw BadRequest(e.what());
    }
}

std::string safetensorsResponse(const MoeRequest& request, const zeprobe::Shape& shape,
                                std::span<const std::uint16_t> out) {
    const std::vector<std::uint8_t> bytes = zeprobe::outputToSafetensors(
        out.first(std::min(out.size(), std::size_t(request.rows) * std::size_t(shape.hidden))), shape);
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::string jsonError(const std::string& message, const std::string& code) {
    return json{{"error", message}, {"code", code}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

// ---------------------------------------------------------------------------------------------

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
    return s;
}

}  // namespace zp::moeserver
