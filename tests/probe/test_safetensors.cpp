#include "zp/probe/safetensors.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <unistd.h>

#include "zp/probe/case_io.hpp"

namespace zp::probe {
namespace {

using Bytes = std::vector<std::uint8_t>;

// 8-byte little-endian length, the header text as given, then the data buffer.
Bytes fileWith(const std::string& header, const Bytes& data = {}) {
    Bytes out(8);
    for (int i = 0; i < 8; ++i) out[i] = std::uint8_t((std::uint64_t(header.size()) >> (8 * i)) & 0xFF);
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), data.begin(), data.end());
    return out;
}

// The InputError message of parsing `file`, or "" when it parsed.
std::string parseError(const Bytes& file) {
    try {
        parseSafetensors(file, "t.safetensors");
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

#define EXPECT_REJECTED(file, fragment)                            \
    do {                                                           \
        const std::string msg_ = parseError(file);                 \
        EXPECT_EQ(msg_.rfind("t.safetensors: ", 0), 0u) << msg_;   \
        EXPECT_NE(msg_.find(fragment), std::string::npos) << msg_; \
    } while (0)

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
}

TensorMap sampleTensors() {
    TensorMap m;
    const std::vector<std::uint16_t> hidden{0x3F80, 0x4000, 0xC040, 0x7FC0, 0x0001, 0x8000};
    const std::vector<std::int32_t> ids{0, 5, 47, 48, -1, 191};
    const std::vector<float> weights{0.5f, -1.25f, 3.0f, 1e-40f, 0.0f, -0.0f};
    m["hidden"] = makeTensor(DType::BF16, {2, 3}, hidden);
    m["topk_ids"] = makeTensor(DType::I32, {2, 3}, ids);
    m["topk_weights"] = makeTensor(DType::F32, {2, 3}, weights);
    m["empty"] = makeTensor(DType::U8, {0, 16}, Bytes{});
    m["scalar"] = makeTensor(DType::F64, {}, std::vector<double>{2.5});
    return m;
}

// ---- dtypes ----

TEST(Safetensors, GivenEveryDType_WhenNamedAndParsed_ThenNameRoundTripsWithItsSize) {
    const std::vector<std::pair<DType, std::size_t>> all{
        {DType::U8, 1},  {DType::I8, 1},  {DType::U16, 2}, {DType::I16, 2}, {DType::BF16, 2},
        {DType::F16, 2}, {DType::I32, 4}, {DType::U32, 4}, {DType::F32, 4}, {DType::I64, 8},
        {DType::U64, 8}, {DType::F64, 8}, {DType::BOOL, 1}};
    for (const auto& [d, size] : all) {
        EXPECT_EQ(parseDType(dtypeName(d)), d) << dtypeName(d);
        EXPECT_EQ(dtypeSize(d), size) << dtypeName(d);
    }
    EXPECT_EQ(dtypeName(DType::BF16), "BF16");
    EXPECT_EQ(parseDType("bf16"), std::nullopt);
    EXPECT_EQ(parseDType("F8_E4M3"), std::nullopt);
}

// ---- round trips ----

TEST(Safetensors, GivenTensors_WhenSerializedAndParsed_ThenTensorsAndMetadataAreIdentical) {
    const TensorMap m = sampleTensors();
    const std::map<std::string, std::string> meta{{"format", "pt"}, {"contract", "1"}};
    const Bytes bytes = serializeSafetensors(m, meta);
    std::map<std::string, std::string> metaBack;
    const TensorMap back = parseSafetensors(bytes, "mem", metaBack);
    EXPECT_EQ(back, m);
    EXPECT_EQ(metaBack, meta);
    EXPECT_EQ(serializeSafetensors(back, metaBack), bytes);
}

TEST(Safetensors, GivenTensors_WhenSerialized_ThenHeaderIsSpacePaddedToEightAndDataIsInNameOrder) {
    TensorMap m;
    m["b"] = makeTensor(DType::U8, {2}, Bytes{0xB0, 0xB1});
    m["a"] = makeTensor(DType::U8, {3}, Bytes{0xA0, 0xA1, 0xA2});
    const Bytes bytes = serializeSafetensors(m);
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
    EXPECT_EQ(n % 8, 0u);
    const std::string header(bytes.begin() + 8, bytes.begin() + 8 + std::ptrdiff_t(n));
    EXPECT_EQ(
        header.substr(0, header.find_last_not_of(' ') + 1),
        R"({"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},"b":{"dtype":"U8","shape":[2],"data_offsets":[3,5]}})");
    EXPECT_EQ(Bytes(bytes.begin() + 8 + std::ptrdiff_t(n), bytes.end()), (Bytes{0xA0, 0xA1, 0xA2, 0xB0, 0xB1}));
}

