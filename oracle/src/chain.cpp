#include "zp/oracle/chain.hpp"

#include <algorithm>
#include <limits>
#include <cmath>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace zp::oracle {
namespace {

// Magnitude bits in [1, 2^23 - 1]: a zero exponent and a nonzero mantissa (branch-free).
bool isSubnormal(float f) { return (std::bit_cast<std::uint32_t>(f) & 0x7FFFFFFFu) - 1u < 0x007FFFFFu; }
bool isSubnormalBf16(bf16_t b) { return (b & 0x7F80u) == 0 && (b & 0x007Fu) != 0; }

void reject(const std::string& key, const std::string& value, const std::string& why) {
    throw std::invalid_argument(key + " = " + value + ": " + why);
}

// The 32-step chains of blocks b0 .. b0+G-1 stepped side by side (independent chains: the CPU
// overlaps their latency), each in its own order, then added to their lanes in ascending block
// order, as dotMxfp4 does; notes whether any intermediate went subnormal (§2).
template <int G>
[[gnu::always_inline]] inline void dotBlocks(const bf16_t* a, const std::uint8_t* codes, const std::uint8_t* scales,
                                             int b0, float (&acc)[16], bool& s) {
    float p[G] = {};
    for (int j = 0; j < 32; ++j)
#pragma GCC unroll 8
        for (int t = 0; t < G; ++t) {
            const int b = b0 + t;
            const float x = f32FromBf16(a[32 * b + j]);
            p[t] = std::fma(e2m1(mxfp4Code(codes + std::size_t(b) * 16, j)), x, p[t]);
            s |= isSubnormal(p[t]);
            s |= isSubnormal(x);
        }
    for (int t = 0; t < G; ++t) {
        const int b = b0 + t;
        const float scale = e8m0(scales[b]);
        const float q = p[t] * scale;
        acc[b % 16] = acc[b % 16] + q;
        s |= isSubnormal(scale) || isSubnormal(q) || isSubnormal(acc[b % 16]);
    }
}

// dotMxfp4, noting subnormal intermediates. Inlined into two entry points below: std::fma is one
// correctly rounded operation either way, so both give the same bits.
[[gnu::always_inline]] inline float dotTrackedBody(const bf16_t* a, const std::uint8_t* codes,
                                                   const std::uint8_t* scales, int K, bool& sub) {
    constexpr int G = 4;
    const int blocks = K / 32;
    float acc[16] = {};
    bool s = false;
    int b0 = 0;
    for (; b0 + G <= blocks; b0 += G) dotBlocks<G>(a, codes, scales, b0, acc, s);
    for (; b0 < blocks; ++b0) dotBlocks<1>(a, codes, scales, b0, acc, s);
    for (int o = 8; o >= 1; o >>= 1)
        for (int l = 0; l < o; ++l) {
            acc[l] = acc[l] + acc[l + o];
            s |= isSubnormal(acc[l]);
        }
    sub |= s;
    return acc[0];
}

#if defined(__x86_64__) && defined(__GNUC__)
// Built for FMA hardware: std::fma is then one instruction, not a libm call (the oracle is most
// of a host-side case's time). -ffp-contract=off (CMakeLists.txt) keeps every other multiply and
// add separate here too.
[[gnu::target("fma")]] float dotTrackedFma(const bf16_t* a, const std::uint8_t* codes, const std::uint8_t* scales,
                                           int K, bool& sub) {
    return dotTrackedBody(a, codes, scales, K, sub);
}
#endif

float dotTracked(const bf16_t* a, const std::uint8_t* codes, const std::uint8_t* scales, int K, bool& sub) {
#if defined(__x86_64__) && defined(__GNUC__)
    static const bool fma = __builtin_cpu_supports("fma");
    if (fma) return dotTrackedFma(a, codes, scales, K, sub);
#endif
    return dotTrackedBody(a, codes, scales, K, sub);
}

// Runs body(begin, end, sub) over [0, n) in contiguous chunks, on up to one thread per core when
// the work (n items of `macsPerItem` multiply-adds) pays for them; each output element is its own
// computation, so the bits do not depend on the split. ORs every chunk's subnormal flag into sub.
template <class Body>
void forChunks(std::size_t n, std::size_t macsPerItem, bool& sub, const Body& body) {
    constexpr std::size_t kMacsPerThread = std::size_t(1) << 20;  // ~1 ms of work
    const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
    const std::size_t threads = std::min({cores, n, std::max<std::size_t>(1, n * macsPerItem / kMacsPerThread)});
    if (threads <= 1) {
        body(std::size_t(0), n, sub);
        return;
    }
    std::vector<char> subs(threads, 0);
    {
        auto chunk = [&](std::size_t t) {
            bool s = false;
            body(n * t / threads, n * (t + 1) / threads, s);
            subs[t] = s;
        };
        std::vector<std::jthread> pool;
        pool.reserve(threads - 1);
        for (std::size_t t = 1; t < threads; ++t) {
            try {
                pool.emplace_back(chunk, t);
            } catch (const std::system_error&) {
                chunk(t);  // no thread to be had (a process or memory limit): this one does it
            }
        }
        chunk(0);
    }  // joins
    for (char c : subs) sub |= c != 0;
}

// §5.5 for one (gate, up) pair of BF16 values.
bf16_t swiglu(const ChainShape& s, bf16_t gateBits, bf16_t upBits, std::span<const bf16_t> silu, bool& sub) {
    const float L = s.swigluLimit, beta = s.swigluUpBias;
    const float gate = f32FromBf16(gateBits), up = f32FromBf16(upBits);
    const float g = gate > L ? L : gate;
    const float u = up > L ? L : (up < -L ? -L : up);
    const bf16_t sBits = silu[bf16FromF32(g)];  // exact: g is a BF16 value or L (validated BF16)
    const bf16_t t = beta == 0.0f ? bf16FromF32(u) : bf16FromF32(u + beta);
    const float prod = f32FromBf16(sBits) * f32FromBf16(t);
    sub |= isSubnormalBf16(gateBits) || isSubnormalBf16(upBits) || isSubnormalBf16(sBits) || isSubnormalBf16(t) ||
           isSubnormal(prod);
    return bf16FromF32(prod);
}

int gateColumn(const ChainShape& s, int i) { return s.layout == GateUpLayout::Split ? i : 2 * i; }
int upColumn(const ChainShape& s, int i) { return s.layout == GateUpLayout::Split ? s.intermediate + i : 2 * i + 1; }

void checkChainArgs(const ChainShape& s, const LocalWeights& w, const ChainInputs& in, std::span<const bf16_t> silu) {
    validateShape(s);
    const int M = s.rows, K = s.topK, H = s.hidden;
    if (in.hidden.size() != std::size_t(M) * H)
        throw std::invalid_argument("hidden has " + std::to_string(in.hidden.size()) +
                                    " values, expected rows*hidden = " + std::to_string(std::size_t(M) * H));
    if (in.topkWeights.size() != std::size_t(M) * K)
        throw std::invalid_argument("topk_weights has " + std::to_string(in.topkWeights.size()) +
                                    " values, expected rows*top_k = " + std::to_string(M * K));
    if (silu.size() != 65536) throw std::invalid_argument("SiLU table must have 65536 entries");
    const std::size_t E = s.localExperts();
    if (w.w1Blocks.size() != E * LocalWeights::w1BlocksPerExpert(s) ||
        w.w1Scales.size() != E * LocalWeights::w1ScalesPerExpert(s) ||
        w.w2Blocks.size() != E * LocalWeights::w2BlocksPerExpert(s) ||
        w.w2Scales.size() != E * LocalWeights::w2ScalesPerExpert(s))
        throw std::invalid_argument("local weights do not match the shape's E/C, 2I, H, I");
}

}  // namespace

