// Fuzz target: moe-server's request bodies (tools/moe-server/request_body.hpp), decoded as POST
// /v1/moe decodes them, and the answers encoded from what was decoded.
//
// Input layout: byte 0 chooses the Content-Type and the server's shape, the rest is the body.
//   bit 0: 0 = application/json (parseJsonRequest), 1 = application/octet-stream (a safetensors
//          file, parseSafetensorsRequest)
//   bits 1-2: the shape (kShapes below: rows 1-4, top_k 1-8, hidden 32-128)
// Properties: only BadRequest escapes (a zeprobe::Error or any other exception is a bug: the
// server answers 500); every refusal makes a JSON error body (jsonError) that reads back, with the
// message itself where the message is UTF-8; an accepted request has 1 to rows rows of hidden
// values, ids and weights in their shapes, every hidden value and weight finite; its answers read
// back as written: the JSON one in both out formats (numbers, null where a value is not finite;
// base64 bytes) and the safetensors one; a JSON request encoded again from what was decoded (BF16
// bits, and numbers) decodes to the same values.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_support.hpp"
#include "request_body.hpp"
#include "zp/probe/input_error.hpp"
#include "zp/probe/safetensors.hpp"
#include "zp_test_base64.hpp"

using nlohmann::json;
using namespace zp::moeserver;

namespace {

zeprobe::Shape shapeOf(int h, int k, int m, int e, int c) {
    zeprobe::Shape s;
    s.hidden = h;
    s.intermediate = 32;
    s.topK = k;
    s.rows = m;
    s.experts = e;
    s.cards = c;
    return s;
}

const zeprobe::Shape kShapes[4] = {shapeOf(32, 2, 2, 8, 1), shapeOf(64, 6, 2, 48, 4), shapeOf(32, 1, 1, 4, 1),
                                   shapeOf(128, 8, 4, 64, 2)};

bool finiteBf16(std::uint16_t bits) { return (bits & 0x7F80) != 0x7F80; }

// `out` of the request's size made from its hidden values, with values JSON cannot carry among them.
std::vector<std::uint16_t> someOutput(const MoeRequest& r) {
    std::vector<std::uint16_t> out = r.hidden;
    for (std::size_t i = 0; i < out.size(); i += 5) out[i] = (i / 5) % 3 == 0 ? 0x7FC0 : (i / 5) % 3 == 1 ? 0xFF80 : 0;
    return out;
}

void checkAnswers(const MoeRequest& r, const zeprobe::Shape& shape) {
    const std::size_t H = std::size_t(shape.hidden);
    const std::vector<std::uint16_t> out = someOutput(r);
    for (OutFormat f : {OutFormat::numbers, OutFormat::bf16Base64}) {
        MoeRequest asked = r;
        asked.outFormat = f;
        const json a = json::parse(jsonResponse(asked, shape, out, {{"gemm1", 1.5}, {"gather", 2.0}}));
        ZP_FUZZ_CHECK(a.at("rows") == r.rows && a.at("hidden") == shape.hidden, "answer's rows or hidden");
        ZP_FUZZ_CHECK(a.contains("timings") == r.timings, "timings in the answer only when asked");
        if (f == OutFormat::bf16Base64) {
            const std::optional<std::string> decoded = zp::testing::base64Decode(a.at("out").get<std::string>());
            ZP_FUZZ_CHECK(decoded.has_value(), "base64 answer holds a byte not of the alphabet");
            const std::string& bytes = *decoded;
            ZP_FUZZ_CHECK(bytes.size() == 2 * out.size(), "base64 answer's size");
            for (std::size_t i = 0; i < out.size(); ++i)
                ZP_FUZZ_CHECK(std::uint16_t(std::uint8_t(bytes[2 * i]) | std::uint8_t(bytes[2 * i + 1]) << 8) == out[i],
                              "base64 answer's value " + std::to_string(i));
            continue;
        }
        const json& rows = a.at("out");
        ZP_FUZZ_CHECK(rows.size() == std::size_t(r.rows), "answer's out rows");
        for (std::size_t m = 0; m < rows.size(); ++m) {
            ZP_FUZZ_CHECK(rows[m].size() == H, "answer's out row length");
            for (std::size_t h = 0; h < H; ++h) {
                const std::uint16_t bits = out[m * H + h];
                const json& v = rows[m][h];
                if (!finiteBf16(bits))
                    ZP_FUZZ_CHECK(v.is_null(), "a value JSON cannot carry is not null");
                else
                    ZP_FUZZ_CHECK(v.is_number() && float(v.get<double>()) == zeprobe::floatFromBf16(bits) &&
                                      std::signbit(v.get<double>()) == bool(bits & 0x8000),
                                  "answer's value " + v.dump());
            }
        }
    }
    const std::string file = safetensorsResponse(r, shape, out);
    const auto t = zp::probe::parseSafetensors(
        std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(file.data()), file.size()), "answer");
    const auto& o = zp::probe::findTensor(t, "out", "answer");
    ZP_FUZZ_CHECK(t.size() == 1 && o.dtype == zp::probe::DType::BF16 &&
                      o.shape == (std::vector<std::int64_t>{r.rows, shape.hidden}) &&
                      o.bytes.size() == 2 * out.size() && std::memcmp(o.bytes.data(), out.data(), o.bytes.size()) == 0,
                  "safetensors answer");
}

