#include "request_body.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace zp::moeserver {

using nlohmann::json;

namespace {

// The request's own text quoted in a message (a value, a key, a JSON token, a message quoting
// one): its first `most` bytes, cut at the start of a UTF-8 character, and its length, so that
// a 400's body does not grow with the request's.
std::string excerpt(std::string_view text, std::size_t most = 64) {
    if (text.size() <= most) return std::string(text);
    std::size_t cut = most;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    return fmt::format("{}... ({} bytes)", text.substr(0, cut), text.size());
}

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
    if (!x.is_number())
        throw BadRequest(fmt::format("{}[{}][{}] must be a number, got {}", key, m, c, excerpt(x.dump())));
    return x.get<double>();
}

// BF16's largest finite value (0x7F7F) and f32's: inputs beyond them are refused, not rounded to
// ±Inf (the chain's contract is over finite inputs, and an Inf answers with null everywhere).
constexpr double kBf16Max = 3.3895313892515355e38;
constexpr double kF32Max = double(std::numeric_limits<float>::max());

// "1e+39" as it was sent (a JSON number), or the double's shortest text.
std::string shown(double v) { return fmt::format("{}", v); }

std::uint16_t hiddenFromNumber(double v, const char* key, int m, int c) {
    if (!(std::fabs(v) <= kBf16Max))  // NaN too
        throw BadRequest(fmt::format("{}[{}][{}] = {} is outside bf16's finite range [-{:.8g}, {:.8g}]", key, m, c,
                                     shown(v), kBf16Max, kBf16Max));
    return zeprobe::bf16FromDouble(v);
}

std::string bf16Name(std::uint16_t bits) {
    if ((bits & 0x7FFF) == 0x7F80) return bits & 0x8000 ? "-Inf" : "+Inf";
    return "NaN";
}

void checkHiddenBits(std::uint16_t bits, const char* key, int m, int c) {
    if ((bits & 0x7F80) == 0x7F80)
        throw BadRequest(fmt::format("{}[{}][{}] = {} (0x{:04x}) is bf16 {}: outside bf16's finite range", key, m, c,
                                     bits, bits, bf16Name(bits)));
}

float weightFromNumber(double v, const char* key, int m, int k) {
    if (!(std::fabs(v) <= kF32Max))
        throw BadRequest(fmt::format("{}[{}][{}] = {} is outside f32's finite range [-{:.9g}, {:.9g}]", key, m, k,
                                     shown(v), kF32Max, kF32Max));
    return float(v);
}

// Every value of a decoded request finite (safetensors bodies carry any bit pattern).
void checkFinite(const MoeRequest& r, const zeprobe::Shape& shape) {
    const int H = shape.hidden, K = shape.topK;
    for (int m = 0; m < r.rows; ++m)
        for (int c = 0; c < H; ++c) checkHiddenBits(r.hidden[std::size_t(m) * H + c], "hidden", m, c);
    for (int m = 0; m < r.rows; ++m)
        for (int k = 0; k < K; ++k)
            if (const float w = r.topkWeights[std::size_t(m) * K + k]; !std::isfinite(w))
                throw BadRequest(fmt::format("topk_weights[{}][{}] = {} is not a finite f32", m, k, w));
}

