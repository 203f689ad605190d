#include "zp/probe/safetensors.hpp"

#include "zp/probe/file_io.hpp"

#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <fstream>
#include <limits>
#include <set>
#include <system_error>

#include <nlohmann/json.hpp>

namespace zp::probe {
namespace {

constexpr std::array<std::pair<DType, std::string_view>, 13> kDTypes{{
    {DType::U8, "U8"},
    {DType::I8, "I8"},
    {DType::U16, "U16"},
    {DType::I16, "I16"},
    {DType::BF16, "BF16"},
    {DType::F16, "F16"},
    {DType::I32, "I32"},
    {DType::U32, "U32"},
    {DType::F32, "F32"},
    {DType::I64, "I64"},
    {DType::U64, "U64"},
    {DType::F64, "F64"},
    {DType::BOOL, "BOOL"},
}};

std::string knownDTypes() {
    std::string s;
    for (const auto& [d, n] : kDTypes) s += (s.empty() ? "" : ", ") + std::string(n);
    return s;
}

std::string shapeText(std::span<const std::int64_t> shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

struct Entry {
    std::string name;
    DType dtype;
    std::vector<std::int64_t> shape;
    std::uint64_t begin, end;
};

struct Header {
    std::vector<Entry> entries;  // sorted by data offset
    std::map<std::string, std::string> metadata;
};

[[noreturn]] void bad(const std::string& file, const std::string& what) { throw InputError(file + ": " + what); }

// The deepest nesting a valid header has: top object (0) > entry object (1) > shape array (2).
constexpr int kMaxDepth = 2;

nlohmann::json parseHeaderJson(std::string_view text, const std::string& file) {
    // nlohmann keeps the last of duplicate keys silently; a callback sees every key.
    std::vector<std::set<std::string>> keys;
    auto callback = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        using E = nlohmann::json::parse_event_t;
        switch (event) {
            case E::object_start:
            case E::array_start:
                if (depth > kMaxDepth)
                    bad(file,
                        "header nests deeper than a safetensors header can (" + std::to_string(depth + 1) + " levels)");
                if (event == E::object_start) keys.emplace_back();
                break;
            case E::object_end:
                if (!keys.empty()) keys.pop_back();
                break;
            case E::key:
                if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second)
                    bad(file, "header has the key '" + parsed.get<std::string>() + "' twice");
                break;
            default: break;
        }
        return true;
    };
    try {
        return nlohmann::json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true,
                                     /*ignore_comments=*/false);
    } catch (const nlohmann::json::exception& e) {
        bad(file, std::string("header is not valid JSON: ") + e.what());
    }
}

std::uint64_t offsetValue(const nlohmann::json& v, const std::string& file, const std::string& tensor) {
    if (!v.is_number_unsigned())
        bad(file, "tensor '" + tensor + "': data_offsets value " + v.dump() + " is not a non-negative integer");
    return v.get<std::uint64_t>();
}