// What was decoded, as a JSON request again: BF16 bits, or numbers (each BF16 value exactly).
std::string encodeAgain(const MoeRequest& r, const zeprobe::Shape& shape, bool asNumbers) {
    const std::size_t H = std::size_t(shape.hidden), K = std::size_t(shape.topK);
    json hidden = json::array(), ids = json::array(), weights = json::array();
    for (std::size_t m = 0; m < std::size_t(r.rows); ++m) {
        json h = json::array(), i = json::array(), w = json::array();
        for (std::size_t c = 0; c < H; ++c) {
            const std::uint16_t bits = r.hidden[m * H + c];
            if (asNumbers)
                h.push_back(double(zeprobe::floatFromBf16(bits)));
            else
                h.push_back(bits);
        }
        for (std::size_t k = 0; k < K; ++k) {
            i.push_back(r.topkIds[m * K + k]);
            w.push_back(double(r.topkWeights[m * K + k]));
        }
        hidden.push_back(std::move(h));
        ids.push_back(std::move(i));
        weights.push_back(std::move(w));
    }
    json body = {{asNumbers ? "hidden" : "hidden_bf16", hidden},
                 {"topk_ids", ids},
                 {"topk_weights", weights},
                 {"timings", r.timings},
                 {"out_format", r.outFormat == OutFormat::numbers ? "numbers" : "bf16_base64"}};
    return body.dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const bool safetensors = data[0] & 1;
    const zeprobe::Shape& shape = kShapes[(data[0] >> 1) & 3];
    const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
    MoeRequest r;
    try {
        r = safetensors ? parseSafetensorsRequest(body, shape) : parseJsonRequest(body, shape);
    } catch (const BadRequest& e) {
        const std::string message = e.what();
        ZP_FUZZ_CHECK(!message.empty(), "a refusal without a message");
        const json answer = json::parse(jsonError(message, "invalid_argument"));  // never throws: U+FFFD
        ZP_FUZZ_CHECK(answer.at("code") == "invalid_argument" && answer.at("error").is_string(), "error body");
        bool utf8 = true;
        try {
            (void)json(message).dump();
        } catch (const json::type_error&) {
            utf8 = false;
        }
        ZP_FUZZ_CHECK(!utf8 || answer["error"] == message, "error body's message differs from the message");
        return 0;
    }
    const std::size_t rows = std::size_t(r.rows), H = std::size_t(shape.hidden), K = std::size_t(shape.topK);
    ZP_FUZZ_CHECK(r.rows >= 1 && r.rows <= shape.rows, "rows " + std::to_string(r.rows));
    ZP_FUZZ_CHECK(r.hidden.size() == rows * H && r.topkIds.size() == rows * K && r.topkWeights.size() == rows * K,
                  "sizes of an accepted request");
    for (std::uint16_t bits : r.hidden) ZP_FUZZ_CHECK(finiteBf16(bits), "a hidden value not finite was accepted");
    for (float w : r.topkWeights) ZP_FUZZ_CHECK(std::isfinite(w), "a weight not finite was accepted");
    if (safetensors) ZP_FUZZ_CHECK(!r.timings && r.outFormat == OutFormat::numbers, "safetensors request options");
    checkAnswers(r, shape);
    for (bool asNumbers : {false, true}) {
        const MoeRequest again = parseJsonRequest(encodeAgain(r, shape, asNumbers), shape);
        ZP_FUZZ_CHECK(again.rows == r.rows && again.hidden == r.hidden && again.topkIds == r.topkIds &&
                          again.timings == r.timings && again.outFormat == r.outFormat,
                      std::string("a request encoded again decodes to other values") + (asNumbers ? " (numbers)" : ""));
        for (std::size_t i = 0; i < r.topkWeights.size(); ++i)
            ZP_FUZZ_CHECK(std::memcmp(&again.topkWeights[i], &r.topkWeights[i], sizeof(float)) == 0,
                          "a weight encoded again decodes to other bits");
    }
    return 0;
}