// The body parsed again by events to find where it fails: "hidden[1][0]" for the path, and the
// token there. A number beyond double's range is named like any value outside its type's range.
class PathAtError : public nlohmann::json_sax<json> {
public:
    bool null() override { return value(); }
    bool boolean(bool) override { return value(); }
    bool number_integer(number_integer_t) override { return value(); }
    bool number_unsigned(number_unsigned_t) override { return value(); }
    bool number_float(number_float_t, const string_t&) override { return value(); }
    bool string(string_t&) override { return value(); }
    bool binary(binary_t&) override { return value(); }
    bool start_object(std::size_t) override { return open(false); }
    bool key(string_t& k) override {
        frames_.back().key = k;
        return true;
    }
    bool end_object() override { return close(); }
    bool start_array(std::size_t) override { return open(true); }
    bool end_array() override { return close(); }
    bool parse_error(std::size_t, const std::string& token, const nlohmann::detail::exception&) override {
        token_ = token;
        for (const Frame& f : frames_)
            path_ += f.array ? fmt::format("[{}]", f.index) : (path_.empty() ? "" : ".") + f.key;
        return false;
    }
    const std::string& path() const { return path_; }
    const std::string& token() const { return token_; }

private:
    struct Frame {
        bool array = false;
        std::size_t index = 0;
        std::string key;
    };
    bool value() {
        if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
        return true;
    }
    bool open(bool array) {
        frames_.push_back({array, 0, {}});
        return true;
    }
    bool close() {
        frames_.pop_back();
        return value();
    }
    std::vector<Frame> frames_;
    std::string path_, token_;
};

std::string whereJsonFails(std::string_view body, const json::exception& e) {
    PathAtError at;
    json::sax_parse(body.begin(), body.end(), &at, json::input_format_t::json, false);
    constexpr int kNumberOverflow = 406;  // nlohmann: a number beyond double's range
    if (e.id == kNumberOverflow) {
        const std::string& p = at.path();
        const std::string range =
            p.rfind("hidden[", 0) == 0 ? fmt::format("bf16's finite range [-{:.8g}, {:.8g}]", kBf16Max, kBf16Max)
            : p.rfind("topk_weights[", 0) == 0 ? fmt::format("f32's finite range [-{:.9g}, {:.9g}]", kF32Max, kF32Max)
                                               : std::string("any finite range");
        return fmt::format("{} = {} is outside {}", p.empty() ? "a number" : excerpt(p), excerpt(at.token()), range);
    }
    return fmt::format("malformed JSON{}: {}", at.path().empty() ? "" : " at " + excerpt(at.path()),
                       excerpt(e.what(), 256));
}

constexpr const char* kKnownKeys[] = {"hidden_bf16", "hidden", "topk_ids", "topk_weights", "timings", "out_format"};

// The JSON body checked against the server's shape while it is parsed (nlohmann's parser
// callback), so that no more of it is built than a valid request holds: the root an object of
// known keys, each once; under a row key [m][n], at most shape.rows rows of at most n values,
// nothing nested deeper; `timings` and `out_format` no arrays or objects. Values past a row's
// length and rows past shape.rows are counted but not kept (the 400 names their number, as for a
// short row); what cannot be valid at all is a BadRequest at once.
class ShapeWhileParsing {
public:
    explicit ShapeWhileParsing(const zeprobe::Shape& shape) : shape_(shape) {}