TEST(Safetensors, GivenMetadata_WhenSerialized_ThenMetadataComesFirst) {
    const Bytes bytes = serializeSafetensors({{"x", makeTensor(DType::U8, {1}, Bytes{7})}}, {{"k", "v"}});
    const std::string header(bytes.begin() + 8, bytes.end());
    EXPECT_EQ(header.rfind(R"({"__metadata__":{"k":"v"},"x":)", 0), 0u) << header;
}

TEST(Safetensors, GivenAFileAsTheReferenceWriterLaysItOut_WhenParsed_ThenValuesAreRead) {
    // Two F32 and one I32 little-endian, header as written by the Python package (padded).
    std::string header =
        R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"I32","shape":[1],"data_offsets":[8,12]}})";
    header.append((8 - header.size() % 8) % 8, ' ');
    const Bytes file = fileWith(header, {0, 0, 0x80, 0x3F, 0, 0, 0, 0xC0, 0xFF, 0xFF, 0xFF, 0xFF});
    const TensorMap m = parseSafetensors(file, "ref");
    EXPECT_EQ(tensorValues<float>(m.at("a"), DType::F32, {2}, "a"), (std::vector<float>{1.0f, -2.0f}));
    EXPECT_EQ(tensorValues<std::int32_t>(m.at("b"), DType::I32, {1}, "b"), (std::vector<std::int32_t>{-1}));
}

TEST(Safetensors, GivenTensors_WhenWrittenAndRead_ThenFileBytesAndTensorsAreIdenticalAndNoTempFileRemains) {
    const auto dir = std::filesystem::path(testing::TempDir()) / "zp_safetensors_rt";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const auto path = dir / "case.safetensors";
    const TensorMap m = sampleTensors();
    writeSafetensors(path, m, {{"contract", "1"}});
    writeSafetensors(path, m, {{"contract", "1"}});  // over an existing file
    std::ifstream in(path, std::ios::binary);
    const Bytes onDisk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(onDisk, serializeSafetensors(m, {{"contract", "1"}}));
    std::map<std::string, std::string> meta;
    EXPECT_EQ(readSafetensors(path, meta), m);
    EXPECT_EQ(meta.at("contract"), "1");
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1);
    std::filesystem::remove_all(dir);
}

TEST(Safetensors, GivenAMissingFile_WhenRead_ThenInputErrorNamesThePath) {
    try {
        readSafetensors("/nonexistent/zp/w.safetensors");
        FAIL() << "no error";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/zp/w.safetensors: "), std::string::npos) << e.what();
    }
}

TEST(Safetensors, GivenATruncatedFileOnDisk_WhenRead_ThenInputErrorSaysRunsPastEnd) {
    const auto path = std::filesystem::path(testing::TempDir()) / "zp_truncated.safetensors";
    Bytes bytes = serializeSafetensors(sampleTensors());
    bytes.resize(bytes.size() - 3);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    try {
        readSafetensors(path);
        FAIL() << "no error";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("run past the end of the data"), std::string::npos) << e.what();
    }
    std::filesystem::remove(path);
}

// ---- typed helpers ----

TEST(Safetensors, GivenATensor_WhenValuesAskedWithWrongDType_ThenInputErrorNamesExpectedAndGot) {
    const TensorMap m = sampleTensors();
    try {
        tensorValues<float>(m.at("topk_ids"), DType::F32, {2, 3}, "topk_ids");
        FAIL() << "no error";
    } catch (const InputError& e) {
        EXPECT_STREQ(e.what(), "tensor 'topk_ids': expected F32 [2, 3], got I32 [2, 3]");
    }
}

