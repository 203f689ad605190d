// moe-server's bodies without HTTP: a request's JSON or safetensors body decoded against the
// server's shape, and the answer encoded. Everything a bad request can reach throws BadRequest
// (HTTP 400) or zeprobe::Error (invalid_argument → 400, anything else → 500); nothing here prints
// or exits. A library of its own (moe_request_body) so that the fuzz harness of the bodies
// (tests/fuzz/fuzz_moe_request.cpp) links the server's own parser, built on zeprobe alone as the
// server is.
#pragma once

#include <cstdint>
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

}  // namespace zp::moeserver
