// RFC 4648 base64 decoded on the test side, independently of the encoder under test
// (moe-server's answers, "out_format": "bf16_base64"): nullopt at a byte outside the alphabet.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace zp::testing {

inline std::optional<std::string> base64Decode(std::string_view text) {
    static constexpr const char* kDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::uint32_t acc = 0;
    int bits = 0;
    for (const char c : text) {
        if (c == '=') break;
        const char* at = c == '\0' ? nullptr : std::strchr(kDigits, c);
        if (at == nullptr) return std::nullopt;
        acc = acc << 6 | std::uint32_t(at - kDigits);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += char((acc >> bits) & 0xFF);
        }
    }
    return out;
}

}  // namespace zp::testing