void validateShape(const ChainShape& s) {
    auto str = [](auto v) { return std::to_string(v); };
    if (s.hidden <= 0 || s.hidden % 32) reject("hidden", str(s.hidden), "must be a positive multiple of 32");
    if (s.intermediate <= 0 || s.intermediate % 32)
        reject("intermediate", str(s.intermediate), "must be a positive multiple of 32");
    if (s.cards < 1) reject("cards", str(s.cards), "must be at least 1");
    if (s.experts < 1 || s.experts % s.cards)
        reject("experts", str(s.experts), "must be a positive multiple of cards (" + str(s.cards) + ")");
    if (s.topK < 1) reject("top_k", str(s.topK), "must be at least 1");
    if (s.rows < 1) reject("rows", str(s.rows), "must be at least 1");
    // routes (m, k) and compact rows are indexed by int / I32 (maxRoutes(), routeRow, §5.2).
    if (std::int64_t(s.rows) * s.topK > std::numeric_limits<std::int32_t>::max())
        reject("rows", str(s.rows), "times top_k (" + str(s.topK) + ") must be at most 2147483647 routes");
    if (s.card < 0 || s.card >= s.cards)
        reject("card", str(s.card), "must be in [0, cards) = [0, " + str(s.cards) + ")");
    // SILU is indexed by g's BF16 bits and g may be L itself (§5.5), so L must be a BF16 value.
    if (!std::isfinite(s.swigluLimit) || s.swigluLimit < 0 || f32FromBf16(bf16FromF32(s.swigluLimit)) != s.swigluLimit)
        reject("swiglu.limit", str(s.swigluLimit),
               "must be a finite, non-negative value exactly representable in BF16");
    if (!std::isfinite(s.swigluAlpha)) reject("swiglu.alpha", str(s.swigluAlpha), "must be finite");
    if (!std::isfinite(s.swigluUpBias)) reject("swiglu.up_bias", str(s.swigluUpBias), "must be finite");
}