TEST(Safetensors, GivenATensor_WhenValuesAskedWithWrongShape_ThenInputErrorNamesExpectedAndGot) {
    const TensorMap m = sampleTensors();
    try {
        tensorValues<std::uint16_t>(m.at("hidden"), DType::BF16, {2, 4096}, "hidden");
        FAIL() << "no error";
    } catch (const InputError& e) {
        EXPECT_STREQ(e.what(), "tensor 'hidden': expected BF16 [2, 4096], got BF16 [2, 3]");
    }
}

TEST(Safetensors, GivenAWildcardDimension_WhenValuesAsked_ThenAnySizeMatchesAndValuesAreCopied) {
    const TensorMap m = sampleTensors();
    EXPECT_EQ(tensorValues<std::int32_t>(m.at("topk_ids"), DType::I32, {-1, 3}, "topk_ids"),
              (std::vector<std::int32_t>{0, 5, 47, 48, -1, 191}));
}

TEST(Safetensors, GivenBytesOfTheWrongLength_WhenMakingATensor_ThenInvalidArgumentNamesTheSizes) {
    try {
        makeTensor(DType::F32, {2, 2}, Bytes(15));
        FAIL() << "no error";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("needs 16 bytes, has 15"), std::string::npos) << e.what();
    }
}

TEST(Safetensors, GivenAMissingTensorName_WhenFound_ThenInputErrorListsTheNamesPresent) {
    try {
        findTensor(sampleTensors(), "gate_up_proj_blocks", "w.safetensors");
        FAIL() << "no error";
    } catch (const InputError& e) {
        EXPECT_STREQ(
            e.what(),
            "w.safetensors: no tensor 'gate_up_proj_blocks' (has: empty, hidden, scalar, topk_ids, topk_weights)");
    }
}

// ---- case inputs: topk_ids as I32 or I64 (torch.topk's dtype) ----

TEST(SafetensorsCaseInputs, GivenI64TopkIds_WhenWrittenAndLoaded_ThenTheSameInputsAndTheDTypeIsReported) {
    oracle::ChainShape s;
    s.hidden = 64;
    s.intermediate = 32;
    s.experts = 48;
    s.topK = 3;
    s.rows = 2;
    oracle::ChainInputs in;
    in.hidden.assign(std::size_t(s.rows * s.hidden), 0x3F80);
    in.topkIds = {0, 12, 47, 13, 13, 5};
    in.topkWeights = {0.5f, -1.0f, 0.25f, 1.0f, 2.0f, -0.5f};
    const auto dir = std::filesystem::temp_directory_path() / ("zp-st-i64-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    for (const DType d : {DType::I64, DType::I32}) {
        const auto file = dir / (std::string(dtypeName(d)) + ".safetensors");
        writeSafetensors(file, inputTensors(s, in, d));
        EXPECT_EQ(readSafetensors(file).at("topk_ids").dtype, d);
        DType got = DType::U8;
        const oracle::ChainInputs back = loadInputs(file, s, &got);
        EXPECT_EQ(got, d);
        EXPECT_EQ(back.topkIds, in.topkIds);
        EXPECT_EQ(back.hidden, in.hidden);
        EXPECT_EQ(back.topkWeights, in.topkWeights);
    }
    // An I64 id beyond int32 range (low 32 bits a valid id) is invalid like any bad id; another
    // dtype is rejected naming both accepted ones.
    for (const std::int64_t bad : {(std::int64_t(1) << 32) + 12, std::int64_t(1) << 31, std::int64_t(-1),
                                   std::numeric_limits<std::int64_t>::min()}) {
        TensorMap t = inputTensors(s, in, DType::I64);
        std::vector<std::int64_t> ids(in.topkIds.begin(), in.topkIds.end());
        ids[4] = bad;
        t["topk_ids"] = makeTensor(DType::I64, {2, 3}, ids);
        writeSafetensors(dir / "bad.safetensors", t);
        try {
            loadInputs(dir / "bad.safetensors", s);
            ADD_FAILURE() << bad << " accepted";
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find("topk_ids[1][1] = " + std::to_string(bad) +
                                                 " is not an expert id in [0, 48)"),
                      std::string::npos)
                << e.what();
        }
    }
    TensorMap t = inputTensors(s, in);
    t["topk_ids"] = makeTensor(DType::F32, {2, 3}, in.topkWeights);
    writeSafetensors(dir / "f32.safetensors", t);
    try {
        loadInputs(dir / "f32.safetensors", s);
        ADD_FAILURE() << "F32 topk_ids accepted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("expected I32 or I64"), std::string::npos) << e.what();
    }
    std::filesystem::remove_all(dir);
}

