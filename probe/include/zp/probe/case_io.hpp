// Case inputs, weights and dumps as safetensors files (DESIGN.md "Files and formats").
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zp/oracle/chain.hpp"
#include "zp/probe/safetensors.hpp"
#include "zp/probe/variant.hpp"

namespace zp::probe {

// CONTRACT §5.1, the one check of a request's inputs before any device work (case files,
// zeprobe::Chain::forward, moe-server): the rows m from topk_ids (top_k ids a row,
// 1 <= m <= shape.rows), then the sizes of hidden [m, H] and topk_weights [m, K], then every id
// in [0, E) (the message names (m, k) and the id). Returns m; throws InputError.
std::size_t checkRequestInputs(const oracle::ChainShape&, std::size_t hiddenValues,
                               std::span<const std::int32_t> topkIds, std::size_t topkWeightValues);
// The same for int64 ids (torch.topk's dtype): an id beyond int32 range is outside [0, E).
std::size_t checkRequestInputs(const oracle::ChainShape&, std::size_t hiddenValues,
                               std::span<const std::int64_t> topkIds, std::size_t topkWeightValues);
// §5.1's message for an id outside [0, E), for ids of any width (a JSON request's may not fit
// an int32).
std::string expertIdProblem(std::int64_t id, std::size_t m, std::size_t k, int experts);
// checkRequestInputs for exactly shape.rows rows. Throws InputError.
void validateInputs(const oracle::ChainShape&, const oracle::ChainInputs&);

// A `topk_ids` tensor's values: I32, or I64 as torch.topk returns them (any other dtype, or
// another shape, is an InputError naming the tensor). Not range-checked.
std::vector<std::int64_t> topkIdValues(const Tensor& t, std::span<const std::int64_t> expectedShape,
                                       std::string_view name);

// `hidden` BF16 [M,H], `topk_ids` I32 or I64 [M,K], `topk_weights` F32 [M,K]; validated (an I64
// id beyond int32 range is outside [0, E) like any bad id). `topkIdsDType`, when given, gets
// the file's topk_ids dtype (I32 or I64).
oracle::ChainInputs loadInputs(const std::filesystem::path&, const oracle::ChainShape&, DType* topkIdsDType = nullptr);

// CONTRACT §3 stacked tensors `{prefix}gate_up_proj_blocks` … for all E experts; this card's
// E/C experts are kept.
oracle::LocalWeights loadWeights(const std::filesystem::path&, const oracle::ChainShape&, const std::string& prefix);
// The same layout, with this card's experts and zeros elsewhere (tests and tools).
TensorMap weightsTensors(const oracle::ChainShape&, const oracle::LocalWeights&, const std::string& prefix);

// `topkIds`: the dtype topk_ids is written as, I32 or I64.
TensorMap inputTensors(const oracle::ChainShape&, const oracle::ChainInputs&, DType topkIds = DType::I32);
// Inputs plus `compact_rows` I32 [R,2] (le, m), and as BF16 `gate_up` [R,2I], `act` [R,I],
// `y` [R,H] (each only where `Materialised` says so) and `out` [M,H].
TensorMap dumpTensors(const oracle::ChainShape&, const oracle::ChainInputs&, const oracle::ChainOutputs&, Materialised,
                      DType topkIds = DType::I32);

}  // namespace zp::probe
