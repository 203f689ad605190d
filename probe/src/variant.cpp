#include "zp/probe/variant.hpp"

#include <string>

#include "zp/probe/input_error.hpp"
#include "catalogue_name.hpp"

namespace zp::probe {
namespace {
constexpr std::array<std::string_view, kAllVariants.size()> kNames = {
    "baseline",      "gemm2_loader_fused", "source_direct", "paired_epilogue",
    "paired_direct", "m1_oracle",          "two_launch",    "one_launch",
};
}  // namespace

std::string_view variantName(Variant v) { return kNames[static_cast<std::size_t>(v)]; }

Variant parseVariant(std::string_view name) { return parseCatalogueName(name, kAllVariants, variantName, "variant"); }

Materialised materialised(Variant v) {
    switch (v) {
        case Variant::Baseline:
        case Variant::SourceDirect: return {true, true, true};
        case Variant::Gemm2LoaderFused: return {true, false, true};
        case Variant::PairedEpilogue:
        case Variant::PairedDirect: return {false, true, true};
        case Variant::M1Oracle: return {false, false, false};
        case Variant::TwoLaunch:
        case Variant::OneLaunch: return {false, true, true};
    }
    return {};
}

bool cooperative(Variant v) { return v == Variant::OneLaunch; }

}  // namespace zp::probe