// ---- hostile files: one row per kind of bad input ----

// The file with header "{}" and its 8-byte length field set to `length`.
Bytes withHeaderLength(std::uint64_t length) {
    Bytes f = fileWith("{}");
    for (int i = 0; i < 8; ++i) f[i] = std::uint8_t((length >> (8 * i)) & 0xFF);
    return f;
}

// A file of one tensor entry (entry()'s fields) followed by `dataBytes` zero bytes of data.
Bytes oneTensor(const std::string& name, const std::string& dtype, const std::string& shape, const std::string& offsets,
                std::size_t dataBytes = 0) {
    return fileWith("{" + entry(name, dtype, shape, offsets) + "}", Bytes(dataBytes));
}

// A file of two tensor entries (each {name, dtype, shape, data_offsets}) and `dataBytes` zero bytes.
Bytes twoTensors(const std::array<std::string, 4>& a, const std::array<std::string, 4>& b, std::size_t dataBytes) {
    return fileWith("{" + entry(a[0], a[1], a[2], a[3]) + "," + entry(b[0], b[1], b[2], b[3]) + "}", Bytes(dataBytes));
}

struct BadFile {
    const char* what;  // what is wrong with it
    Bytes file;
    const char* fragment;  // the InputError must name it
};

TEST(SafetensorsBad, GivenEachKindOfMalformedFile_WhenParsed_ThenInputErrorNamesTheFileAndWhatIsWrong) {
    const BadFile rows[] = {
        {"a file shorter than 8 bytes", Bytes({1, 0, 0}), "file is 3 bytes, shorter than the 8-byte header length"},
        {"a header length past the end of the file", withHeaderLength(200),
         "header length 200 runs past the end of the file (10 bytes)"},
        {"an absurd header length (read without allocating)", withHeaderLength(UINT64_MAX),
         "header length 18446744073709551615 is absurd"},
        {"an empty header", fileWith(""), "header is not valid JSON"},
        {"a header that is not JSON", fileWith("{\"a\": [0, 1"), "header is not valid JSON"},
        {"a header that is not an object", fileWith("[1, 2]"), "header must be a JSON object, got array"},
        {"invalid UTF-8 in a name", fileWith("{\"\xC3\x28\":{}}"), "header is not valid JSON"},
        {"an unknown dtype", oneTensor("w", "F8_E4M3", "[1]", "[0,1]", 1),
         "tensor 'w': unknown dtype \"F8_E4M3\" (known: U8, I8, U16"},
        {"a dtype that is not a string", fileWith(R"({"w":{"dtype":4,"shape":[1],"data_offsets":[0,1]}})", {0}),
         "tensor 'w': dtype 4 must be a string"},
        {"shape times size different from the byte range", oneTensor("w", "F32", "[2,3]", "[0,20]", 20),
         "tensor 'w': F32 [2, 3] is 24 bytes but data_offsets [0,20] span 20"},
        {"offsets outside the data", oneTensor("w", "U8", "[8]", "[4,12]", 8),
         "tensor 'w': data_offsets [4,12] run past the end of the data (8 bytes)"},
        {"begin after end", oneTensor("w", "U8", "[0]", "[4,2]", 8), "data_offsets [4,2]: begin is after end"},
        {"overlapping offsets", twoTensors({"a", "U8", "[4]", "[0,4]"}, {"b", "U8", "[4]", "[2,6]"}, 6),
         "tensor 'b': data_offsets [2, 6] overlap tensor 'a' [0, 4]"},
        {"two tensors on the same bytes", twoTensors({"a", "U8", "[4]", "[0,4]"}, {"b", "I32", "[1]", "[0,4]"}, 4),
         "overlap tensor 'a' [0, 4]"},
        {"a gap between tensors", twoTensors({"a", "U8", "[2]", "[0,2]"}, {"b", "U8", "[2]", "[4,6]"}, 6),
         "tensor 'b': data_offsets [4, 6] leave a gap of unused bytes [2, 4)"},
        {"trailing bytes after the last tensor", oneTensor("a", "U8", "[2]", "[0,2]", 5),
         "3 trailing bytes after the last tensor"},
        {"a negative dimension", oneTensor("w", "U8", "[-2,-4]", "[0,8]", 8),
         "tensor 'w': shape [-2,-4] has a negative dimension -2"},
        {"a fractional dimension", oneTensor("w", "U8", "[2.5]", "[0,2]", 2), "has a non-integer dimension 2.5"},
        {"a shape whose product overflows (2^32 x 2^32 wraps to 0 in u64: not an empty tensor)",
         oneTensor("w", "U8", "[4294967296,4294967296]", "[0,0]"), "has more elements than any file can hold"},
        {"a shape that is not an array", oneTensor("w", "U8", "4", "[0,4]", 4),
         "tensor 'w': shape 4 must be an array of non-negative integers"},
        {"a fractional offset", oneTensor("w", "U8", "[4]", "[0,4.0]", 4),
         "tensor 'w': data_offsets value 4.0 is not a non-negative integer"},
        {"an offset that is a string", oneTensor("w", "U8", "[4]", "[\"0\",4]", 4),
         "data_offsets value \"0\" is not a non-negative integer"},
        {"a negative offset", oneTensor("w", "U8", "[4]", "[-1,3]", 4),
         "data_offsets value -1 is not a non-negative integer"},
        {"offsets that are not a pair", oneTensor("w", "U8", "[4]", "[0,4,4]", 4),
         "tensor 'w': data_offsets [0,4,4] must be [begin, end]"},
        {"a duplicate tensor name", twoTensors({"w", "U8", "[2]", "[0,2]"}, {"w", "U8", "[2]", "[2,4]"}, 4),
         "header has the key 'w' twice"},
        {"a duplicate key inside an entry",
         fileWith(R"({"w":{"dtype":"U8","dtype":"I8","shape":[1],"data_offsets":[0,1]}})", Bytes(1)),
         "header has the key 'dtype' twice"},
        {"an entry with an extra key",
         fileWith(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"align":64}})", Bytes(1)),
         "tensor 'w': unknown key 'align' (expected dtype, shape, data_offsets)"},
        {"an entry without shape", fileWith(R"({"w":{"dtype":"U8","data_offsets":[0,1]}})", Bytes(1)),
         "tensor 'w': missing 'shape'"},
        {"an entry that is not an object", fileWith(R"({"w":[0,1]})", Bytes(1)), "tensor 'w': entry must be an object"},
        {"metadata values that are not strings", fileWith(R"({"__metadata__":{"format":"pt","layers":43}})"),
         "__metadata__ 'layers': value 43 must be a string"},
        {"metadata that is not an object", fileWith(R"({"__metadata__":"pt"})"),
         "__metadata__ must be an object of strings, got string"},
    };
    for (const BadFile& r : rows) {
        SCOPED_TRACE(r.what);
        EXPECT_REJECTED(r.file, r.fragment);
    }
}