Header parseHeader(std::string_view text, std::uint64_t dataSize, const std::string& file) {
    const nlohmann::json j = parseHeaderJson(text, file);
    if (!j.is_object()) bad(file, std::string("header must be a JSON object, got ") + j.type_name());
    Header h;
    for (const auto& [name, v] : j.items()) {
        if (name == "__metadata__") {
            if (!v.is_object())
                bad(file, std::string("__metadata__ must be an object of strings, got ") + v.type_name());
            for (const auto& [k, s] : v.items()) {
                if (!s.is_string()) bad(file, "__metadata__ '" + k + "': value " + s.dump() + " must be a string");
                h.metadata.emplace(k, s.get<std::string>());
            }
            continue;
        }
        const std::string t = "tensor '" + name + "': ";
        if (!v.is_object()) bad(file, t + "entry must be an object {dtype, shape, data_offsets}, got " + v.type_name());
        for (const auto& [k, unused] : v.items())
            if (k != "dtype" && k != "shape" && k != "data_offsets")
                bad(file, t + "unknown key '" + k + "' (expected dtype, shape, data_offsets)");
        for (const char* k : {"dtype", "shape", "data_offsets"})
            if (!v.contains(k)) bad(file, t + "missing '" + k + "'");

        Entry e{name, DType::U8, {}, 0, 0};
        const auto& dt = v["dtype"];
        if (!dt.is_string()) bad(file, t + "dtype " + dt.dump() + " must be a string (one of " + knownDTypes() + ")");
        const auto parsed = parseDType(dt.get<std::string>());
        if (!parsed) bad(file, t + "unknown dtype " + dt.dump() + " (known: " + knownDTypes() + ")");
        e.dtype = *parsed;

        const auto& sh = v["shape"];
        if (!sh.is_array()) bad(file, t + "shape " + sh.dump() + " must be an array of non-negative integers");
        // Checked product: a dimension of 0 makes any other dimension harmless.
        std::uint64_t product = 1;
        bool zero = false, overflow = false;
        for (const auto& d : sh) {
            if (d.is_number_integer() && !d.is_number_unsigned())
                bad(file, t + "shape " + sh.dump() + " has a negative dimension " + d.dump());
            if (!d.is_number_unsigned())
                bad(file, t + "shape " + sh.dump() + " has a non-integer dimension " + d.dump());
            const std::uint64_t n = d.get<std::uint64_t>();
            if (n > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
                bad(file, t + "shape " + sh.dump() + " has a dimension too large: " + d.dump());
            e.shape.push_back(std::int64_t(n));
            if (n == 0)
                zero = true;
            else if (!overflow && product > std::numeric_limits<std::uint64_t>::max() / n)
                overflow = true;
            else if (!overflow)
                product *= n;
        }
        const std::uint64_t size = dtypeSize(e.dtype);
        if (!zero && (overflow || product > std::numeric_limits<std::uint64_t>::max() / size))
            bad(file, t + "shape " + sh.dump() + " has more elements than any file can hold");
        const std::uint64_t elements = zero ? 0 : product;

        const auto& off = v["data_offsets"];
        if (!off.is_array() || off.size() != 2) bad(file, t + "data_offsets " + off.dump() + " must be [begin, end]");
        e.begin = offsetValue(off[0], file, name);
        e.end = offsetValue(off[1], file, name);
        if (e.begin > e.end) bad(file, t + "data_offsets " + off.dump() + ": begin is after end");
        if (e.end > dataSize)
            bad(file, t + "data_offsets " + off.dump() + " run past the end of the data (" + std::to_string(dataSize) +
                          " bytes)");
        if (elements * size != e.end - e.begin)
            bad(file, t + std::string(dtypeName(e.dtype)) + " " + shapeText(e.shape) + " is " +
                          std::to_string(elements * size) + " bytes but data_offsets " + off.dump() + " span " +
                          std::to_string(e.end - e.begin));
        h.entries.push_back(std::move(e));
    }

    // The format lays tensors out back to back: each byte of the data buffer belongs to exactly one tensor.
    std::stable_sort(h.entries.begin(), h.entries.end(), [](const Entry& a, const Entry& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    std::uint64_t cursor = 0;
    const Entry* previous = nullptr;
    for (const Entry& e : h.entries) {
        if (e.begin < cursor)
            bad(file, "tensor '" + e.name + "': data_offsets [" + std::to_string(e.begin) + ", " +
                          std::to_string(e.end) + "] overlap tensor '" + previous->name + "' [" +
                          std::to_string(previous->begin) + ", " + std::to_string(previous->end) + "]");
        if (e.begin > cursor)
            bad(file, "tensor '" + e.name + "': data_offsets [" + std::to_string(e.begin) + ", " +
                          std::to_string(e.end) + "] leave a gap of unused bytes [" + std::to_string(cursor) + ", " +
                          std::to_string(e.begin) + ") (tensors must cover the data buffer back to back)");
        cursor = e.end;
        previous = &e;
    }
    if (cursor != dataSize)
        bad(file, std::to_string(dataSize - cursor) + " trailing bytes after the last tensor (data buffer is " +
                      std::to_string(dataSize) + " bytes, tensors cover " + std::to_string(cursor) + ")");
    return h;
}

std::uint64_t headerLength(std::span<const std::uint8_t> first8, std::uint64_t fileSize, const std::string& file) {
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | first8[i];
    if (n > kMaxSafetensorsHeader)
        bad(file, "header length " + std::to_string(n) + " is absurd (more than " +
                      std::to_string(kMaxSafetensorsHeader) + " bytes): not a safetensors file?");
    if (n > fileSize - 8)
        bad(file, "header length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(fileSize) +
                      " bytes): truncated file?");
    return n;
}

[[noreturn]] void tooShort(const std::string& file, std::uint64_t size) {
    bad(file,
        "file is " + std::to_string(size) + " bytes, shorter than the 8-byte header length: not a safetensors file");
}

void checkBytes(const std::string& name, const Tensor& t) {
    for (const auto d : t.shape)
        if (d < 0)
            throw std::invalid_argument("tensor '" + name + "': negative dimension in shape " + shapeText(t.shape));
    if (t.bytes.size() != t.elements() * dtypeSize(t.dtype))
        throw std::invalid_argument("tensor '" + name + "': " + std::string(dtypeName(t.dtype)) + " " +
                                    shapeText(t.shape) + " needs " + std::to_string(t.elements() * dtypeSize(t.dtype)) +
                                    " bytes, has " + std::to_string(t.bytes.size()));
}

// 8-byte length + JSON header padded with spaces to a multiple of 8.
std::string headerBytes(const TensorMap& tensors, const std::map<std::string, std::string>& metadata) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    if (!metadata.empty()) j["__metadata__"] = metadata;
    std::uint64_t offset = 0;
    for (const auto& [name, t] : tensors) {
        if (name == "__metadata__") throw std::invalid_argument("a tensor cannot be named __metadata__");
        checkBytes(name, t);
        nlohmann::ordered_json e;
        e["dtype"] = dtypeName(t.dtype);
        e["shape"] = t.shape;
        e["data_offsets"] = {offset, offset + t.bytes.size()};
        j[name] = std::move(e);
        offset += t.bytes.size();
    }
    std::string text;
    try {
        text = j.dump();
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument(std::string("safetensors header: ") + e.what());  // e.g. a name that is not UTF-8
    }
    text.append((8 - text.size() % 8) % 8, ' ');
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[i] = char((std::uint64_t(text.size()) >> (8 * i)) & 0xFF);
    return out + text;
}

}  // namespace

std::size_t dtypeSize(DType d) {
    switch (d) {
        case DType::U8:
        case DType::I8:
        case DType::BOOL: return 1;
        case DType::U16:
        case DType::I16:
        case DType::BF16:
        case DType::F16: return 2;
        case DType::I32:
        case DType::U32:
        case DType::F32: return 4;
        case DType::I64:
        case DType::U64:
        case DType::F64: return 8;
    }
    throw std::invalid_argument("dtypeSize: bad DType " + std::to_string(int(d)));
}

std::string_view dtypeName(DType d) {
    for (const auto& [dt, n] : kDTypes)
        if (dt == d) return n;
    throw std::invalid_argument("dtypeName: bad DType " + std::to_string(int(d)));
}

std::optional<DType> parseDType(std::string_view s) {
    for (const auto& [dt, n] : kDTypes)
        if (n == s) return dt;
    return std::nullopt;
}

std::size_t Tensor::elements() const {
    std::size_t n = 1;
    for (const auto d : shape) n *= std::size_t(d);
    return n;
}

TensorMap parseSafetensors(std::span<const std::uint8_t> file, const std::string& name,
                           std::map<std::string, std::string>& metadata) {
    if (file.size() < 8) tooShort(name, file.size());
    const std::uint64_t n = headerLength(file.first(8), file.size(), name);
    const std::string_view text(reinterpret_cast<const char*>(file.data() + 8), n);
    const auto data = file.subspan(8 + n);
    Header h = parseHeader(text, data.size(), name);
    TensorMap out;
    for (Entry& e : h.entries) {
        const auto bytes = data.subspan(e.begin, e.end - e.begin);
        out.emplace(e.name, Tensor{e.dtype, std::move(e.shape), {bytes.begin(), bytes.end()}});
    }
    metadata = std::move(h.metadata);
    return out;
}

TensorMap parseSafetensors(std::span<const std::uint8_t> file, const std::string& name) {
    std::map<std::string, std::string> unused;
    return parseSafetensors(file, name, unused);
}

TensorMap readSafetensors(const std::filesystem::path& path, std::map<std::string, std::string>& metadata) {
    const std::string name = path.string();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        bad(name, ec ? "cannot read: " + ec.message() : std::string("not a regular file"));
    const std::uint64_t size = std::filesystem::file_size(path, ec);
    if (ec) bad(name, "cannot read: " + ec.message());
    std::ifstream in(path, std::ios::binary);
    if (!in) bad(name, std::string("cannot open: ") + std::strerror(errno));
    auto readAt = [&](std::uint64_t at, void* dst, std::uint64_t count) {
        in.seekg(std::streamoff(at));
        in.read(static_cast<char*>(dst), std::streamsize(count));
        if (!in) bad(name, "read failed at byte " + std::to_string(at) + " (file truncated or changed while reading)");
    };
    if (size < 8) tooShort(name, size);
    std::array<std::uint8_t, 8> first{};
    readAt(0, first.data(), 8);
    const std::uint64_t n = headerLength(first, size, name);
    std::string text(n, '\0');
    if (n) readAt(8, text.data(), n);
    Header h = parseHeader(text, size - 8 - n, name);
    TensorMap out;
    for (Entry& e : h.entries) {
        Tensor t{e.dtype, std::move(e.shape), std::vector<std::uint8_t>(e.end - e.begin)};
        if (!t.bytes.empty()) readAt(8 + n + e.begin, t.bytes.data(), t.bytes.size());
        out.emplace(e.name, std::move(t));
    }
    metadata = std::move(h.metadata);
    return out;
}

TensorMap readSafetensors(const std::filesystem::path& path) {
    std::map<std::string, std::string> unused;
    return readSafetensors(path, unused);
}

std::vector<std::uint8_t> serializeSafetensors(const TensorMap& tensors,
                                               const std::map<std::string, std::string>& metadata) {
    const std::string header = headerBytes(tensors, metadata);
    std::vector<std::uint8_t> out(header.begin(), header.end());
    for (const auto& [name, t] : tensors) out.insert(out.end(), t.bytes.begin(), t.bytes.end());
    return out;
}

void writeSafetensors(const std::filesystem::path& path, const TensorMap& tensors,
                      const std::map<std::string, std::string>& metadata) {
    const std::string header = headerBytes(tensors, metadata);  // throws before any file is touched
    std::string bytes = header;
    for (const auto& [name, t] : tensors) bytes.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
    writeFileAtomically(path, bytes, "--dump");
}

Tensor makeTensor(DType dtype, std::vector<std::int64_t> shape, std::span<const std::uint8_t> bytes) {
    Tensor t{dtype, std::move(shape), {bytes.begin(), bytes.end()}};
    checkBytes("makeTensor", t);
    return t;
}

namespace detail {
void checkTensor(const Tensor& t, DType expected, std::span<const std::int64_t> expectedShape, std::string_view name) {
    bool shapeOk = t.shape.size() == expectedShape.size();
    for (std::size_t i = 0; shapeOk && i < expectedShape.size(); ++i)
        shapeOk = expectedShape[i] == -1 || expectedShape[i] == t.shape[i];
    if (t.dtype != expected || !shapeOk)
        throw InputError(
            "tensor '" + std::string(name) + "': expected " + std::string(dtypeName(expected)) + " " +
            shapeText(expectedShape) + ", got " + std::string(dtypeName(t.dtype)) + " " + shapeText(t.shape) +
            (expectedShape.end() != std::find(expectedShape.begin(), expectedShape.end(), -1) ? " (-1 = any size)"
                                                                                              : ""));
    if (t.bytes.size() != t.elements() * dtypeSize(t.dtype))
        throw InputError("tensor '" + std::string(name) + "': " + std::to_string(t.bytes.size()) + " bytes, expected " +
                         std::to_string(t.elements() * dtypeSize(t.dtype)));
}
}  // namespace detail

const Tensor& findTensor(const TensorMap& tensors, const std::string& name, const std::string& file) {
    const auto it = tensors.find(name);
    if (it != tensors.end()) return it->second;
    std::string has;
    for (const auto& [n, t] : tensors) has += (has.empty() ? "" : ", ") + n;
    throw InputError(file + ": no tensor '" + name + "' (has: " + (has.empty() ? "none" : has) + ")",
                     InputErrorKind::not_found);
}

}  // namespace zp::probe