    bool operator()(int depth, json::parse_event_t event, json& parsed) {
        using E = json::parse_event_t;
        const bool opens = event == E::object_start || event == E::array_start;
        if (depth == 0) {
            if (event == E::array_start) throw BadRequest("the request body must be a JSON object");
            return true;
        }
        if (depth == 1) {
            if (event == E::key) return knownKeyOnce(parsed.get_ref<const std::string&>());
            if (event == E::array_end) {  // a row array's end: its rows counted
                if (rows_ > std::size_t(shape_.rows))
                    throw BadRequest(
                        fmt::format("'{}' has {} rows, expected 1 to at most rows = {} (the server's shape)", key_,
                                    rows_, shape_.rows));
                return true;
            }
            if (!opens) return true;
            if (columns() == 0) {
                if (key_ == "timings") throw BadRequest("'timings' must be true or false");
                throw BadRequest(fmt::format("'out_format' must be \"numbers\" or \"bf16_base64\", got {}",
                                             event == E::array_start ? "an array" : "an object"));
            }
            if (event == E::object_start)
                throw BadRequest(fmt::format("'{}' must be an array of rows (arrays of {} = {} values)", key_,
                                             columnsName(), columns()));
            rows_ = 0;
            return true;
        }
        if (depth == 2) {                 // a row: counted; past shape.rows not kept
            if (event == E::array_end) {  // a kept row's end: its values counted
                if (values_ > columns())
                    throw BadRequest(fmt::format("{}[{}] has {} values, expected {} = {}", key_, rows_ - 1, values_,
                                                 columnsName(), columns()));
                return true;
            }
            if (event != E::value && !opens) return true;  // a key inside a discarded row
            values_ = 0;
            keptRow_ = ++rows_ <= std::size_t(shape_.rows);
            if (keptRow_ && event == E::object_start)
                throw BadRequest(fmt::format("{}[{}] has no array of values, expected {} = {}", key_, rows_ - 1,
                                             columnsName(), columns()));
            return keptRow_;
        }
        // depth >= 3: the values of a row (events inside a discarded row are discarded too).
        if (!keptRow_) return false;
        if (depth == 3 && opens)
            throw BadRequest(fmt::format("{}[{}][{}] must be {}, got {}", key_, rows_ - 1, values_,
                                         key_ == "topk_ids" ? "an integer" : "a number",
                                         event == E::array_start ? "an array" : "an object"));
        if (depth == 3 && event == E::value) return ++values_ <= columns();
        return true;
    }

private:
    bool knownKeyOnce(const std::string& key) {
        if (std::find_if(std::begin(kKnownKeys), std::end(kKnownKeys), [&](const char* k) { return key == k; }) ==
            std::end(kKnownKeys))
            throw BadRequest(fmt::format(
                "unknown key '{}' (known: hidden_bf16, hidden, topk_ids, topk_weights, timings, out_format)",
                excerpt(key)));
        if (!seen_.insert(key).second)
            throw BadRequest(fmt::format("duplicate key '{}': each key once (JSON's last-wins would be silent)", key));
        key_ = key;
        return true;
    }
    // The row length of the current key (0: not a row key) and its name in messages.
    std::size_t columns() const {
        return key_ == "hidden" || key_ == "hidden_bf16"      ? std::size_t(shape_.hidden)
               : key_ == "topk_ids" || key_ == "topk_weights" ? std::size_t(shape_.topK)
                                                              : 0;
    }
    const char* columnsName() const { return key_.rfind("topk_", 0) == 0 ? "top_k" : "hidden"; }

    const zeprobe::Shape& shape_;
    std::set<std::string> seen_;
    std::string key_;
    std::size_t rows_ = 0, values_ = 0;
    bool keptRow_ = true;
};

}  // namespace

MoeRequest parseJsonRequest(std::string_view body, const zeprobe::Shape& shape) {
    json root;
    try {
        ShapeWhileParsing limits(shape);
        root = json::parse(body.begin(), body.end(), [&limits](int depth, json::parse_event_t event, json& parsed) {
            return limits(depth, event, parsed);
        });
    } catch (const json::exception& e) {  // parse_error, and out_of_range for a number beyond double (1e400)
        throw BadRequest(whereJsonFails(body, e));
    }
    if (!root.is_object()) throw BadRequest("the request body must be a JSON object");

    MoeRequest r;
    // Ids are int64 as torch.topk gives them: the facade's int64 forward() checks them before
    // any device work (one outside [0, E), beyond int32 range or not, is a 400 naming it).
    r.topkIds = rowsOf<std::int64_t>(
        root, "topk_ids", shape.topK, "top_k", shape.rows, r.rows, [&](const json& x, int m, int k) {
            if (!x.is_number_integer())
                throw BadRequest(fmt::format("topk_ids[{}][{}] must be an integer, got {}", m, k, excerpt(x.dump())));
            const std::int64_t id = x.is_number_unsigned()
                                        ? std::int64_t(std::min<std::uint64_t>(x.get<std::uint64_t>(), INT64_MAX))
                                        : x.get<std::int64_t>();
            return id;
        });
    r.topkWeights =
        rowsOf<float>(root, "topk_weights", shape.topK, "top_k", shape.rows, r.rows, [](const json& x, int m, int k) {
            return weightFromNumber(numberAt(x, "topk_weights", m, k), "topk_weights", m, k);
        });
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
                                    h, excerpt(x.dump())));
                const auto bits = std::uint16_t(x.get<std::uint64_t>());
                checkHiddenBits(bits, "hidden_bf16", m, h);
                return bits;
            });
    } else {
        r.hidden = rowsOf<std::uint16_t>(
            root, "hidden", shape.hidden, "hidden", shape.rows, r.rows,
            [](const json& x, int m, int h) { return hiddenFromNumber(numberAt(x, "hidden", m, h), "hidden", m, h); });
    }
    if (const auto t = root.find("timings"); t != root.end()) {
        if (!t->is_boolean()) throw BadRequest("'timings' must be true or false");
        r.timings = t->get<bool>();
    }
    if (const auto f = root.find("out_format"); f != root.end()) {
        if (f->is_string() && *f == "numbers")
            r.outFormat = OutFormat::numbers;
        else if (f->is_string() && *f == "bf16_base64")
            r.outFormat = OutFormat::bf16Base64;
        else
            throw BadRequest(
                fmt::format("'out_format' must be \"numbers\" or \"bf16_base64\", got {}", excerpt(f->dump())));
    }
    return r;
}