TEST(SafetensorsBad, GivenDeeplyNestedJson_WhenParsed_ThenRejectedQuickly) {
    const std::string deep = "{\"w\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
    EXPECT_REJECTED(fileWith(deep), "header nests deeper than a safetensors header can");
}

TEST(SafetensorsBad, GivenEveryTruncationAndByteFlipOfAValidFile_WhenParsed_ThenEachParsesOrIsAnInputError) {
    const Bytes good = serializeSafetensors(sampleTensors(), {{"k", "v"}});
    int rejected = 0, parsed = 0;
    auto attempt = [&](const Bytes& f) {
        try {
            parseSafetensors(f, "fuzz");
            ++parsed;
        } catch (const InputError& e) {
            ++rejected;
            EXPECT_EQ(std::string(e.what()).rfind("fuzz: ", 0), 0u) << e.what();
        }
    };
    for (std::size_t n = 0; n < good.size(); ++n) attempt(Bytes(good.begin(), good.begin() + std::ptrdiff_t(n)));
    for (std::size_t i = 0; i < good.size(); ++i)
        for (const std::uint8_t x : {std::uint8_t(0x01), std::uint8_t(0x80), std::uint8_t(0xFF)}) {
            Bytes f = good;
            f[i] ^= x;
            attempt(f);
        }
    EXPECT_EQ(rejected + parsed, int(good.size() * 4));
    EXPECT_GE(rejected, int(good.size()));  // every truncation is rejected, at least
}

}  // namespace
}  // namespace zp::probe
