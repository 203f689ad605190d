// safetensors files (DESIGN.md "Files and formats"): weights, case inputs and dumps.
//
// Format: u64 little-endian header length N, N bytes of JSON header, then the data buffer.
// The header maps tensor names to {dtype, shape, data_offsets: [begin, end]} (offsets
// relative to the data buffer) plus an optional "__metadata__" object of strings.
//
// Reading is strict, so that a hostile file gets an InputError, never a crash, a hang or a
// huge allocation: the header must be at most 100 MB of valid UTF-8 JSON (no duplicate
// keys, nesting no deeper than the format needs); every entry has exactly dtype, shape and
// data_offsets; shape × dtype size must equal the byte range; and the byte ranges must
// cover the data buffer exactly, in order, without overlaps, gaps or trailing bytes (as the
// format requires and as the reference writer produces).
//
// Writing: header padded with spaces to a multiple of 8 bytes, "__metadata__" first, then
// tensors in name order, data in the same order; all values little-endian (host order: we
// only build for little-endian hosts).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "zp/probe/input_error.hpp"

namespace zp::probe {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; big-endian hosts are not supported");

// Names as in safetensors: "U8", "BF16", "I32", "F32", ...
enum class DType { U8, I8, U16, I16, BF16, F16, I32, U32, F32, I64, U64, F64, BOOL };

std::size_t dtypeSize(DType);
std::string_view dtypeName(DType);
std::optional<DType> parseDType(std::string_view);

struct Tensor {
    DType dtype = DType::U8;
    std::vector<std::int64_t> shape;  // empty = scalar (one element)
    std::vector<std::uint8_t> bytes;  // elements() × dtypeSize(dtype), little-endian

    std::size_t elements() const;
    bool operator==(const Tensor&) const = default;
};

using TensorMap = std::map<std::string, Tensor>;  // ordered: deterministic files

// A header longer than this is rejected as absurd (the reference reader uses the same bound).
inline constexpr std::uint64_t kMaxSafetensorsHeader = 100'000'000;

// `nameForErrors` (usually the path) starts every error message.
TensorMap parseSafetensors(std::span<const std::uint8_t> file, const std::string& nameForErrors);
// Reads the header first and then each tensor straight into its own buffer (no whole-file copy).
TensorMap readSafetensors(const std::filesystem::path&);
// As readSafetensors, also returning "__metadata__".
TensorMap readSafetensors(const std::filesystem::path&, std::map<std::string, std::string>& metadata);
TensorMap parseSafetensors(std::span<const std::uint8_t> file, const std::string& nameForErrors,
                           std::map<std::string, std::string>& metadata);

// Throws std::invalid_argument for a tensor whose bytes do not match its dtype and shape
// or for a tensor named "__metadata__" (a programming error, not bad input).
std::vector<std::uint8_t> serializeSafetensors(const TensorMap&,
                                               const std::map<std::string, std::string>& metadata = {});
// Writes to a temporary file in the same directory and renames it over `path`: readers
// never see a half-written file. Throws InputError naming the path when the OS refuses.
void writeSafetensors(const std::filesystem::path&, const TensorMap&,
                      const std::map<std::string, std::string>& metadata = {});

// Checks bytes.size() == product(shape) × dtypeSize; throws std::invalid_argument otherwise
// (or for a negative dimension).
Tensor makeTensor(DType, std::vector<std::int64_t> shape, std::span<const std::uint8_t> bytes);

template <class T>
requires std::is_trivially_copyable_v<T> Tensor makeTensor(DType dtype, std::vector<std::int64_t> shape,
                                                           std::span<const T> values) {
    if (sizeof(T) != dtypeSize(dtype))
        throw std::invalid_argument("makeTensor: element size " + std::to_string(sizeof(T)) + " does not match dtype " +
                                    std::string(dtypeName(dtype)));
    return makeTensor(
        dtype, std::move(shape),
        std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(values.data()), values.size_bytes()));
}

template <class T>
requires std::is_trivially_copyable_v<T> Tensor makeTensor(DType dtype, std::vector<std::int64_t> shape,
                                                           const std::vector<T>& values) {
    return makeTensor(dtype, std::move(shape), std::span<const T>(values));
}

namespace detail {
// Throws InputError "tensor '<name>': expected <dtype> [shape], got <dtype> [shape]".
void checkTensor(const Tensor&, DType expected, std::span<const std::int64_t> expectedShape, std::string_view name);
}  // namespace detail

// A checked copy of a tensor's values. A dimension of -1 in `expectedShape` matches any size
// (e.g. compact_rows [-1, 2]). Throws InputError naming the tensor, expected vs got.
template <class T>
requires std::is_trivially_copyable_v<T> std::vector<T> tensorValues(const Tensor& t, DType expected,
                                                                     std::span<const std::int64_t> expectedShape,
                                                                     std::string_view name) {
    if (sizeof(T) != dtypeSize(expected))
        throw std::invalid_argument("tensorValues: element size " + std::to_string(sizeof(T)) +
                                    " does not match dtype " + std::string(dtypeName(expected)));
    detail::checkTensor(t, expected, expectedShape, name);
    std::vector<T> out(t.elements());
    if (!out.empty()) std::memcpy(out.data(), t.bytes.data(), out.size() * sizeof(T));
    return out;
}

template <class T>
requires std::is_trivially_copyable_v<T> std::vector<T> tensorValues(const Tensor& t, DType expected,
                                                                     std::initializer_list<std::int64_t> expectedShape,
                                                                     std::string_view name) {
    return tensorValues<T>(t, expected, std::span<const std::int64_t>(expectedShape.begin(), expectedShape.size()),
                           name);
}

// Looks a tensor up by name; throws InputError "<file>: no tensor '<name>' (has: ...)".
const Tensor& findTensor(const TensorMap&, const std::string& name, const std::string& nameForErrors);

}  // namespace zp::probe