LocalWeights LocalWeights::zeros(const ChainShape& s) {
    const std::size_t e = s.localExperts();
    LocalWeights w;
    w.w1Blocks.assign(e * w1BlocksPerExpert(s), 0);
    w.w1Scales.assign(e * w1ScalesPerExpert(s), 0);
    w.w2Blocks.assign(e * w2BlocksPerExpert(s), 0);
    w.w2Scales.assign(e * w2ScalesPerExpert(s), 0);
    return w;
}

namespace {

std::string idProblem(std::int64_t id, int m, int k, int experts) {
    return "topk_ids[" + std::to_string(m) + "][" + std::to_string(k) + "] = " + std::to_string(id) +
           " is not an expert id in [0, " + std::to_string(experts) + ")";
}

// Either id width (int64 is torch.topk's): an id is compared as it is, never narrowed first, so
// an int64 id beyond int32 range is outside [0, E) like any other bad id (§5.1).
template <class Id>
CompactRoutes compactRoutesOf(const ChainShape& s, std::span<const Id> topkIds) {
    const int M = s.rows, K = s.topK, perCard = s.localExperts(), first = s.firstLocalExpert();
    if (topkIds.size() != std::size_t(M) * K)
        throw std::invalid_argument("topk_ids has " + std::to_string(topkIds.size()) +
                                    " entries, expected rows*top_k = " + std::to_string(M * K));
    std::vector<CompactRoutes::Row> pairs;
    for (int m = 0; m < M; ++m)
        for (int k = 0; k < K; ++k) {
            const std::int64_t id = topkIds[std::size_t(m) * K + k];
            if (id < 0 || id >= s.experts) throw std::invalid_argument(idProblem(id, m, k, s.experts));
            if (id >= first && id < first + perCard) pairs.push_back({std::int32_t(id - first), m});
        }
    std::sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) {
        return a.localExpert != b.localExpert ? a.localExpert < b.localExpert : a.tokenRow < b.tokenRow;
    });
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());

    CompactRoutes cr;
    cr.rows = std::move(pairs);
    cr.routeRow.assign(std::size_t(M) * K, -1);
    for (int m = 0; m < M; ++m)
        for (int k = 0; k < K; ++k) {
            const std::int64_t id = topkIds[std::size_t(m) * K + k];
            if (id < first || id >= first + perCard) continue;
            const CompactRoutes::Row key{std::int32_t(id - first), m};
            const auto it = std::lower_bound(cr.rows.begin(), cr.rows.end(), key, [](const auto& a, const auto& b) {
                return a.localExpert != b.localExpert ? a.localExpert < b.localExpert : a.tokenRow < b.tokenRow;
            });
            cr.routeRow[std::size_t(m) * K + k] = static_cast<std::int32_t>(it - cr.rows.begin());
        }
    return cr;
}

