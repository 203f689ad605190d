// Fuzz target: case inputs from a file, i.e. what loadInputs does: bytes → safetensors →
// `hidden` BF16 [M,H], `topk_ids` I32 or I64 [M,K], `topk_weights` F32 [M,K] → validateInputs.
//
// Input layout: 4 bytes choosing the shape (so that mismatches between file and shape are
// explored too), then the safetensors file.
//   byte 0: rows M = 1 + b % 8      byte 2: hidden H = 32 × (1 + b % 4)
//   byte 1: top_k K = 1 + b % 8     byte 3: cards C = 1 + (b >> 6), experts E = C × (1 + b % 64)
// Properties: only InputError escapes; loadInputs (through a file) agrees with the
// in-memory path; accepted inputs are ones the oracle can compact (compactRoutes does not
// throw, every route row is in range).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "fuzz_support.hpp"
#include "zp/oracle/chain.hpp"
#include "zp/probe/case_io.hpp"
#include "zp/probe/safetensors.hpp"

using namespace zp;
using namespace zp::probe;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 4) return 0;
    oracle::ChainShape s;
    s.rows = 1 + data[0] % 8;
    s.topK = 1 + data[1] % 8;
    s.hidden = 32 * (1 + data[2] % 4);
    s.intermediate = 32;
    s.cards = 1 + (data[3] >> 6);
    s.experts = s.cards * (1 + data[3] % 64);
    s.card = s.cards - 1;
    oracle::validateShape(s);  // by construction; a throw here is a harness bug
    const std::span<const std::uint8_t> file(data + 4, size - 4);

    oracle::ChainInputs in;
    bool ok = false;
    std::string error;
    try {
        const TensorMap t = parseSafetensors(file, "fuzz.safetensors");
        const std::int64_t mh[] = {s.rows, s.hidden}, mk[] = {s.rows, s.topK};
        in.hidden = tensorValues<oracle::bf16_t>(findTensor(t, "hidden", "fuzz"), DType::BF16, mh, "hidden");
        const auto ids = topkIdValues(findTensor(t, "topk_ids", "fuzz"), mk, "topk_ids");  // I32 or I64
        in.topkWeights = tensorValues<float>(findTensor(t, "topk_weights", "fuzz"), DType::F32, mk, "topk_weights");
        checkRequestInputs(s, in.hidden.size(), ids, in.topkWeights.size());
        in.topkIds.assign(ids.begin(), ids.end());
        validateInputs(s, in);
        ok = true;
    } catch (const InputError& e) {
        error = e.what();
    }

    static zp::fuzz::MemFile mem;
    const std::string& path = mem.write(file);
    oracle::ChainInputs loaded;
    bool loadOk = false;
    std::string loadError;
    try {
        loaded = loadInputs(path, s);
        loadOk = true;
    } catch (const InputError& e) {
        loadError = e.what();
    }
    ZP_FUZZ_CHECK(ok == loadOk, "loadInputs and the in-memory path disagree: '" + error + "' vs '" + loadError + "'");
    if (!ok) return 0;
    // Bit for bit: a NaN weight is valid input, and NaN != NaN as a float.
    auto sameBits = [](const auto& a, const auto& b) {
        return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0;
    };
    ZP_FUZZ_CHECK(sameBits(loaded.hidden, in.hidden) && sameBits(loaded.topkIds, in.topkIds) &&
                      sameBits(loaded.topkWeights, in.topkWeights),
                  "loadInputs returns different bits");

    // validateInputs is the gate in front of the oracle and the device: what it accepts, §5.2 compaction takes.
    const oracle::CompactRoutes r = oracle::compactRoutes(s, in.topkIds);
    ZP_FUZZ_CHECK(r.rows.size() <= std::size_t(s.rows) * s.topK, "more compact rows than routes");
    ZP_FUZZ_CHECK(r.routeRow.size() == std::size_t(s.rows) * s.topK, "routeRow is not [M, K]");
    for (const std::int32_t row : r.routeRow)
        ZP_FUZZ_CHECK(row >= -1 && row < std::int32_t(r.rows.size()),
                      "route row " + std::to_string(row) + " out of range");
    for (const auto& row : r.rows)
        ZP_FUZZ_CHECK(
            row.localExpert >= 0 && row.localExpert < s.localExperts() && row.tokenRow >= 0 && row.tokenRow < s.rows,
            "compact row out of range");
    return 0;
}