std::string jsonResponse(const MoeRequest& request, const zeprobe::Shape& shape, std::span<const std::uint16_t> out,
                         const std::vector<zeprobe::KernelTiming>& timings) {
    const std::size_t H = std::size_t(shape.hidden), n = std::size_t(request.rows) * H;
    json answer = {{"rows", request.rows}, {"hidden", shape.hidden}};
    if (request.outFormat == OutFormat::bf16Base64) {
        std::string bytes(2 * n, '\0');
        for (std::size_t i = 0; i < n; ++i) {
            bytes[2 * i] = char(out[i] & 0xFF);
            bytes[2 * i + 1] = char(out[i] >> 8);
        }
        answer["out_format"] = "bf16_base64";
        answer["out"] = base64(bytes);
    } else {
        json values = json::array();
        for (int m = 0; m < request.rows; ++m) {
            json v = json::array();
            for (std::size_t h = 0; h < H; ++h) {
                const float f = zeprobe::floatFromBf16(out[std::size_t(m) * H + h]);
                if (std::isfinite(f))
                    v.push_back(f);
                else
                    v.push_back(nullptr);
            }
            values.push_back(std::move(v));
        }
        answer["out_format"] = "numbers";
        answer["out"] = std::move(values);
    }
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
        checkFinite(r, shape);
        return r;
    } catch (const zeprobe::Error& e) {
        if (e.code() != zeprobe::ErrorCode::invalid_argument) throw;
        throw BadRequest(excerpt(e.what(), 512));
    }
}

std::string safetensorsResponse(const MoeRequest& request, const zeprobe::Shape& shape,
                                std::span<const std::uint16_t> out) {
    const std::vector<std::uint8_t> bytes = zeprobe::outputToSafetensors(
        out.first(std::min(out.size(), std::size_t(request.rows) * std::size_t(shape.hidden))), shape);
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::string base64(std::string_view bytes) {
    static constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string s;
    s.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const std::uint32_t v = std::uint32_t(std::uint8_t(bytes[i])) << 16 |
                                std::uint32_t(std::uint8_t(bytes[i + 1])) << 8 | std::uint8_t(bytes[i + 2]);
        for (int shift : {18, 12, 6, 0}) s += kDigits[(v >> shift) & 63];
    }
    if (const std::size_t left = bytes.size() - i; left > 0) {
        std::uint32_t v = std::uint32_t(std::uint8_t(bytes[i])) << 16;
        if (left == 2) v |= std::uint32_t(std::uint8_t(bytes[i + 1])) << 8;
        s += kDigits[(v >> 18) & 63];
        s += kDigits[(v >> 12) & 63];
        s += left == 2 ? kDigits[(v >> 6) & 63] : '=';
        s += '=';
    }
    return s;
}

std::string jsonError(const std::string& message, const std::string& code) {
    return json{{"error", message}, {"code", code}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace zp::moeserver