template <class Id>
InvalidIds invalidIdsOf(const ChainShape& s, std::span<const Id> topkIds) {
    InvalidIds r;
    for (std::size_t i = 0; i < topkIds.size(); ++i) {
        const std::int64_t id = topkIds[i];
        if (id >= 0 && id < s.experts) continue;
        if (r.count == 0) r.firstRoute = int(i);
        ++r.count;
    }
    return r;
}

}  // namespace

CompactRoutes compactRoutes(const ChainShape& s, std::span<const std::int32_t> topkIds) {
    return compactRoutesOf(s, topkIds);
}
CompactRoutes compactRoutes(const ChainShape& s, std::span<const std::int64_t> topkIds) {
    return compactRoutesOf(s, topkIds);
}

InvalidIds invalidIds(const ChainShape& s, std::span<const std::int32_t> topkIds) { return invalidIdsOf(s, topkIds); }
InvalidIds invalidIds(const ChainShape& s, std::span<const std::int64_t> topkIds) { return invalidIdsOf(s, topkIds); }

std::vector<std::int32_t> narrowIds(const ChainShape& s, std::span<const std::int64_t> topkIds) {
    std::vector<std::int32_t> out(topkIds.size());
    const std::size_t K = std::size_t(s.topK);
    for (std::size_t i = 0; i < topkIds.size(); ++i) {
        const std::int64_t id = topkIds[i];
        if (id < 0 || id >= s.experts) throw std::invalid_argument(idProblem(id, int(i / K), int(i % K), s.experts));
        out[i] = std::int32_t(id);
    }
    return out;
}

ChainOutputs runChain(const ChainShape& s, const LocalWeights& w, const ChainInputs& in, std::span<const bf16_t> silu) {
    checkChainArgs(s, w, in, silu);
    const int M = s.rows, K = s.topK, H = s.hidden, I = s.intermediate;
    ChainOutputs o;
    o.routes = compactRoutes(s, in.topkIds);
    const std::size_t R = o.routes.rows.size();
    bool sub = false;

    // GEMM1 reads the remapped row A[r] = x[m(r)] (§5.3) in place: the copy is exact.
    o.gateUp.resize(R * 2 * I);
    forChunks(R * 2 * I, H, sub, [&](std::size_t begin, std::size_t end, bool& chunkSub) {
        for (std::size_t q = begin; q < end; ++q) {
            const std::size_t r = q / (2 * I), n = q % (2 * I);
            const auto [le, m] = o.routes.rows[r];
            const std::size_t row = std::size_t(le) * 2 * I + n;
            const float d = dotTracked(in.hidden.data() + std::size_t(m) * H, w.w1Blocks.data() + row * (H / 2),
                                       w.w1Scales.data() + row * (H / 32), H, chunkSub);
            o.gateUp[q] = bf16FromF32(d);
        }
    });

    o.act.resize(R * I);
    for (std::size_t r = 0; r < R; ++r)
        for (int i = 0; i < I; ++i)
            o.act[r * I + i] =
                swiglu(s, o.gateUp[r * 2 * I + gateColumn(s, i)], o.gateUp[r * 2 * I + upColumn(s, i)], silu, sub);

    o.y.resize(R * H);
    forChunks(R * H, I, sub, [&](std::size_t begin, std::size_t end, bool& chunkSub) {
        for (std::size_t q = begin; q < end; ++q) {
            const std::size_t r = q / H, h = q % H;
            const std::size_t row = std::size_t(o.routes.rows[r].localExpert) * H + h;
            const float d = dotTracked(o.act.data() + r * I, w.w2Blocks.data() + row * (I / 2),
                                       w.w2Scales.data() + row * (I / 32), I, chunkSub);
            o.y[q] = bf16FromF32(d);
        }
    });

    o.out.resize(std::size_t(M) * H);
    for (int m = 0; m < M; ++m)
        for (int h = 0; h < H; ++h) {
            float acc = 0.0f;
            for (int k = 0; k < K; ++k) {
                const std::int32_t r = o.routes.routeRow[std::size_t(m) * K + k];
                if (r < 0) continue;
                const float weight = in.topkWeights[std::size_t(m) * K + k],
                            y = f32FromBf16(o.y[std::size_t(r) * H + h]);
                acc = std::fma(weight, y, acc);
                sub |= isSubnormal(weight) || isSubnormal(y) || isSubnormal(acc);
            }
            o.out[std::size_t(m) * H + h] = bf16FromF32(acc);
        }
    o.metSubnormal = sub;
    return o;
}

