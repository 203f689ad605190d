#include "zp/scheduler/chain_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

// Tile sizes and buffer layouts shared with the kernels (kernels_cl/abi, the one kernel header
// host code includes).
#include "zp_abi.h"

namespace zp::sched {

static_assert(KernelTuning{}.colsPerWorkGroup == ZP_GEMM_COLS_PER_WG &&
                  KernelTuning{}.colsPerItem == ZP_GEMM_COLS_PER_ITEM &&
                  KernelTuning{}.rowsPerPass == ZP_GEMM_ROWS_PER_PASS && KernelTuning{}.e2m1Decode == ZP_E2M1_DECODE &&
                  KernelTuning{}.gemmTile == ZP_GEMM_TILE && KernelTuning{}.streamSplit == ZP_STREAM_SPLIT &&
                  KernelTuning{}.streamChunk == ZP_STREAM_CHUNK,
              "KernelTuning's defaults must be the packaged kernels' (kernels_cl/abi/zp_abi.h)");

namespace {

using kernels::Format;

constexpr std::uint32_t kNvidiaVendorId = 0x10de;

// The UUID zecl devices report in nativeKernelSupported (driver/src/driver.cpp): their
// ZE_MODULE_FORMAT_NATIVE is the source bundle.
constexpr char kZeclBundleUuid[16] = {'z', 'e', 'c', 'l', '-', 's', 'r', 'c', '-', 'b', 'u', 'n', 'd', 'l', 'e', '1'};

std::string ipText(std::uint32_t ip) {
    return std::to_string(ip >> 22) + "." + std::to_string((ip >> 14) & 0xFF) + "." + std::to_string(ip & 0x3FFF);
}

std::uint32_t ceilDiv(std::uint32_t a, std::uint32_t b) { return (a + b - 1) / b; }

std::string hex(std::uint32_t v) {
    char b[16];
    std::snprintf(b, sizeof b, "0x%04x", v);
    return b;
}

// The native binaries of this device: by IP version when the driver reports one (exact, else
// the same major.minor), else by PCI device id. Only counts when every kernel file has one.
struct NativeMatch {
    const kernels::Artifact* artifact = nullptr;
    std::string how;  // "IP 20.1.4", "device id 0xe20b"
};
NativeMatch nativeFor(const ze::DeviceInfo& device, const kernels::Package& package) {
    if (!device.isIntel()) return {};
    NativeMatch m;
    for (const auto& file : package.kernelFiles()) {
        const auto* a = device.ipVersion ? package.findNative(file, *device.ipVersion)
                                         : package.findNativeByDeviceId(file, device.props.deviceId);
        if (!a) return {};
        if (!m.artifact) m.artifact = a;
    }
    if (!m.artifact) return {};
    m.how = device.ipVersion ? "IP " + ipText(*device.ipVersion) : "device id " + hex(device.props.deviceId);
    return m;
}

std::string packageTargets(const kernels::Package& package) {
    std::string t;
    for (const auto& n : package.nativeTargets()) t += (t.empty() ? "" : ", ") + n;
    return t.empty() ? std::string("none") : t;
}

struct TuningKey {
    const char* name;
    int KernelTuning::*field;
    const char* macro;  // nullptr: not a build option of its own (b_cols_*: see forKernelFile)
    bool whenSet;       // described (and a -D) only where it differs from the packaged kernels' (kernel B's keys
                        // and the stream tile's, so that the other tiles read as before in card JSON)
};
constexpr TuningKey kTuningKeys[] = {
    {"cols_per_wg", &KernelTuning::colsPerWorkGroup, "ZP_GEMM_COLS_PER_WG", false},
    {"cols_per_item", &KernelTuning::colsPerItem, "ZP_GEMM_COLS_PER_ITEM", false},
    {"rows_per_pass", &KernelTuning::rowsPerPass, "ZP_GEMM_ROWS_PER_PASS", false},
    {"e2m1_decode", &KernelTuning::e2m1Decode, "ZP_E2M1_DECODE", false},
    {"gemm_tile", &KernelTuning::gemmTile, "ZP_GEMM_TILE", false},
    {"stream_split", &KernelTuning::streamSplit, "ZP_STREAM_SPLIT", true},
    {"stream_chunk", &KernelTuning::streamChunk, "ZP_STREAM_CHUNK", true},
    {"ablation", &KernelTuning::ablation, "ZP_STREAM_ABLATION", true},
    {"b_cols_per_wg", &KernelTuning::bColsPerWorkGroup, nullptr, true},
    {"b_cols_per_item", &KernelTuning::bColsPerItem, nullptr, true},
    {"max_registers", &KernelTuning::maxRegisters, nullptr, true},
};
constexpr const char* kTuningKeyList =
    "cols_per_wg, cols_per_item, rows_per_pass, e2m1_decode, gemm_tile, stream_split, stream_chunk, ablation, "
    "b_cols_per_wg, b_cols_per_item, max_registers";

}  // namespace

// ----------------------------------------------------------------------------- tuning

KernelTuning KernelTuning::parse(std::string_view text, Ablation ablation) {
    KernelTuning t;
    if (text == "packaged") return t;
    while (!text.empty()) {
        const std::size_t comma = text.find(',');
        const std::string_view item = text.substr(0, comma);
        text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
        if (item.empty()) continue;
        const std::size_t eq = item.find('=');
        const std::string key(item.substr(0, eq));
        const std::string value(eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1));
        const auto* k = std::find_if(std::begin(kTuningKeys), std::end(kTuningKeys),
                                     [&](const TuningKey& tk) { return key == tk.name; });
        if (k == std::end(kTuningKeys))
            throw std::invalid_argument("kernel tuning: unknown key '" + key + "' (valid: " + kTuningKeyList + ")");
        std::size_t used = 0;
        int v = 0;
        try {
            v = std::stoi(value, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || used != value.size())
            throw std::invalid_argument("kernel tuning: " + key + " = '" + value + "' is not an integer");
        t.*(k->field) = v;
    }
    auto bad = [&](const std::string& why) {
        throw std::invalid_argument("kernel tuning " + t.describe() + ": " + why);
    };
    if (t.colsPerItem < 2 || t.colsPerItem % 2) bad("cols_per_item must be even and at least 2");
    if (t.colsPerWorkGroup < 1 || t.colsPerWorkGroup % t.colsPerItem) bad("cols_per_item must divide cols_per_wg");
    if (t.rowsPerPass < 1) bad("rows_per_pass must be at least 1");
    if (t.gemmTile < 0 || t.gemmTile > 2) bad("gemm_tile must be 0 (lanes), 1 (blocks) or 2 (stream)");
    if (t.e2m1Decode < 0 || t.e2m1Decode > 5) bad("e2m1_decode must be 0 to 5");
    if (t.e2m1Decode >= 2 && t.gemmTile != 2)
        bad("e2m1_decode " + std::to_string(t.e2m1Decode) +
            " (local table, multiply, byte table, hybrid) needs gemm_tile=2");
    if (t.streamSplit < 1 || t.streamSplit > 16 || 16 % t.streamSplit)
        bad("stream_split must divide 16 (1, 2, 4, 8 or 16)");
    if (t.streamChunk < 16 || t.streamChunk > 1024 || t.streamChunk % 16)
        bad("stream_chunk must be a multiple of 16 blocks from 16 to 1024");
    if (t.ablation < 0 || t.ablation > 3) bad("ablation must be 0 (none) to 3 (loads only)");
    if (t.ablation && ablation == Ablation::refused)
        bad("ablation is for zp-chain-bench --ablation only (it removes work, so the results are wrong)");
    if (t.ablation && t.gemmTile != 2) bad("ablation needs gemm_tile=2");
    if (t.bColsPerWorkGroup < 0 || t.bColsPerItem < 0) bad("b_cols_per_wg and b_cols_per_item must be >= 0");
    if (t.maxRegisters != 0 && (t.maxRegisters < 16 || t.maxRegisters > 255))
        bad("max_registers must be 0 (the compiler's choice) or 16 to 255");
    const KernelTuning b = t.forKernelFile("two_launch_b");
    if (b.colsPerItem < 2 || b.colsPerItem % 2) bad("B's cols_per_item (b_cols_per_item) must be even and at least 2");
    if (b.colsPerWorkGroup % b.colsPerItem)
        bad("B's cols_per_item (" + std::to_string(b.colsPerItem) + ") must divide B's cols_per_wg (" +
            std::to_string(b.colsPerWorkGroup) + ")");
    // The stream tile: a work-item walks stream_split * cols_per_item / 16 whole columns.
    for (const auto& [who, tile] : {std::pair{"", t}, std::pair{"B's ", b}})
        if (t.gemmTile == 2 && (tile.streamSplit * tile.colsPerItem) % 16)
            bad("gemm_tile=2 needs stream_split * " + std::string(who) + "cols_per_item (" +
                std::to_string(tile.streamSplit) + " * " + std::to_string(tile.colsPerItem) +
                ") to be a multiple of 16");
    return t;
}

KernelTuning KernelTuning::recommendedFor(const ze::DeviceInfo& device) {
    // docs/perf.md "The stream tile": on the H200 the stream tile (16 work-items of one lane per
    // column, 4 columns each, the byte-offset table decode) beats the block tile on 17 of the 20
    // (variant, pattern) cells of the sweep.
    if (device.isZecl() && device.isGpu() && device.props.vendorId == kNvidiaVendorId)
        return parse(
            "gemm_tile=2,cols_per_wg=64,cols_per_item=4,rows_per_pass=1,stream_split=16,stream_chunk=128,e2m1_decode="
            "4");
    return {};
}

std::string KernelTuning::describe() const {
    // Kernel B's keys only where they differ from the packaged kernels', so that the tiles of
    // the GEMMs read as before (card JSON kernel_tuning).
    const KernelTuning packaged;
    std::string s;
    for (const auto& k : kTuningKeys)
        if (!k.whenSet || this->*(k.field) != packaged.*(k.field))
            s += (s.empty() ? "" : ",") + std::string(k.name) + "=" + std::to_string(this->*(k.field));
    return s;
}

std::string KernelTuning::buildOptions() const {
    std::string s;
    const KernelTuning packaged;
    for (const auto& k : kTuningKeys)
        if (k.macro && (!k.whenSet || this->*(k.field) != packaged.*(k.field)))
            s += (s.empty() ? "-D" : " -D") + std::string(k.macro) + "=" + std::to_string(this->*(k.field));
    return s;
}

// ----------------------------------------------------------------------------- id width

std::string_view idWidthName(IdWidth width) noexcept { return width == IdWidth::Int64 ? "int64" : "int32"; }

IdWidth parseIdWidth(std::string_view text) {
    if (text == "int32" || text == "i32") return IdWidth::Int32;
    if (text == "int64" || text == "i64") return IdWidth::Int64;
    throw std::invalid_argument("topk_ids width '" + std::string(text) + "' (valid: int32, int64)");
}

std::string kernelFileFor(std::string_view file, IdWidth width) {
    // The files with a `zp_topk_id_t` topk_ids argument (spirv/CMakeLists.txt builds those twice).
    static constexpr std::string_view kRouteReaders[] = {"route_compact", "two_launch_a", "two_launch_b", "one_launch",
                                                         "m1_oracle_mxfp4"};
    const bool reads = std::find(std::begin(kRouteReaders), std::end(kRouteReaders), file) != std::end(kRouteReaders);
    return std::string(file) + (reads && width == IdWidth::Int64 ? "_i64" : "");
}

KernelTuning KernelTuning::forKernelFile(std::string_view kernelFile) const {
    KernelTuning t = *this;
    if (kernelFile == "two_launch_b" || kernelFile == "two_launch_b_i64") {
        if (bColsPerWorkGroup) t.colsPerWorkGroup = bColsPerWorkGroup;
        if (bColsPerItem) t.colsPerItem = bColsPerItem;
    }
    t.bColsPerWorkGroup = t.bColsPerItem = 0;
    return t;
}

// ----------------------------------------------------------------------------- modules

ModuleChoice chooseModules(const ze::DeviceInfo& device, const kernels::Package& package) {
    if (const auto native = nativeFor(device, package); native.artifact)
        return {Format::Native, native.artifact->target,
                "native " + native.artifact->target + " binary for " + native.how};
    // Why no native binary, for the card: an Intel device the package has no binary for.
    std::string noNative;
    if (device.isIntel())
        noNative = ", no native binary for " +
                   (device.ipVersion ? "IP " + ipText(*device.ipVersion) : "device id " + hex(device.props.deviceId)) +
                   " (package has: " + packageTargets(package) + ")";
    if (device.supportsSpirv()) return {Format::Spirv, "spirv64", "SPIR-V (device takes SPIR-V" + noNative + ")"};
    if (std::memcmp(device.module.nativeKernelSupported.id, kZeclBundleUuid, sizeof kZeclBundleUuid) == 0)
        return {Format::Bundle, "zecl", "zecl source bundle (built by the OpenCL driver at module creation)"};
    std::string offers = device.ipVersion ? "IP " + ipText(*device.ipVersion) : "no IP version";
    throw UnsupportedDevice("device '" + device.name() + "' (" + ze::driverKindName(device.kind) +
                            " driver) cannot run the kernel package: no native binary for " + offers +
                            " (package has: " + packageTargets(package) +
                            "), no SPIR-V support, and its native kernel format is not zecl's source bundle");
}

KernelModules::KernelModules(const ze::Context& context, const ze::DeviceInfo& device, const kernels::Package& package,
                             KernelTuning tuning)
    : context_(&context),
      device_(device),
      package_(&package),
      choice_(chooseModules(device, package)),
      tuning_(tuning) {
    if (!tuning_.isPackaged() && choice_.format != Format::Bundle)
        throw UnsupportedDevice("kernel tuning " + tuning_.describe() + " needs the zecl source bundle, but device '" +
                                device.name() + "' gets " + choice_.why + ", built with the packaged defaults (" +
                                KernelTuning{}.describe() + ")");
    if (tuning_.maxRegisters && !(device.isZecl() && device.isGpu() && device.props.vendorId == kNvidiaVendorId))
        throw UnsupportedDevice("kernel tuning max_registers=" + std::to_string(tuning_.maxRegisters) +
                                " is NVIDIA's OpenCL compiler option -cl-nv-maxrregcount; device '" + device.name() +
                                "' is not an NVIDIA GPU under zecl");
}

const ze::Module& KernelModules::module(const std::string& kernelFile) {
    if (auto it = modules_.find(kernelFile); it != modules_.end()) return it->second;
    const kernels::Artifact* a =
        choice_.format != Format::Native ? package_->find(kernelFile, choice_.format, choice_.target)
        : device_.ipVersion              ? package_->findNative(kernelFile, *device_.ipVersion)
                                         : package_->findNativeByDeviceId(kernelFile, device_.props.deviceId);
    if (!a)
        throw UnsupportedDevice("kernel package (" + package_->origin() + ") has no " +
                                std::string(kernels::formatName(choice_.format)) + " artifact of '" + kernelFile + "'");
    const ze_module_format_t format =
        choice_.format == Format::Spirv ? ZE_MODULE_FORMAT_IL_SPIRV : ZE_MODULE_FORMAT_NATIVE;
    // SPIR-V and native binaries need no build flags; a bundle gets the tile options only when
    // they differ from the packaged ones (zecl appends them to the bundle's own options).
    // Never -cl-mad-enable / -cl-fast-relaxed-math (CONTRACT §2).
    const KernelTuning tiles = tuning_.forKernelFile(kernelFile);
    std::string flags = tiles.isPackaged() ? std::string() : tiles.buildOptions();
    if (tiles.maxRegisters) flags += " -cl-nv-maxrregcount=" + std::to_string(tiles.maxRegisters);
    return modules_.emplace(kernelFile, ze::Module::create(*context_, device_, format, a->bytes, flags)).first->second;
}

ze::Kernel KernelModules::kernel(const std::string& kernelFile, const std::string& name) {
    return ze::Kernel(module(kernelFile), name);
}

// ----------------------------------------------------------------------------- weights

DeviceWeights::DeviceWeights(const ze::Context& context, const ze::DeviceInfo& device, const oracle::ChainShape& shape)
    : shape_(shape), copies_(context, device) {
    oracle::validateShape(shape);
    const std::size_t e = shape.localExperts();
    w1Blocks_ = ze::DeviceBuffer<std::uint8_t>(context, device, e * oracle::LocalWeights::w1BlocksPerExpert(shape));
    w1Scales_ = ze::DeviceBuffer<std::uint8_t>(context, device, e * oracle::LocalWeights::w1ScalesPerExpert(shape));
    w2Blocks_ = ze::DeviceBuffer<std::uint8_t>(context, device, e * oracle::LocalWeights::w2BlocksPerExpert(shape));
    w2Scales_ = ze::DeviceBuffer<std::uint8_t>(context, device, e * oracle::LocalWeights::w2ScalesPerExpert(shape));
}

void DeviceWeights::upload(const oracle::LocalWeights& w, std::span<const int> localExperts) {
    const int e = shape_.localExperts();
    if (w.w1Blocks.size() != w1Blocks_.size() || w.w1Scales.size() != w1Scales_.size() ||
        w.w2Blocks.size() != w2Blocks_.size() || w.w2Scales.size() != w2Scales_.size())
        throw std::invalid_argument("DeviceWeights::upload: the weights do not match the shape's E/C, 2I, H, I");
    std::vector<int> all;
    if (localExperts.empty()) {
        all.resize(e);
        for (int i = 0; i < e; ++i) all[i] = i;
        localExperts = all;
    }
    auto copy = [&](ze::DeviceBuffer<std::uint8_t>& dst, const std::vector<std::uint8_t>& src, std::size_t perExpert,
                    int le) {
        dst.upload(copies_, std::span<const std::uint8_t>(src).subspan(perExpert * le, perExpert), perExpert * le);
    };
    for (int le : localExperts) {
        if (le < 0 || le >= e)
            throw std::invalid_argument("DeviceWeights::upload: local expert " + std::to_string(le) +
                                        " is not in [0, " + std::to_string(e) + ")");
        copy(w1Blocks_, w.w1Blocks, oracle::LocalWeights::w1BlocksPerExpert(shape_), le);
        copy(w1Scales_, w.w1Scales, oracle::LocalWeights::w1ScalesPerExpert(shape_), le);
        copy(w2Blocks_, w.w2Blocks, oracle::LocalWeights::w2BlocksPerExpert(shape_), le);
        copy(w2Scales_, w.w2Scales, oracle::LocalWeights::w2ScalesPerExpert(shape_), le);
    }
}

// ----------------------------------------------------------------------------- the plan

ChainPlan planChain(probe::Variant variant, const oracle::ChainShape& s, const ChainBuffers& b, const KernelTuning& t,
                    IdWidth ids) {
    oracle::validateShape(s);
    const std::uint32_t H = s.hidden, I = s.intermediate, M = s.rows, K = s.topK;
    const std::uint32_t routes = M * K;
    // Expert groups: at most one per route and one per local expert.
    const std::uint32_t groupSlots = std::min<std::uint32_t>(routes, s.localExperts());
    const std::int32_t layout = s.layout == oracle::GateUpLayout::Interleaved ? 1 : 0;
    const std::uint32_t cols = t.colsPerWorkGroup, pairs = cols / 2;
    const ze::GroupSize gemm{ZP_LANES, cols / std::uint32_t(t.colsPerItem), 1};
    const ze::GroupSize elem{ZP_ELEMWISE_WG, 1, 1};
    const std::int32_t h = s.hidden, i = s.intermediate, k = s.topK, m = s.rows;
    const std::int32_t e = s.experts, c = s.cards, card = s.card;
    const float L = s.swigluLimit, beta = s.swigluUpBias;

    ChainPlan p;
    p.idWidth = ids;
    auto add = [&](std::string file, std::string kernel, ze::GroupSize g, ze::GroupCount n,
                   std::vector<KernelArg> args) {
        p.launches.push_back({kernelFileFor(file, ids), std::move(kernel), g, n, std::move(args)});
    };
    auto routeCompact = [&] {
        add("route_compact", "route_compact", {ZP_ROUTE_COMPACT_WG, 1, 1}, {1, 1, 1},
            {b.topkIds, m, k, e, c, card, ze::LocalMem{sizeof(std::int32_t) * ZP_ROUTE_SCRATCH_INTS(routes)},
             b.routeInfo, b.compactRows, b.routeRow, b.groups});
    };
    auto remap = [&] {
        add("remap_rows_bf16", "remap_rows_bf16", elem, {ceilDiv(H / 8, ZP_ELEMWISE_WG), routes, 1},
            {b.hidden, b.routeInfo, b.compactRows, b.a, h});
    };
    auto swiglu = [&] {
        add("swiglu_bf16", "swiglu_bf16", elem, {ceilDiv(I, ZP_ELEMWISE_WG), routes, 1},
            {b.gateUp, b.silu, b.routeInfo, b.act, i, L, beta, layout});
    };
    const ze::GroupCount gemm1Grid{ceilDiv(2 * I, cols), groupSlots, 1};
    const ze::GroupCount pairedGrid{ceilDiv(I, pairs), groupSlots, 1};
    const ze::GroupCount gemm2Grid{ceilDiv(H, cols), groupSlots, 1};
    auto gemm1 = [&] {
        add("gemm1_mxfp4_m2", "gemm1_mxfp4_m2", gemm, gemm1Grid,
            {b.a, b.w1Blocks, b.w1Scales, b.routeInfo, b.groups, b.gateUp, h, i});
    };
    auto gemm2 = [&] {
        add("gemm2_mxfp4_m2", "gemm2_mxfp4_m2", gemm, gemm2Grid,
            {b.act, b.w2Blocks, b.w2Scales, b.routeInfo, b.groups, b.y, h, i});
    };
    auto gather = [&] {
        add("gather_bf16", "gather_bf16", elem, {ceilDiv(H, ZP_ELEMWISE_WG), M, 1},
            {b.y, b.routeRow, b.topkWeights, b.out, k, h});
    };

    switch (variant) {
        case probe::Variant::Baseline: routeCompact(), remap(), gemm1(), swiglu(), gemm2(), gather(); break;
        case probe::Variant::Gemm2LoaderFused:
            routeCompact(), remap(), gemm1();
            add("gemm2_mxfp4_m2_loader_fused", "gemm2_mxfp4_m2_loader_fused", gemm, gemm2Grid,
                {b.gateUp, b.silu, b.w2Blocks, b.w2Scales, b.routeInfo, b.groups, b.y, h, i, L, beta, layout,
                 ze::LocalMem{sizeof(std::uint16_t) * std::size_t(t.rowsPerPass) * I}});
            gather();
            break;
        case probe::Variant::SourceDirect:
            routeCompact();
            add("gemm1_mxfp4_m2_source_direct", "gemm1_mxfp4_m2_source_direct", gemm, gemm1Grid,
                {b.hidden, b.w1Blocks, b.w1Scales, b.routeInfo, b.groups, b.compactRows, b.gateUp, h, i});
            swiglu(), gemm2(), gather();
            break;
        case probe::Variant::PairedEpilogue:
            routeCompact(), remap();
            add("gemm1_mxfp4_m2_paired", "gemm1_mxfp4_m2_paired", gemm, pairedGrid,
                {b.a, b.w1Blocks, b.w1Scales, b.routeInfo, b.groups, b.silu, b.act, h, i, L, beta, layout});
            gemm2(), gather();
            break;
        case probe::Variant::PairedDirect:
            routeCompact();
            add("gemm1_mxfp4_m2_paired_direct", "gemm1_mxfp4_m2_paired_direct", gemm, pairedGrid,
                {b.hidden, b.w1Blocks, b.w1Scales, b.routeInfo, b.groups, b.compactRows, b.silu, b.act, h, i, L, beta,
                 layout});
            gemm2(), gather();
            break;
        case probe::Variant::TwoLaunch: {
            // kernels_cl/common/zp_two_launch.h: every work-group derives the routes itself.
            const ze::LocalMem routeTable{sizeof(std::int32_t) * ZP_ROUTE_SCRATCH_INTS(routes)};
            add("two_launch_a", "two_launch_a", gemm, pairedGrid,
                {b.topkIds,     b.hidden,   b.w1Blocks, b.w1Scales, b.silu, b.act,  b.routeInfo,
                 b.compactRows, b.routeRow, b.groups,   m,          k,      e,      c,
                 card,          h,          i,          L,          beta,   layout, routeTable});
            // B: its own column tile (KernelTuning::forKernelFile); a work-group per (column tile,
            // expert group), the tile's last one writing out.
            const KernelTuning tb = t.forKernelFile("two_launch_b");
            const std::uint32_t colsB = tb.colsPerWorkGroup;
            add("two_launch_b", "two_launch_b", {ZP_LANES, colsB / std::uint32_t(tb.colsPerItem), 1},
                {ceilDiv(H, colsB), groupSlots, 1},
                {b.topkIds, b.topkWeights, b.act, b.w2Blocks, b.w2Scales, b.y, b.tileDone, b.out, m, k, e, c, card, h,
                 i, routeTable});
            break;
        }
        case probe::Variant::OneLaunch: {
            // kernels_cl/one_launch.cl: two_launch's A and B in one cooperative kernel. The grid
            // asked for is the wider of A's (pair tile, expert group) units and B's (column tile,
            // expert group) units; DeviceChain caps it at the suggested cooperative count.
            const ze::LocalMem routeTable{sizeof(std::int32_t) * ZP_ROUTE_SCRATCH_INTS(routes)};
            const std::uint32_t most = std::max(ceilDiv(I, pairs), ceilDiv(H, cols)) * groupSlots;
            add("one_launch", "one_launch", gemm, {most, 1, 1},
                {b.topkIds,
                 b.topkWeights,
                 b.hidden,
                 b.w1Blocks,
                 b.w1Scales,
                 b.silu,
                 b.act,
                 b.w2Blocks,
                 b.w2Scales,
                 b.y,
                 b.tileDone,
                 b.out,
                 b.routeInfo,
                 b.compactRows,
                 b.routeRow,
                 b.groups,
                 b.gridBarrier,
                 m,
                 k,
                 e,
                 c,
                 card,
                 h,
                 i,
                 L,
                 beta,
                 layout,
                 routeTable});
            p.launches.back().cooperative = true;
            break;
        }
        case probe::Variant::M1Oracle: {
            // One route per work-group row: y = M*K regardless of the experts (no dedup).
            const std::string f = "m1_oracle_mxfp4";
            add(f, "m1_gemm1", gemm, {ceilDiv(2 * I, cols), routes, 1},
                {b.hidden, b.topkIds, b.w1Blocks, b.w1Scales, b.gateUp, k, h, i, e, c, card});
            add(f, "m1_swiglu", elem, {ceilDiv(I, ZP_ELEMWISE_WG), routes, 1},
                {b.gateUp, b.silu, b.topkIds, b.act, i, L, beta, layout, e, c, card});
            add(f, "m1_gemm2", gemm, {ceilDiv(H, cols), routes, 1},
                {b.act, b.topkIds, b.w2Blocks, b.w2Scales, b.y, h, i, e, c, card});
            add(f, "m1_gather", elem, {ceilDiv(H, ZP_ELEMWISE_WG), M, 1},
                {b.y, b.topkIds, b.topkWeights, b.out, b.routeInfo, m, k, h, e, c, card});
            break;
        }
    }
    return p;
}

// ----------------------------------------------------------------------------- the chain

DeviceChain::DeviceChain(const ze::Context& context, const ze::DeviceInfo& device, KernelModules& modules,
                         const oracle::ChainShape& shape, probe::Variant variant, const DeviceWeights& weights,
                         std::span<const oracle::bf16_t> siluTable, IdWidth ids)
    : context_(&context), device_(device), shape_(shape), variant_(variant), copies_(context, device) {
    oracle::validateShape(shape);
    const auto& ws = weights.shape();
    if (ws.hidden != shape.hidden || ws.intermediate != shape.intermediate || ws.experts != shape.experts ||
        ws.cards != shape.cards)
        throw std::invalid_argument("DeviceChain: the device weights were made for another shape");
    if (siluTable.size() != 65536) throw std::invalid_argument("DeviceChain: the SiLU table must have 65536 entries");

    const std::size_t H = shape.hidden, I = shape.intermediate, M = shape.rows, routes = std::size_t(shape.maxRoutes());
    auto u16 = [&](std::size_t n) { return ze::DeviceBuffer<std::uint16_t>(context, device, n); };
    auto i32 = [&](std::size_t n) { return ze::DeviceBuffer<std::int32_t>(context, device, n); };
    hidden_ = u16(M * H);
    silu_ = u16(65536);
    a_ = u16(routes * H);
    gateUp_ = u16(routes * 2 * I);
    act_ = u16(routes * I);
    y_ = u16(routes * H);
    out_ = u16(M * H);
    if (ids == IdWidth::Int64)
        topkIds64_ = ze::DeviceBuffer<std::int64_t>(context, device, routes);
    else
        topkIds_ = i32(routes);
    routeInfo_ = i32(ZP_INFO_WORDS);
    compactRows_ = i32(routes * ZP_ROW_WORDS);
    routeRow_ = i32(routes);
    groups_ = i32(routes * ZP_GROUP_WORDS);
    topkWeights_ = ze::DeviceBuffer<float>(context, device, routes);
    gridBarrier_ = ze::DeviceBuffer<std::uint32_t>(context, device, 2);
    gridBarrier_.fill(copies_, 0u);  // once: the barrier leaves its state reusable
    tileDone_ = ze::DeviceBuffer<std::uint32_t>(context, device, H);
    tileDone_.fill(copies_, 0u);  // once: kernel B's tiles leave their counts at zero
    silu_.upload(copies_, siluTable);

    ChainBuffers b;
    b.hidden = hidden_.data();
    b.topkIds = ids == IdWidth::Int64 ? static_cast<const void*>(topkIds64_.data()) : topkIds_.data();
    b.topkWeights = topkWeights_.data();
    b.silu = silu_.data();
    b.w1Blocks = weights.w1Blocks().data();
    b.w1Scales = weights.w1Scales().data();
    b.w2Blocks = weights.w2Blocks().data();
    b.w2Scales = weights.w2Scales().data();
    b.routeInfo = routeInfo_.data();
    b.compactRows = compactRows_.data();
    b.routeRow = routeRow_.data();
    b.groups = groups_.data();
    b.a = a_.data();
    b.gateUp = gateUp_.data();
    b.act = act_.data();
    b.y = y_.data();
    b.out = out_.data();
    b.gridBarrier = gridBarrier_.data();
    b.tileDone = tileDone_.data();
    plan_ = planChain(variant, shape, b, modules.tuning(), ids);

    for (const auto& l : plan_.launches) {
        ze::Kernel kernel = modules.kernel(l.file, l.kernel);
        for (std::uint32_t a = 0; a < l.args.size(); ++a)
            std::visit([&](const auto& v) { kernel.setArg(a, v); }, l.args[a]);
        kernel.setGroupSize(l.group);
        ze::GroupCount grid = l.groups;
        if (l.cooperative) {
            // Asked with the group size and local arguments set: they decide what stays resident.
            std::uint32_t suggested = 0;
            try {
                suggested = kernel.suggestMaxCooperativeGroupCount();
            } catch (const ze::Error& err) {
                const ze_result_t why = err.code();
                if (why != ZE_RESULT_ERROR_UNSUPPORTED_FEATURE && why != ZE_RESULT_ERROR_UNSUPPORTED_SIZE &&
                    why != ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION)
                    throw;
                throw VariantNotValid(std::string(probe::variantName(variant)) + " is not valid on this device (" +
                                      device.name() + "): the driver promises no co-resident grid (" + err.codeName() +
                                      " from zeKernelSuggestMaxCooperativeGroupCount)");
            }
            if (suggested == 0)
                throw VariantNotValid(std::string(probe::variantName(variant)) + " is not valid on this device (" +
                                      device.name() + "): zeKernelSuggestMaxCooperativeGroupCount is 0");
            grid = {std::min(l.groups.x, suggested), 1, 1};
        }
        grids_.push_back(grid);
        kernels_.push_back(std::move(kernel));
    }
    timestampPool_ = ze::EventPool(context, device, static_cast<std::uint32_t>(plan_.launches.size()),
                                   ze::EventPoolOptions{.hostVisible = true, .kernelTimestamps = true});
    for (std::uint32_t n = 0; n < plan_.launches.size(); ++n) events_.emplace_back(timestampPool_, n);
    list_ = ze::CommandList(context, device);
    record(list_, true);
    list_.close();
}

void DeviceChain::record(ze::CommandListBase& list, bool timestamps) {
    for (std::size_t n = 0; n < kernels_.size(); ++n) {
        // Every launch reads what the previous one wrote: Level Zero orders nothing inside a
        // list without a barrier.
        if (n > 0) list.barrier();
        ze::Event* signal = timestamps ? &events_[n] : nullptr;
        if (plan_.launches[n].cooperative)
            list.launchCooperative(kernels_[n], grids_[n], signal);
        else
            list.launch(kernels_[n], grids_[n], signal);
    }
}

void DeviceChain::appendTo(ze::CommandListBase& list) { record(list, false); }

void DeviceChain::uploadInputs(const oracle::ChainInputs& in, std::size_t ids) {
    const std::size_t M = shape_.rows, H = shape_.hidden, routes = std::size_t(shape_.maxRoutes());
    if (in.hidden.size() != M * H || ids != routes || in.topkWeights.size() != routes)
        throw std::invalid_argument("DeviceChain::setInputs: expected hidden [" + std::to_string(M) + ", " +
                                    std::to_string(H) + "], topk_ids and topk_weights [" + std::to_string(M) + ", " +
                                    std::to_string(shape_.topK) + "]; got " + std::to_string(in.hidden.size()) + ", " +
                                    std::to_string(ids) + ", " + std::to_string(in.topkWeights.size()) + " values");
    hidden_.upload(copies_, std::span<const std::uint16_t>(in.hidden));
    topkWeights_.upload(copies_, std::span<const float>(in.topkWeights));
}

void DeviceChain::setInputs(const oracle::ChainInputs& in) {
    uploadInputs(in, in.topkIds.size());
    if (plan_.idWidth == IdWidth::Int64) {
        const std::vector<std::int64_t> wide(in.topkIds.begin(), in.topkIds.end());
        topkIds64_.upload(copies_, std::span<const std::int64_t>(wide));
    } else {
        topkIds_.upload(copies_, std::span<const std::int32_t>(in.topkIds));
    }
    lastIds_ = in.topkIds;
}

void DeviceChain::setInputs(const oracle::ChainInputs& in, std::span<const std::int64_t> topkIds) {
    uploadInputs(in, topkIds.size());
    // What the route reader of the Int64 kernels makes of each id (zp_topk_id).
    std::vector<std::int32_t> narrow(topkIds.size());
    for (std::size_t i = 0; i < topkIds.size(); ++i) {
        const std::int64_t id = topkIds[i];
        narrow[i] = id >= std::numeric_limits<std::int32_t>::min() && id <= std::numeric_limits<std::int32_t>::max()
                        ? std::int32_t(id)
                        : -1;
    }
    if (plan_.idWidth == IdWidth::Int64)
        topkIds64_.upload(copies_, topkIds);
    else
        topkIds_.upload(copies_, std::span<const std::int32_t>(narrow));
    lastIds_ = std::move(narrow);
}

void DeviceChain::execute(ze::CommandQueue& queue) {
    for (auto& e : events_) e.hostReset();
    queue.execute(list_);
    queue.synchronize();
}

double DeviceChain::executeBatch(ze::CommandQueue& queue, int times) {
    if (times < 1) throw std::invalid_argument("DeviceChain::executeBatch: times = " + std::to_string(times));
    if (kernels_.empty()) return 0;
    const auto clock = device_.kernelClock();
    if (times == 1) {
        execute(queue);
        return clock.durationNs(events_.front().kernelTimestamp().context.kernelStart,
                                events_.back().kernelTimestamp().context.kernelEnd);
    }
    if (batchTimes_ != times) {
        if (batchStart_.empty()) {
            batchPool_ = ze::EventPool(*context_, device_, 1,
                                       ze::EventPoolOptions{.hostVisible = true, .kernelTimestamps = true});
            batchStart_.emplace_back(batchPool_, 0);
        }
        batchList_ = ze::CommandList(*context_, device_);
        for (int t = 0; t < times; ++t)
            for (std::size_t n = 0; n < kernels_.size(); ++n) {
                if (t > 0 || n > 0) batchList_.barrier();
                ze::Event* ev = t == 0 && n == 0 ? &batchStart_.front() : t == times - 1 ? &events_[n] : nullptr;
                // The grid record() launches: a cooperative launch keeps its co-resident grid (the
                // plan's fixed grid would spin forever in the device-wide barrier).
                if (plan_.launches[n].cooperative)
                    batchList_.launchCooperative(kernels_[n], grids_[n], ev);
                else
                    batchList_.launch(kernels_[n], grids_[n], ev);
            }
        batchList_.close();
        batchTimes_ = times;
    }
    for (auto& e : events_) e.hostReset();
    batchStart_.front().hostReset();
    queue.execute(batchList_);
    queue.synchronize();
    return clock.durationNs(batchStart_.front().kernelTimestamp().context.kernelStart,
                            events_.back().kernelTimestamp().context.kernelEnd);
}

DeviceResults DeviceChain::results() {
    DeviceResults r;
    const std::size_t H = shape_.hidden, I = shape_.intermediate, routes = std::size_t(shape_.maxRoutes());
    const auto info = routeInfo_.download(copies_);
    r.invalidIds = info[ZP_INFO_INVALID];
    r.firstInvalidRoute = info[ZP_INFO_FIRST_INVALID];
    r.out = out_.download(copies_);
    if (variant_ == probe::Variant::M1Oracle) {
        r.routes = -1;
        r.routeGateUp = gateUp_.download(copies_);
        r.routeAct = act_.download(copies_);
        r.routeY = y_.download(copies_);
        // The kernels leave rows of non-local routes untouched: clear them (stale otherwise).
        const int perCard = shape_.localExperts(), first = shape_.firstLocalExpert();
        for (std::size_t q = 0; q < routes && q < lastIds_.size(); ++q) {
            const int id = lastIds_[q];
            if (id >= first && id < first + perCard && id < shape_.experts) continue;
            std::fill_n(r.routeGateUp.begin() + q * 2 * I, 2 * I, 0);
            std::fill_n(r.routeAct.begin() + q * I, I, 0);
            std::fill_n(r.routeY.begin() + q * H, H, 0);
        }
        return r;
    }
    r.routes = info[ZP_INFO_ROUTES];
    if (r.routes < 0 || std::size_t(r.routes) > routes)
        throw DeviceFault("route_compact reported R = " + std::to_string(r.routes) + " (expected 0.." +
                          std::to_string(routes) + ")");
    const std::size_t R = std::size_t(r.routes);
    std::vector<std::int32_t> rows(R * ZP_ROW_WORDS);
    compactRows_.download(copies_, std::span<std::int32_t>(rows));
    for (std::size_t q = 0; q < R; ++q) r.compactRows.push_back({rows[q * ZP_ROW_WORDS], rows[q * ZP_ROW_WORDS + 1]});
    r.routeRow = routeRow_.download(copies_);
    auto head = [&](const ze::DeviceBuffer<std::uint16_t>& buf, std::size_t cols) {
        std::vector<std::uint16_t> v(R * cols);
        buf.download(copies_, std::span<std::uint16_t>(v));
        return v;
    };
    const probe::Materialised mat = probe::materialised(variant_);
    if (mat.gateUp) r.gateUp = head(gateUp_, 2 * I);
    if (mat.act) r.act = head(act_, I);
    if (mat.y) r.y = head(y_, H);
    return r;
}

std::vector<KernelTiming> DeviceChain::kernelTimings() const {
    std::vector<KernelTiming> t;
    const auto clock = device_.kernelClock();
    for (std::size_t n = 0; n < events_.size(); ++n) {
        const auto ts = events_[n].kernelTimestamp();
        t.push_back({plan_.launches[n].kernel, clock.durationNs(ts.context.kernelStart, ts.context.kernelEnd)});
    }
    return t;
}

std::vector<KernelSpan> DeviceChain::kernelSpans() const {
    std::vector<KernelSpan> spans;
    if (events_.empty()) return spans;
    const auto clock = device_.kernelClock();
    const std::uint64_t firstTicks = events_.front().kernelTimestamp().context.kernelStart;
    // NOTE: absolute device times (~1e18 ns on some drivers) do not fit a double exactly:
    // the base stays an integer when a tick is 1 ns, and offsets from it are small.
    const std::uint64_t base =
        clock.nsPerTick == 1.0 ? (firstTicks & clock.mask) : std::uint64_t(clock.toNs(firstTicks));
    for (std::size_t n = 0; n < events_.size(); ++n) {
        const auto ts = events_[n].kernelTimestamp();
        const std::uint64_t start = base + std::uint64_t(clock.durationNs(firstTicks, ts.context.kernelStart));
        const std::uint64_t end = start + std::uint64_t(clock.durationNs(ts.context.kernelStart, ts.context.kernelEnd));
        spans.push_back({plan_.launches[n].kernel, start, end});
    }
    return spans;
}

}  // namespace zp::sched
