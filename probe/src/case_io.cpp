#include "zp/probe/case_io.hpp"

#include <cstring>

#include "zp/probe/input_error.hpp"

namespace zp::probe {
using oracle::ChainShape;

std::string expertIdProblem(std::int64_t id, std::size_t m, std::size_t k, int experts) {
    return "topk_ids[" + std::to_string(m) + "][" + std::to_string(k) + "] = " + std::to_string(id) +
           " is not an expert id in [0, " + std::to_string(experts) + ")";
}

namespace {

template <class Id>
std::size_t checkRequestInputsOf(const ChainShape& s, std::size_t hiddenValues, std::span<const Id> topkIds,
                                 std::size_t topkWeightValues) {
    const std::size_t H = std::size_t(s.hidden), K = std::size_t(s.topK), M = std::size_t(s.rows);
    if (topkIds.empty() || topkIds.size() % K != 0)
        throw InputError("topk_ids has " + std::to_string(topkIds.size()) +
                         " values, expected rows*top_k with top_k = " + std::to_string(K) +
                         " and 1 <= rows <= " + std::to_string(M));
    const std::size_t m = topkIds.size() / K;
    if (m > M)
        throw InputError("rows = " + std::to_string(m) + " (topk_ids has " + std::to_string(topkIds.size()) +
                         " values) exceeds the chain's rows = " + std::to_string(M) +
                         " (Shape::rows sizes the buffers)");
    if (hiddenValues != m * H)
        throw InputError("hidden has " + std::to_string(hiddenValues) + " values, expected rows*hidden = " +
                         std::to_string(m) + "*" + std::to_string(H) + " = " + std::to_string(m * H));
    if (topkWeightValues != m * K)
        throw InputError("topk_weights has " + std::to_string(topkWeightValues) +
                         " values, expected rows*top_k = " + std::to_string(m * K));
    for (std::size_t r = 0; r < m; ++r)
        for (std::size_t k = 0; k < K; ++k) {
            const std::int64_t id = topkIds[r * K + k];
            if (id < 0 || id >= s.experts) throw InputError(expertIdProblem(id, r, k, s.experts));
        }
    return m;
}

}  // namespace

std::size_t checkRequestInputs(const ChainShape& s, std::size_t hiddenValues, std::span<const std::int32_t> topkIds,
                               std::size_t topkWeightValues) {
    return checkRequestInputsOf(s, hiddenValues, topkIds, topkWeightValues);
}

std::size_t checkRequestInputs(const ChainShape& s, std::size_t hiddenValues, std::span<const std::int64_t> topkIds,
                               std::size_t topkWeightValues) {
    return checkRequestInputsOf(s, hiddenValues, topkIds, topkWeightValues);
}

void validateInputs(const ChainShape& s, const oracle::ChainInputs& in) {
    const std::size_t m = checkRequestInputs(s, in.hidden.size(), in.topkIds, in.topkWeights.size());
    if (m != std::size_t(s.rows))
        throw InputError("topk_ids has " + std::to_string(in.topkIds.size()) +
                         " values, expected rows*top_k = " + std::to_string(std::size_t(s.rows) * s.topK));
}

std::vector<std::int64_t> topkIdValues(const Tensor& t, std::span<const std::int64_t> expectedShape,
                                       std::string_view name) {
    if (t.dtype == DType::I64) return tensorValues<std::int64_t>(t, DType::I64, expectedShape, name);
    if (t.dtype != DType::I32)
        throw InputError("tensor '" + std::string(name) + "': expected I32 or I64 (torch.topk's int64), got " +
                         std::string(dtypeName(t.dtype)));
    const auto narrow = tensorValues<std::int32_t>(t, DType::I32, expectedShape, name);
    return std::vector<std::int64_t>(narrow.begin(), narrow.end());
}

oracle::ChainInputs loadInputs(const std::filesystem::path& file, const ChainShape& s, DType* topkIdsDType) {
    const TensorMap t = readSafetensors(file);
    const std::int64_t M = s.rows, H = s.hidden, K = s.topK;
    oracle::ChainInputs in;
    const std::int64_t mh[] = {M, H}, mk[] = {M, K};
    in.hidden = tensorValues<oracle::bf16_t>(findTensor(t, "hidden", file.string()), DType::BF16, mh,
                                             file.string() + ": hidden");
    const Tensor& ids = findTensor(t, "topk_ids", file.string());
    const std::vector<std::int64_t> wide = topkIdValues(ids, mk, file.string() + ": topk_ids");
    in.topkWeights = tensorValues<float>(findTensor(t, "topk_weights", file.string()), DType::F32, mk,
                                         file.string() + ": topk_weights");
    try {
        // Checked as given (an I64 id beyond int32 range names itself), then narrowed: exact.
        checkRequestInputs(s, in.hidden.size(), wide, in.topkWeights.size());
        in.topkIds.assign(wide.begin(), wide.end());
        validateInputs(s, in);
    } catch (const InputError& e) {
        throw InputError(file.string() + ": " + e.what(), e.kind());
    }
    if (topkIdsDType) *topkIdsDType = ids.dtype;
    return in;
}

oracle::LocalWeights loadWeights(const std::filesystem::path& file, const ChainShape& s, const std::string& prefix) {
    const TensorMap t = readSafetensors(file);
    const std::int64_t E = s.experts, H = s.hidden, I = s.intermediate;
    struct Part {
        const char* name;
        std::vector<std::int64_t> shape;
        std::vector<std::uint8_t> oracle::LocalWeights::*member;
    };
    const Part parts[] = {
        {"gate_up_proj_blocks", {E, 2 * I, H / 32, 16}, &oracle::LocalWeights::w1Blocks},
        {"gate_up_proj_scales", {E, 2 * I, H / 32}, &oracle::LocalWeights::w1Scales},
        {"down_proj_blocks", {E, H, I / 32, 16}, &oracle::LocalWeights::w2Blocks},
        {"down_proj_scales", {E, H, I / 32}, &oracle::LocalWeights::w2Scales},
    };
    oracle::LocalWeights w;
    for (const Part& p : parts) {
        const std::string name = prefix + p.name;
        const Tensor& tensor = findTensor(t, name, file.string());
        if (tensor.dtype != DType::U8 || tensor.shape != p.shape) {
            std::string want = "U8 [";
            for (std::size_t i = 0; i < p.shape.size(); ++i) want += (i ? ", " : "") + std::to_string(p.shape[i]);
            throw InputError(file.string() + ": " + name + " must be " + want +
                             "] for this configuration (CONTRACT §3)");
        }
        const std::size_t perExpert = tensor.bytes.size() / std::size_t(E);
        const auto first = tensor.bytes.begin() + std::ptrdiff_t(perExpert * std::size_t(s.firstLocalExpert()));
        (w.*p.member).assign(first, first + std::ptrdiff_t(perExpert * std::size_t(s.localExperts())));
    }
    return w;
}

TensorMap weightsTensors(const ChainShape& s, const oracle::LocalWeights& w, const std::string& prefix) {
    const std::int64_t E = s.experts, H = s.hidden, I = s.intermediate;
    auto stacked = [&](const std::vector<std::uint8_t>& local) {
        std::vector<std::uint8_t> all(local.size() / std::size_t(s.localExperts()) * std::size_t(E), 0);
        std::memcpy(all.data() + local.size() / std::size_t(s.localExperts()) * std::size_t(s.firstLocalExpert()),
                    local.data(), local.size());
        return all;
    };
    TensorMap t;
    t.emplace(prefix + "gate_up_proj_blocks", makeTensor(DType::U8, {E, 2 * I, H / 32, 16}, stacked(w.w1Blocks)));
    t.emplace(prefix + "gate_up_proj_scales", makeTensor(DType::U8, {E, 2 * I, H / 32}, stacked(w.w1Scales)));
    t.emplace(prefix + "down_proj_blocks", makeTensor(DType::U8, {E, H, I / 32, 16}, stacked(w.w2Blocks)));
    t.emplace(prefix + "down_proj_scales", makeTensor(DType::U8, {E, H, I / 32}, stacked(w.w2Scales)));
    return t;
}

TensorMap inputTensors(const ChainShape& s, const oracle::ChainInputs& in, DType topkIds) {
    TensorMap t;
    t.emplace("hidden", makeTensor(DType::BF16, {s.rows, s.hidden}, in.hidden));
    if (topkIds == DType::I64)
        t.emplace("topk_ids", makeTensor(DType::I64, {s.rows, s.topK},
                                         std::vector<std::int64_t>(in.topkIds.begin(), in.topkIds.end())));
    else if (topkIds == DType::I32)
        t.emplace("topk_ids", makeTensor(DType::I32, {s.rows, s.topK}, in.topkIds));
    else
        throw std::invalid_argument("inputTensors: topk_ids as " + std::string(dtypeName(topkIds)) +
                                    " (I32 or I64 only)");
    t.emplace("topk_weights", makeTensor(DType::F32, {s.rows, s.topK}, in.topkWeights));
    return t;
}

TensorMap dumpTensors(const ChainShape& s, const oracle::ChainInputs& in, const oracle::ChainOutputs& o,
                      Materialised mat, DType topkIds) {
    TensorMap t = inputTensors(s, in, topkIds);
    const std::int64_t R = std::int64_t(o.routes.rows.size());
    std::vector<std::int32_t> rows;
    for (const auto& r : o.routes.rows) rows.insert(rows.end(), {r.localExpert, r.tokenRow});
    t.emplace("compact_rows", makeTensor(DType::I32, {R, 2}, rows));
    if (mat.gateUp) t.emplace("gate_up", makeTensor(DType::BF16, {R, 2 * std::int64_t(s.intermediate)}, o.gateUp));
    if (mat.act) t.emplace("act", makeTensor(DType::BF16, {R, std::int64_t(s.intermediate)}, o.act));
    if (mat.y) t.emplace("y", makeTensor(DType::BF16, {R, std::int64_t(s.hidden)}, o.y));
    t.emplace("out", makeTensor(DType::BF16, {s.rows, s.hidden}, o.out));
    return t;
}

}  // namespace zp::probe