std::vector<bf16_t> runChainM1(const ChainShape& s, const LocalWeights& w, const ChainInputs& in,
                               std::span<const bf16_t> silu) {
    checkChainArgs(s, w, in, silu);
    const int M = s.rows, K = s.topK, H = s.hidden, I = s.intermediate;
    const int first = s.firstLocalExpert(), perCard = s.localExperts();
    bool sub = false;
    // y of every local route, in route order (m, k): duplicates are simply computed twice.
    std::vector<bf16_t> yRoute(std::size_t(M) * K * H), gateUp(2 * std::size_t(I)), act(I);
    std::vector<bool> local(std::size_t(M) * K, false);
    for (int m = 0; m < M; ++m)
        for (int k = 0; k < K; ++k) {
            const std::int32_t id = in.topkIds[std::size_t(m) * K + k];
            if (id < 0 || id >= s.experts) throw std::invalid_argument(idProblem(id, m, k, s.experts));
            if (id < first || id >= first + perCard) continue;
            local[std::size_t(m) * K + k] = true;
            const std::size_t le = std::size_t(id - first);
            const bf16_t* x = in.hidden.data() + std::size_t(m) * H;
            forChunks(2 * std::size_t(I), H, sub, [&](std::size_t begin, std::size_t end, bool& chunkSub) {
                for (std::size_t n = begin; n < end; ++n) {
                    const std::size_t row = le * 2 * I + n;
                    gateUp[n] = bf16FromF32(dotTracked(x, w.w1Blocks.data() + row * (H / 2),
                                                       w.w1Scales.data() + row * (H / 32), H, chunkSub));
                }
            });
            for (int i = 0; i < I; ++i) act[i] = swiglu(s, gateUp[gateColumn(s, i)], gateUp[upColumn(s, i)], silu, sub);
            forChunks(std::size_t(H), I, sub, [&](std::size_t begin, std::size_t end, bool& chunkSub) {
                for (std::size_t h = begin; h < end; ++h) {
                    const std::size_t row = le * H + h;
                    yRoute[(std::size_t(m) * K + k) * H + h] =
                        bf16FromF32(dotTracked(act.data(), w.w2Blocks.data() + row * (I / 2),
                                               w.w2Scales.data() + row * (I / 32), I, chunkSub));
                }
            });
        }
    std::vector<bf16_t> out(std::size_t(M) * H);
    for (int m = 0; m < M; ++m)
        for (int h = 0; h < H; ++h) {
            float acc = 0.0f;
            for (int k = 0; k < K; ++k)
                if (local[std::size_t(m) * K + k])
                    acc = std::fma(in.topkWeights[std::size_t(m) * K + k],
                                   f32FromBf16(yRoute[(std::size_t(m) * K + k) * H + h]), acc);
            out[std::size_t(m) * H + h] = bf16FromF32(acc);
        }
    return out;
}

}  // namespace zp::oracle
